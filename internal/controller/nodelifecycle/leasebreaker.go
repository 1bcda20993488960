package nodelifecycle

import (
	"context"
	"fmt"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
)

// staleLeaseCacheError says the Lease cache is older than a Lease the API server holds:
// upstream's ConsistencyError, with its message.
type staleLeaseCacheError struct {
	read, wrote string
}

func (e *staleLeaseCacheError) Error() string {
	return fmt.Sprintf("read version: %s is not as new as written version: %s for group resource leases.coordination.k8s.io", e.read, e.wrote)
}

// leaseCacheBehind is upstream's lease circuit breaker check at the start of every node's
// health update (NodeControllerLeaseCircuitBreaker): once a live read found a Lease newer
// than the cache's, no node's Lease is trusted until the cache has synced that version.
// Without a version from the cache (or one that does not compare) it trusts the cache, as
// upstream's consistency store does.
func (r *Reconciler) leaseCacheBehind() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.leaseVersionSeen == "" {
		return nil
	}
	read := ""
	if r.LeaseCacheVersion != nil {
		read = r.LeaseCacheVersion()
	}
	if read != "" {
		if cmp, err := resourceversion.CompareResourceVersion(r.leaseVersionSeen, read); err == nil && cmp > 0 {
			return &staleLeaseCacheError{read: read, wrote: r.leaseVersionSeen}
		}
	}
	r.leaseVersionSeen = ""
	return nil
}

// confirmLeaseExpired is upstream's double check before a node whose cached Lease has not
// been renewed within its grace period is declared Unknown: the Lease is read from the API
// server, and a resourceVersion other than that of the Lease last seen renewed means the
// cache is stale, not the node. That version is remembered for leaseCacheBehind and the
// node is skipped. A Lease that is gone, or unchanged, confirms the expiry (nil).
func (r *Reconciler) confirmLeaseExpired(ctx context.Context, node string, seen string) error {
	live := &coordinationv1.Lease{}
	err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: corev1.NamespaceNodeLease, Name: node}, live)
	switch {
	case apierrors.IsNotFound(err):
		return nil
	case err != nil:
		return fmt.Errorf("error looking up lease to verify node %s: %w", node, err)
	case live.ResourceVersion == seen:
		return nil
	}
	r.mu.Lock()
	if r.leaseVersionSeen == "" {
		r.leaseVersionSeen = live.ResourceVersion
	} else if cmp, err := resourceversion.CompareResourceVersion(r.leaseVersionSeen, live.ResourceVersion); err != nil || cmp < 0 {
		r.leaseVersionSeen = live.ResourceVersion
	}
	r.mu.Unlock()
	return &staleLeaseCacheError{read: seen, wrote: live.ResourceVersion}
}
