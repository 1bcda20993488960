package pod

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Delete deletes a pod its owner no longer wants, as upstream's PodControl.DeletePod: pinned
// to the pod's UID (a recreated pod of the same name is another pod), with the
// SuccessfulDelete or FailedDelete Event on the owner. A pod already gone is no Event, and
// its NotFound error is returned for the caller's expectations.
func Delete(ctx context.Context, c client.Client, rec recorder.EventRecorder, owner runtime.Object, p *corev1.Pod) error {
	err := c.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	switch {
	case err == nil:
		rec.Eventf(owner, p, corev1.EventTypeNormal, "SuccessfulDelete", "Delete", "Deleted pod: %v", p.Name)
	case apierrors.IsNotFound(err):
	default:
		rec.Eventf(owner, p, corev1.EventTypeWarning, "FailedDelete", "Delete", "Error deleting: %v", err)
	}
	return err
}
