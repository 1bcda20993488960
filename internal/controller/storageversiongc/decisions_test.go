package storageversiongc

import (
	"reflect"
	"testing"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestIsAPIServerIdentity(t *testing.T) {
	lease := func(ns string, labels map[string]string) *coordinationv1.Lease {
		return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "apiserver-x", Labels: labels}}
	}
	for _, tc := range []struct {
		name  string
		lease *coordinationv1.Lease
		want  bool
	}{
		{"kube-apiserver's identity", lease("kube-system", map[string]string{IdentityLabel: KubeAPIServer}), true},
		{"another component's identity", lease("kube-system", map[string]string{IdentityLabel: "sample-apiserver"}), false},
		{"unlabelled", lease("kube-system", nil), false},
		{"outside kube-system", lease("default", map[string]string{IdentityLabel: KubeAPIServer}), false},
		{"none", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := IsAPIServerIdentity(tc.lease); got != tc.want {
				t.Errorf("IsAPIServerIdentity = %v, want %v", got, tc.want)
			}
		})
	}
}

func entry(id, encoding string) apiserverinternalv1alpha1.ServerStorageVersion {
	return apiserverinternalv1alpha1.ServerStorageVersion{APIServerID: id, EncodingVersion: encoding, DecodableVersions: []string{encoding}}
}

func TestWithout(t *testing.T) {
	entries := []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "v1"), entry("b", "v2"), entry("c", "v1")}
	for _, tc := range []struct {
		name        string
		stale       map[string]bool
		wantKept    []string
		wantDropped bool
	}{
		{"none stale", nil, []string{"a", "b", "c"}, false},
		{"one stale, order kept", map[string]bool{"b": true}, []string{"a", "c"}, true},
		{"all stale", map[string]bool{"a": true, "b": true, "c": true}, nil, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			kept, dropped := Without(entries, func(id string) bool { return tc.stale[id] })
			var ids []string
			for _, e := range kept {
				ids = append(ids, e.APIServerID)
			}
			if !reflect.DeepEqual(ids, tc.wantKept) || dropped != tc.wantDropped {
				t.Errorf("Without = %v, %v; want %v, %v", ids, dropped, tc.wantKept, tc.wantDropped)
			}
		})
	}
}

func TestPruned(t *testing.T) {
	sv := &apiserverinternalv1alpha1.StorageVersion{
		ObjectMeta: metav1.ObjectMeta{Name: "apps.deployments", Generation: 3},
		Status: apiserverinternalv1alpha1.StorageVersionStatus{
			StorageVersions: []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "apps/v1"), entry("b", "apps/v2"), entry("c", "apps/v2")},
			Conditions: []apiserverinternalv1alpha1.StorageVersionCondition{{
				Type: apiserverinternalv1alpha1.AllEncodingVersionsEqual, Status: apiserverinternalv1alpha1.ConditionFalse,
				Reason: "CommonEncodingVersionUnset", Message: "Common encoding version unset",
			}},
		},
	}
	for _, tc := range []struct {
		name       string
		kept       []apiserverinternalv1alpha1.ServerStorageVersion
		wantDelete bool
		wantCommon *string
		wantStatus apiserverinternalv1alpha1.ConditionStatus
		wantReason string
	}{
		{"nothing left: deleted", nil, true, nil, "", ""},
		{"the rest agree: common version and condition true", []apiserverinternalv1alpha1.ServerStorageVersion{entry("b", "apps/v2"), entry("c", "apps/v2")},
			false, ptr.To("apps/v2"), apiserverinternalv1alpha1.ConditionTrue, "CommonEncodingVersionSet"},
		{"the rest disagree: no common version", []apiserverinternalv1alpha1.ServerStorageVersion{entry("a", "apps/v1"), entry("b", "apps/v2")},
			false, nil, apiserverinternalv1alpha1.ConditionFalse, "CommonEncodingVersionUnset"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := Pruned(sv, tc.kept)
			if tc.wantDelete {
				if got != nil {
					t.Fatalf("Pruned = %v, want nil (delete)", got.Status)
				}
				return
			}
			if got == nil {
				t.Fatal("Pruned = nil, want an update")
			}
			if !reflect.DeepEqual(got.Status.StorageVersions, tc.kept) {
				t.Errorf("entries = %v, want %v", got.Status.StorageVersions, tc.kept)
			}
			if !reflect.DeepEqual(got.Status.CommonEncodingVersion, tc.wantCommon) {
				t.Errorf("commonEncodingVersion = %v, want %v", ptr.Deref(got.Status.CommonEncodingVersion, "<nil>"), ptr.Deref(tc.wantCommon, "<nil>"))
			}
			if len(got.Status.Conditions) != 1 || got.Status.Conditions[0].Status != tc.wantStatus ||
				got.Status.Conditions[0].Reason != tc.wantReason || got.Status.Conditions[0].ObservedGeneration != sv.Generation {
				t.Errorf("conditions = %+v, want one AllEncodingVersionsEqual %s %s", got.Status.Conditions, tc.wantStatus, tc.wantReason)
			}
			if len(sv.Status.StorageVersions) != 3 {
				t.Error("Pruned changed its argument")
			}
		})
	}
}
