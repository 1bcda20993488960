// Package serviceaccount is upstream's serviceaccount-controller: every active namespace has
// a "default" ServiceAccount, recreated when it is deleted.
package serviceaccount

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "serviceaccount-controller"

// DefaultServiceAccount is the ServiceAccount every namespace gets.
const DefaultServiceAccount = "default"

// Reconciler ensures the default ServiceAccount of one namespace.
type Reconciler struct {
	Client client.Client
}

// Namespaces and ServiceAccounts are read from the shared cache (kcm's identity); the
// controller's own identity only creates the default ServiceAccount, as upstream's role allows.
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=create

// Reconcile creates the default ServiceAccount of an active namespace when it is missing.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ns.Status.Phase != corev1.NamespaceActive {
		return reconcile.Result{}, nil
	}

	sa := &corev1.ServiceAccount{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: DefaultServiceAccount}, sa)
	if err == nil || !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}

	sa = &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: DefaultServiceAccount}}
	switch err := r.Client.Create(ctx, sa); {
	case err == nil:
		log.FromContext(ctx).V(2).Info("Created ServiceAccount", "serviceAccount", client.ObjectKeyFromObject(sa))
	case apierrors.IsAlreadyExists(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// The cache lagged, or the namespace began terminating after we read it.
	default:
		// As upstream, no Event: the error is logged and the namespace retried.
		return reconcile.Result{}, fmt.Errorf("creating ServiceAccount %s/%s: %w", ns.Name, DefaultServiceAccount, err)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches namespaces and deletions of default ServiceAccounts.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	defaultDeleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc: func(e event.DeleteEvent) bool {
			return e.Object.GetName() == DefaultServiceAccount
		},
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Namespace{}).
		Watches(&corev1.ServiceAccount{},
			handler.EnqueueRequestsFromMapFunc(namespaceOf),
			builder.WithPredicates(defaultDeleted)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

func namespaceOf(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}
