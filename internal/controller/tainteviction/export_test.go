package tainteviction

import "k8s.io/apimachinery/pkg/types"

// Scheduled reports whether an eviction of the pod is scheduled for later, for the suite's
// waits: a scheduled eviction leaves no trace in the API until it fires or is cancelled.
func (r *Reconciler) Scheduled(pod types.NamespacedName) bool {
	e, ok := r.pending.get(pod)
	return ok && e.timed
}
