package groups

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSingleLeaseAllows(t *testing.T) {
	now := time.Date(2026, 11, 29, 3, 0, 0, 0, time.UTC)
	lease := func(holder string, renewed time.Duration) coordinationv1.Lease {
		return coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "l-" + holder}, Spec: coordinationv1.LeaseSpec{
			HolderIdentity: ptr.To(holder), LeaseDurationSeconds: ptr.To(int32(15)),
			RenewTime: &metav1.MicroTime{Time: now.Add(-renewed)}}}
	}
	candidates := []coordinationv1.Lease{lease("b", time.Second), lease("gone", time.Minute)}
	for _, tc := range []struct {
		name   string
		single coordinationv1.Lease
		want   bool
	}{
		{"held by this replica's guard", lease("me", time.Second), true},
		{"held by another replica with groups", lease("b", 2*time.Second), true},
		{"held by a manager without groups (upstream)", lease("upstream", time.Second), false},
		{"held by a replica whose candidate Lease expired (killed)", lease("gone", time.Second), true},
		{"expired: a guard or another manager takes it next", lease("me", time.Minute), false},
		{"released", coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("")}}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := singleLeaseAllows(&tc.single, candidates, "me", now); got != tc.want {
				t.Errorf("singleLeaseAllows = %v, want %v", got, tc.want)
			}
			// Groups stop only for a live Lease of a manager without groups.
			forbid := tc.name == "held by a manager without groups (upstream)"
			if got := singleLeaseForbids(&tc.single, candidates, "me", now); got != forbid {
				t.Errorf("singleLeaseForbids = %v, want %v", got, forbid)
			}
		})
	}
}
