package ctbpublisher

import (
	"slices"
	"testing"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestBundleName(t *testing.T) {
	// Upstream's name: the signer with ':' for '/', then 12 bytes of the SHA-256 in hex.
	// sha256("") begins e3b0c44298fc1c149afbf4c8.
	if got, want := BundleName("kubernetes.io/kube-apiserver-serving", ""), "kubernetes.io:kube-apiserver-serving:e3b0c44298fc1c149afbf4c8"; got != want {
		t.Errorf("BundleName = %q, want %q", got, want)
	}
	if BundleName(SignerName, "a") == BundleName(SignerName, "b") {
		t.Error("two bundles got one name")
	}
}

func TestDecide(t *testing.T) {
	const bundle = "CA"
	name := BundleName(SignerName, bundle)
	ctb := func(name, content string) certificatesv1.ClusterTrustBundle {
		return certificatesv1.ClusterTrustBundle{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: certificatesv1.ClusterTrustBundleSpec{SignerName: SignerName, TrustBundle: content}}
	}
	cases := []struct {
		name       string
		existing   []certificatesv1.ClusterTrustBundle
		wantCreate bool
		wantUpdate bool
		wantDelete []string
	}{
		{name: "none yet", wantCreate: true},
		{name: "published", existing: []certificatesv1.ClusterTrustBundle{ctb(name, bundle)}},
		{name: "edited", existing: []certificatesv1.ClusterTrustBundle{ctb(name, "other")}, wantUpdate: true},
		{name: "an earlier CA's", existing: []certificatesv1.ClusterTrustBundle{ctb("old", "old CA")},
			wantCreate: true, wantDelete: []string{"old"}},
		{name: "published and others", existing: []certificatesv1.ClusterTrustBundle{ctb("a", "x"), ctb(name, bundle), ctb("b", "y")},
			wantDelete: []string{"a", "b"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := decide(tc.existing, SignerName, bundle)
			if (p.create != nil) != tc.wantCreate {
				t.Errorf("create = %v, want %v", p.create, tc.wantCreate)
			}
			if p.create != nil && (p.create.Name != name || p.create.Spec.SignerName != SignerName || p.create.Spec.TrustBundle != bundle) {
				t.Errorf("creates %+v", p.create)
			}
			if (p.update != nil) != tc.wantUpdate {
				t.Errorf("update = %v, want %v", p.update, tc.wantUpdate)
			}
			if p.update != nil && (p.update.Name != name || p.update.Spec.TrustBundle != bundle) {
				t.Errorf("updates to %+v", p.update)
			}
			if !slices.Equal(p.delete, tc.wantDelete) {
				t.Errorf("delete = %v, want %v", p.delete, tc.wantDelete)
			}
		})
	}
}
