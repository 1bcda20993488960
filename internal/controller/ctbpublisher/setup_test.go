package ctbpublisher

import (
	"errors"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	certificatesv1beta1 "k8s.io/api/certificates/v1beta1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// failingMapper is a REST mapper whose discovery fails.
type failingMapper struct{ meta.RESTMapper }

func (failingMapper) RESTMapping(schema.GroupKind, ...string) (*meta.RESTMapping, error) {
	return nil, errors.New("connection refused")
}

func TestServesClusterTrustBundles(t *testing.T) {
	mapper := func(gvs ...schema.GroupVersion) meta.RESTMapper {
		m := meta.NewDefaultRESTMapper(gvs)
		for _, gv := range gvs {
			m.Add(gv.WithKind("ClusterTrustBundle"), meta.RESTScopeRoot)
		}
		return m
	}
	cases := []struct {
		name    string
		mapper  meta.RESTMapper
		want    bool
		wantErr bool
	}{
		{name: "v1 served", mapper: mapper(certificatesv1.SchemeGroupVersion, certificatesv1beta1.SchemeGroupVersion), want: true},
		{name: "only v1beta1 served", mapper: mapper(certificatesv1beta1.SchemeGroupVersion)},
		{name: "none served", mapper: mapper()},
		{name: "discovery fails", mapper: failingMapper{}, wantErr: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := servesClusterTrustBundles(tc.mapper)
			if (err != nil) != tc.wantErr || got != tc.want {
				t.Errorf("servesClusterTrustBundles = %v, %v; want %v, error %v", got, err, tc.want, tc.wantErr)
			}
		})
	}
}
