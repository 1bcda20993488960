package pod

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/expectations"
	"github.com/kcm/kcm/internal/slowstart"
)

// CreateExpected makes n pod creations for one owner the way upstream's controllers do, with
// the expectations hook: all n are expected (under key, the owner's) before the first is
// made, then made in slow-start batches (slowstart.Run: after a batch with a failure, the
// rest are not tried), and each that will never be observed, failed or never tried, lowers
// the expectation again. create(i) makes the i-th: an error is a creation that failed, nil
// one that was made or may still be observed. It returns how many succeeded and the first
// error.
func CreateExpected(exp *expectations.Expectations, key types.NamespacedName, n int, create func(i int) error) (int, error) {
	exp.ExpectCreations(key, n)
	created, err := slowstart.Run(n, create)
	for range n - created {
		exp.CreationObserved(key)
	}
	return created, err
}

// Create creates a pod for its owner, as upstream's PodControl.CreatePods: with the
// SuccessfulCreate Event on the owner, or FailedCreate with the error, which is returned as
// the API server gave it. A creation refused because the namespace is being deleted is not
// reported: every other one there fails the same way (NamespaceTerminating tells it).
func Create(ctx context.Context, c client.Client, rec recorder.EventRecorder, owner runtime.Object, p *corev1.Pod) error {
	err := c.Create(ctx, p)
	switch {
	case err == nil:
		rec.Eventf(owner, p, corev1.EventTypeNormal, "SuccessfulCreate", "Create", "Created pod: %v", p.Name)
	case NamespaceTerminating(err):
	default:
		rec.Eventf(owner, nil, corev1.EventTypeWarning, "FailedCreate", "Create", "Error creating: %v", err)
	}
	return err
}

// NamespaceTerminating reports whether err is a creation refused because the namespace is
// being deleted.
func NamespaceTerminating(err error) bool {
	return apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause)
}

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
