package nodelifecycle

import (
	"context"
	"errors"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// liveLease answers the breaker's live read: a Lease at a resourceVersion, or an error.
type liveLease struct {
	rv  string
	err error
}

func (l liveLease) Get(_ context.Context, key client.ObjectKey, obj client.Object, _ ...client.GetOption) error {
	if l.err != nil {
		return l.err
	}
	lease := obj.(*coordinationv1.Lease)
	*lease = coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, ResourceVersion: l.rv}}
	return nil
}

func (liveLease) List(context.Context, client.ObjectList, ...client.ListOption) error {
	return errors.New("not used")
}

func TestLeaseCircuitBreaker(t *testing.T) {
	notFound := apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "n")
	tests := []struct {
		name        string
		pending     string // a version an earlier live read found
		live        liveLease
		seen        string // the version of the Lease last seen renewed
		cache       string // the version the Lease cache has synced
		wantExpired bool   // the live read confirms the expiry
		wantPending string // after the live read
		wantBehind  bool   // the cache check that follows
	}{
		{name: "the live Lease is the one last seen renewed: expired", live: liveLease{rv: "10"}, seen: "10", cache: "12", wantExpired: true},
		{name: "the Lease is gone: expired", live: liveLease{err: notFound}, seen: "10", cache: "12", wantExpired: true},
		{name: "the API server has a newer Lease than the cache", live: liveLease{rv: "15"}, seen: "10", cache: "12",
			wantPending: "15", wantBehind: true},
		{name: "the cache caught up since", live: liveLease{rv: "15"}, seen: "10", cache: "15", wantPending: "15"},
		{name: "a Lease never seen renewed is not trusted expired", live: liveLease{rv: "3"}, seen: "", cache: "2",
			wantPending: "3", wantBehind: true},
		{name: "the newest version found is kept", pending: "20", live: liveLease{rv: "15"}, seen: "10", cache: "18",
			wantPending: "20", wantBehind: true},
		{name: "a cache without a version is trusted", live: liveLease{rv: "15"}, seen: "10", cache: "", wantPending: "15"},
		{name: "a failed live read holds the node", live: liveLease{err: errors.New("boom")}, seen: "10", cache: "12"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{APIReader: tt.live, LeaseCacheVersion: func() string { return tt.cache }, leaseVersionSeen: tt.pending}
			err := r.confirmLeaseExpired(context.Background(), "n", tt.seen)
			if (err == nil) != tt.wantExpired {
				t.Errorf("confirmLeaseExpired = %v, want expired %v", err, tt.wantExpired)
			}
			want := tt.wantPending
			if want == "" {
				want = tt.pending
			}
			if r.leaseVersionSeen != want {
				t.Errorf("pending version %q, want %q", r.leaseVersionSeen, want)
			}
			if err := r.leaseCacheBehind(); (err != nil) != tt.wantBehind {
				t.Errorf("leaseCacheBehind = %v, want behind %v", err, tt.wantBehind)
			}
			// A cache that has caught up clears the pending version.
			if !tt.wantBehind && r.leaseVersionSeen != "" {
				t.Errorf("pending version %q left after the cache caught up", r.leaseVersionSeen)
			}
		})
	}
}

func TestEffectiveReadyUnderTheBreaker(t *testing.T) {
	node := nodeWith(readyAt(t0, t0))
	tests := []struct {
		name                string
		breaker             bool
		since               time.Duration // since the node was last seen alive
		verdict             expiryVerdict
		want                corev1.ConditionStatus
		wantCounted, wantPd bool
	}{
		{"within its grace period", true, 3 * time.Second, expiryUnjudged, corev1.ConditionTrue, true, false},
		{"past it, breaker off", false, 6 * time.Second, expiryUnjudged, corev1.ConditionUnknown, true, false},
		{"past it, confirmed", true, 6 * time.Second, expiryConfirmed, corev1.ConditionUnknown, true, false},
		{"past it, held: not counted", true, 6 * time.Second, expiryHeld, corev1.ConditionTrue, false, false},
		{"just past it, not judged yet: pending", true, 4500 * time.Millisecond, expiryUnjudged, corev1.ConditionTrue, false, true},
		{"a period past it, never judged: Unknown", true, 7 * time.Second, expiryUnjudged, corev1.ConditionUnknown, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := &Reconciler{LeaseCircuitBreaker: tt.breaker, MonitorPeriod: time.Second, MonitorGracePeriod: 4 * time.Second,
				StartupGracePeriod: 6 * time.Second,
				healths:            map[string]*health{node.Name: {probe: t0, ready: readyAt(t0, t0), expiry: tt.verdict}}}
			status, counted, pending := r.effectiveReady(node, t0.Add(tt.since))
			if status != tt.want || counted != tt.wantCounted || pending != tt.wantPd {
				t.Errorf("effectiveReady = %s counted %v pending %v, want %s %v %v", status, counted, pending, tt.want, tt.wantCounted, tt.wantPd)
			}
		})
	}
}
