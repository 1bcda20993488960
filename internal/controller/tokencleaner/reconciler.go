// Package tokencleaner is upstream's token-cleaner-controller: it deletes kube-system's
// bootstrap token Secrets once their expiration has passed, so that an expired token (a
// kubeadm join token, by default a day old) is gone rather than only refused.
package tokencleaner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "token-cleaner-controller"

// Reconciler deletes each bootstrap token Secret at its expiration.
type Reconciler struct {
	// Cache holds kube-system's bootstrap token Secrets only.
	Cache cache.Cache
	// Client deletes with the controller's own identity.
	Client client.Client
	Clock  clock.PassiveClock
}

// Reconcile deletes the token if it has expired, else comes back when it expires (a token
// without expiration is never looked at again until it changes).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	secret := &corev1.Secret{}
	if err := r.Cache.Get(ctx, req.NamespacedName, secret); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}

	expired, left := Expiry(secret, r.Clock.Now())
	if !expired {
		return reconcile.Result{RequeueAfter: left}, nil
	}

	// The UID precondition, as upstream: a token re-created under the same name since the
	// cache saw this one is not deleted on the old one's expiration.
	log.FromContext(ctx).V(3).Info("Deleting expired secret", "secret", req.NamespacedName)
	err := r.Client.Delete(ctx, secret, client.Preconditions{UID: &secret.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return reconcile.Result{}, fmt.Errorf("deleting expired bootstrap token Secret %s: %w", req.NamespacedName, err)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches the bootstrap token Secrets of r.Cache.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		WatchesRawSource(source.Kind(r.Cache, client.Object(&corev1.Secret{}), &handler.EnqueueRequestForObject{})).
		Complete(r)
}
