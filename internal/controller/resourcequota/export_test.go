package resourcequota

import (
	"context"

	corev1 "k8s.io/api/core/v1"
)

// SetBeforeWrite makes r call f between a sync's count and its status write, so that a
// spec can act in that window.
func SetBeforeWrite(r *Reconciler, f func(ctx context.Context, rq *corev1.ResourceQuota)) {
	r.beforeWrite = f
}
