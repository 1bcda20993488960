package groups

import (
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func candidateLease(name, holder string, renewed time.Time, seconds int32) coordinationv1.Lease {
	l := coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(renewed.Add(-time.Hour))}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	l.Spec.RenewTime = &metav1.MicroTime{Time: renewed}
	l.Spec.LeaseDurationSeconds = ptr.To(seconds)
	return l
}

func TestLiveReplicas(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		name   string
		leases []coordinationv1.Lease
		want   int
	}{
		{name: "none listed: this replica alone", want: 1},
		{name: "own Lease not counted twice", leases: []coordinationv1.Lease{candidateLease("own", "me", now, 15)}, want: 1},
		{name: "own Lease counted even if expired", leases: []coordinationv1.Lease{candidateLease("own", "me", now.Add(-time.Hour), 15)}, want: 1},
		{name: "two live others", leases: []coordinationv1.Lease{
			candidateLease("own", "me", now, 15), candidateLease("b", "b", now.Add(-14*time.Second), 15), candidateLease("c", "c", now, 15),
		}, want: 3},
		{name: "an expired other", leases: []coordinationv1.Lease{
			candidateLease("b", "b", now.Add(-16*time.Second), 15), candidateLease("c", "c", now.Add(-time.Second), 15),
		}, want: 2},
		{name: "expiring exactly now is gone", leases: []coordinationv1.Lease{candidateLease("b", "b", now.Add(-15*time.Second), 15)}, want: 1},
		{name: "released (no holder)", leases: []coordinationv1.Lease{candidateLease("b", "", now, 15)}, want: 1},
		{name: "no renew time", leases: []coordinationv1.Lease{{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To("b"), LeaseDurationSeconds: ptr.To[int32](15)}}}, want: 1},
	} {
		if got := LiveReplicas(c.leases, "own", now); got != c.want {
			t.Errorf("%s: LiveReplicas = %d, want %d", c.name, got, c.want)
		}
	}
}

func TestStaleCandidates(t *testing.T) {
	now := time.Date(2026, 11, 29, 2, 0, 0, 0, time.UTC)
	after := 150 * time.Second
	leases := []coordinationv1.Lease{
		candidateLease("own", "me", now.Add(-time.Hour), 15),         // ours: never stale
		candidateLease("live", "b", now, 15),                         // live
		candidateLease("recent", "c", now.Add(-100*time.Second), 15), // expired 85 s ago
		candidateLease("gone", "d", now.Add(-200*time.Second), 15),   // expired 185 s ago
		candidateLease("released", "", now.Add(-10*time.Second), 15), // no holder: by creation, an hour ago
		{ObjectMeta: metav1.ObjectMeta{Name: "new-unheld", CreationTimestamp: metav1.NewTime(now.Add(-time.Second))}},
	}
	var got []string
	for _, l := range StaleCandidates(leases, "own", now, after) {
		got = append(got, l.Name)
	}
	if want := []string{"gone", "released"}; !equal(got, want) {
		t.Fatalf("StaleCandidates = %v, want %v", got, want)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}
