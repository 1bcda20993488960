package groups

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Labels and annotations kcm puts on the Leases of group mode, so that `kcm explain` and
// operators find them by selector.
const (
	// GroupLabel is on every group Lease; its value is the leader-election resource name.
	GroupLabel = "kcm.k8s.io/controller-groups"
	// ControllersAnnotation lists a group Lease's controllers, comma-separated.
	ControllersAnnotation = "kcm.k8s.io/controllers"
	// CandidateLabel is on every replica's candidate Lease; its value is the leader-election
	// resource name.
	CandidateLabel = "kcm.k8s.io/controller-groups-candidate"
)

// staleAfter is how many lease durations a candidate Lease stays expired before any replica
// deletes it: a replica that crashed or was killed leaves its Lease behind, and restarts (a
// new identity each) must not pile them up. Long enough that a replica merely cut off from the
// API server for a while finds its Lease again.
const staleAfter = 10

// CandidateLeaseName is the candidate Lease of the replica identity: the leader-election
// resource name, "-replica-" and a short hash of the identity (hostname_uuid is neither short
// nor always a valid name).
func CandidateLeaseName(name, identity string) string {
	sum := sha256.Sum256([]byte(identity))
	return name + "-replica-" + hex.EncodeToString(sum[:])[:10]
}

// candidates keeps this replica's candidate Lease and counts the live replicas from everyone's.
type candidates struct {
	client                   kubernetes.Interface
	namespace, name, lease   string
	identity                 string
	leaseDuration, retry     time.Duration
	now                      func() time.Time
	live                     atomic.Int32
	liveIDs                  atomic.Pointer[[]string]
	own                      *coordinationv1.Lease // the last version of our Lease read or written
	lastListErr, lastRenewal error
}

func newCandidates(cfg Config) *candidates {
	c := &candidates{
		client: cfg.Client, namespace: cfg.Namespace, name: cfg.Name,
		lease: CandidateLeaseName(cfg.Name, cfg.Identity), identity: cfg.Identity,
		leaseDuration: cfg.LeaseDuration, retry: cfg.RetryPeriod, now: time.Now,
	}
	c.live.Store(1)
	c.liveIDs.Store(&[]string{c.identity})
	return c
}

// Live is the number of live replicas, this one included: at least 1.
func (c *candidates) Live() int { return int(c.live.Load()) }

// LiveIdentities are the live replicas' identities, this one's included.
func (c *candidates) LiveIdentities() []string { return *c.liveIDs.Load() }

// round renews our Lease, then lists everyone's: the count of live replicas and the deletion
// of long-expired Leases. Errors are logged once until the next success: the elections go on
// with the last count.
func (c *candidates) round(ctx context.Context) {
	logger := log.FromContext(ctx)
	err := c.renew(ctx)
	if err != nil && c.lastRenewal == nil {
		logger.Error(err, "Failed to renew this replica's controller-groups candidate Lease", "lease", c.namespace+"/"+c.lease)
	}
	c.lastRenewal = err
	err = c.count(ctx)
	if err != nil && c.lastListErr == nil {
		logger.Error(err, "Failed to list the controller-groups candidate Leases", "namespace", c.namespace)
	}
	c.lastListErr = err
}

// run does a round every retry period until ctx is done.
func (c *candidates) run(ctx context.Context) {
	t := time.NewTicker(c.retry)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			c.round(ctx)
		}
	}
}

// renew writes our Lease with a fresh renew time, creating it the first time (or again, when
// another replica deleted it as stale while we were cut off).
func (c *candidates) renew(ctx context.Context) error {
	leases := c.client.CoordinationV1().Leases(c.namespace)
	now := metav1.NewMicroTime(c.now())
	if c.own == nil {
		got, err := leases.Get(ctx, c.lease, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			created, err := leases.Create(ctx, c.desired(nil, now), metav1.CreateOptions{})
			if err != nil {
				return err
			}
			c.own = created
			return nil
		case err != nil:
			return err
		}
		c.own = got
	}
	updated, err := leases.Update(ctx, c.desired(c.own, now), metav1.UpdateOptions{})
	if err != nil {
		// Read it again next round: a conflict, or deleted as stale.
		c.own = nil
		return err
	}
	c.own = updated
	return nil
}

// desired is our Lease as held now: ours, renewed at now, for one lease duration.
func (c *candidates) desired(old *coordinationv1.Lease, now metav1.MicroTime) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: c.namespace, Name: c.lease}}
	if old != nil {
		l = old.DeepCopy()
	}
	if l.Labels == nil {
		l.Labels = map[string]string{}
	}
	l.Labels[CandidateLabel] = c.name
	if l.Spec.HolderIdentity == nil || *l.Spec.HolderIdentity != c.identity {
		l.Spec.AcquireTime = &now
	}
	l.Spec.HolderIdentity = ptr.To(c.identity)
	l.Spec.LeaseDurationSeconds = ptr.To(int32(c.leaseDuration / time.Second))
	l.Spec.RenewTime = &now
	return l
}

// count lists the candidate Leases, stores the live count and deletes the long-expired ones.
func (c *candidates) count(ctx context.Context) error {
	leases := c.client.CoordinationV1().Leases(c.namespace)
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{CandidateLabel: c.name}.String()})
	if err != nil {
		return err
	}
	now := c.now()
	c.live.Store(int32(LiveReplicas(list.Items, c.lease, now)))
	ids := []string{c.identity}
	for i := range list.Items {
		if l := &list.Items[i]; l.Name != c.lease && expiry(l).After(now) {
			ids = append(ids, *l.Spec.HolderIdentity)
		}
	}
	c.liveIDs.Store(&ids)
	for _, l := range StaleCandidates(list.Items, c.lease, now, staleAfter*c.leaseDuration) {
		// Only the version we judged: a replica that came back and renewed keeps its Lease.
		err := leases.Delete(ctx, l.Name, metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &l.UID, ResourceVersion: &l.ResourceVersion}})
		if err == nil {
			log.FromContext(ctx).Info("Deleted the candidate Lease of a replica gone for long", "lease", c.namespace+"/"+l.Name)
		} else if !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return err
		}
	}
	return nil
}

// remove deletes our Lease on a graceful stop: the others count one replica fewer at their
// next round instead of after a lease duration. ctx should not be done yet.
func (c *candidates) remove(ctx context.Context) error {
	err := c.client.CoordinationV1().Leases(c.namespace).Delete(ctx, c.lease, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

// expiry is when a candidate Lease stops counting: its renew time plus its duration; zero for
// a Lease nobody holds.
func expiry(l *coordinationv1.Lease) time.Time {
	s := l.Spec
	if s.HolderIdentity == nil || *s.HolderIdentity == "" || s.RenewTime == nil || s.LeaseDurationSeconds == nil {
		return time.Time{}
	}
	return s.RenewTime.Add(time.Duration(*s.LeaseDurationSeconds) * time.Second)
}

// LiveReplicas counts the replicas whose candidate Lease is held and not expired at now, plus
// this one (own, its Lease's name) whatever its Lease says: a replica counts itself.
func LiveReplicas(leases []coordinationv1.Lease, own string, now time.Time) int {
	n := 1
	for i := range leases {
		if leases[i].Name != own && expiry(&leases[i]).After(now) {
			n++
		}
	}
	return n
}

// StaleCandidates are the candidate Leases, other than own, expired (or never held) for longer
// than after at now.
func StaleCandidates(leases []coordinationv1.Lease, own string, now time.Time, after time.Duration) []coordinationv1.Lease {
	var out []coordinationv1.Lease
	for i := range leases {
		l := &leases[i]
		if l.Name == own {
			continue
		}
		since := expiry(l)
		if since.IsZero() {
			since = l.CreationTimestamp.Time
		}
		if now.Sub(since) > after {
			out = append(out, *l)
		}
	}
	return out
}
