// Package ttlafterfinished is upstream's ttl-after-finished-controller: it deletes a finished
// Job ttlSecondsAfterFinished after it finished.
package ttlafterfinished

import (
	"context"
	"errors"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// ControllerName is the upstream controller name.
	ControllerName = "ttl-after-finished-controller"
	// ClientName is the upstream client (service account) name.
	ClientName = "ttl-after-finished-controller"
)

// propagation is how an expired Job's pods go: in the foreground, as upstream, so the Job
// stays (deleting, with the foregroundDeletion finalizer) until the garbage collector has
// deleted its pods, and whoever watches the Job sees its pods go first.
const propagation = metav1.DeletePropagationForeground

// Reconciler deletes one Job once its TTL after finishing has expired.
type Reconciler struct {
	Client client.Client
	// APIReader reads the Job from the API server before deleting it: the cached copy may
	// carry an outdated TTL.
	APIReader client.Reader
	// Clock tells the time; the real clock when nil.
	Clock clock.PassiveClock
}

// What ttl-after-finished-controller's own client does (reads of the shared cache run as
// kcm's identity): a live get of the Job before deleting it, and the delete.
//
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;delete

// Reconcile waits for the Job's expiry, checks the fresh Job still expires and deletes it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	j := &batchv1.Job{}
	if err := r.Client.Get(ctx, req.NamespacedName, j); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	left, _, due, err := r.timeLeft(ctx, j)
	if err != nil || !due {
		return reconcile.Result{RequeueAfter: left}, err
	}

	// The TTL may have changed since the cache saw the Job: decide again on the API
	// server's copy, and delete exactly that version.
	fresh := &batchv1.Job{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, fresh); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	left, expiresAt, due, err := r.timeLeft(ctx, fresh)
	if err != nil || !due {
		return reconcile.Result{RequeueAfter: left}, err
	}
	logger.V(4).Info("Cleaning up Job", "job", client.ObjectKeyFromObject(fresh))
	err = r.Client.Delete(ctx, fresh, client.PropagationPolicy(propagation),
		client.Preconditions{UID: &fresh.UID, ResourceVersion: &fresh.ResourceVersion})
	if apierrors.IsNotFound(err) {
		return reconcile.Result{}, nil
	}
	if err != nil {
		// A conflict means the Job changed after it was read: look again.
		return reconcile.Result{}, err
	}
	recordDeletion(r.Clock.Now(), expiresAt)
	return reconcile.Result{}, nil
}

// timeLeft is how long until the Job expires, and when; due when it has, false with no wait
// when it needs no cleanup.
func (r *Reconciler) timeLeft(ctx context.Context, j *batchv1.Job) (time.Duration, time.Time, bool, error) {
	finishedAt, expiresAt, ok, err := expiry(j)
	if err != nil {
		// Only a new status can fix it, and a new status brings the Job back.
		return 0, time.Time{}, false, reconcile.TerminalError(err)
	}
	if !ok {
		return 0, time.Time{}, false, nil
	}
	now := r.Clock.Now()
	if finishedAt.After(now) {
		log.FromContext(ctx).Info("Found Job finished in the future. This is likely due to time skew in the cluster. Job cleanup will be deferred.")
	}
	left := expiresAt.Sub(now)
	if left > 0 {
		return left, expiresAt, false, nil
	}
	return 0, expiresAt, true, nil
}

// SetupWithManager watches the Jobs that have finished with a TTL and are not being deleted.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil {
		return errors.New(ControllerName + ": Client and APIReader are required")
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	candidate := func(o client.Object) bool {
		j, ok := o.(*batchv1.Job)
		return ok && j.DeletionTimestamp == nil && needsCleanup(j)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&batchv1.Job{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc:  func(e event.CreateEvent) bool { return candidate(e.Object) },
			UpdateFunc:  func(e event.UpdateEvent) bool { return candidate(e.ObjectNew) },
			DeleteFunc:  func(event.DeleteEvent) bool { return false },
			GenericFunc: func(e event.GenericEvent) bool { return candidate(e.Object) },
		})).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
