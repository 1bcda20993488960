// Package storageversiongc is upstream's storageversion-garbage-collector-controller. Every
// kube-apiserver records, in internal.apiserver.k8s.io/v1alpha1 StorageVersions, the version
// it encodes each resource in, under its identity (the name of its Lease in kube-system,
// labelled apiserver.kubernetes.io/identity=kube-apiserver). When an API server's Lease goes,
// its entries are removed from every StorageVersion; a StorageVersion added or updated with an
// entry of an API server that has no such Lease loses it. A StorageVersion left without
// entries is deleted; otherwise its common encoding version and condition are recomputed.
//
// As upstream, two queues: Lease deletions (LeaseReconciler) and StorageVersions
// (Reconciler), one worker each; both read live and write with the controller's identity.
package storageversiongc

import (
	"context"
	"errors"
	"fmt"

	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	// ControllerName is the controller's name in --controllers.
	ControllerName = "storageversion-garbage-collector-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "storage-version-garbage-collector"
)

// Reconciler removes stale API servers' entries from one StorageVersion.
type Reconciler struct {
	// Client reads Leases from the cache (to filter events) and writes StorageVersions.
	Client client.Client
	// APIReader reads StorageVersions and Leases live, as upstream's syncs do.
	APIReader client.Reader
}

// Leases and StorageVersions are watched through the shared cache (kcm's identity); the
// controller's own identity reads them live, updates StorageVersions' status and deletes
// empty ones.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get
// +kubebuilder:rbac:groups=internal.apiserver.k8s.io,resources=storageversions,verbs=get;list;delete
// +kubebuilder:rbac:groups=internal.apiserver.k8s.io,resources=storageversions/status,verbs=update

// Reconcile drops the StorageVersion's entries of API servers without an identity Lease.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	sv := &apiserverinternalv1alpha1.StorageVersion{}
	if err := r.APIReader.Get(ctx, req.NamespacedName, sv); err != nil {
		// Gone since: nothing left to clean.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	kept, dropped := Without(sv.Status.StorageVersions, func(id string) bool {
		lease := &coordinationv1.Lease{}
		// As upstream, any failure to read the Lease counts as its absence.
		err := r.APIReader.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: id}, lease)
		return err != nil || !IsAPIServerIdentity(lease)
	})
	if !dropped {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.updateOrDelete(ctx, sv, kept)
}

// updateOrDelete writes sv with only the kept entries, or deletes it when none is left.
func (r *Reconciler) updateOrDelete(ctx context.Context, sv *apiserverinternalv1alpha1.StorageVersion, kept []apiserverinternalv1alpha1.ServerStorageVersion) error {
	pruned := Pruned(sv, kept)
	if pruned == nil {
		log.FromContext(ctx).V(2).Info("Deleting StorageVersion left without API servers", "storageVersion", sv.Name)
		return client.IgnoreNotFound(r.Client.Delete(ctx, sv))
	}
	log.FromContext(ctx).V(2).Info("Removing stale API servers from StorageVersion", "storageVersion", sv.Name,
		"apiServers", len(sv.Status.StorageVersions)-len(kept))
	// An update of the status read: a concurrent change conflicts and is retried.
	return r.Client.Status().Update(ctx, pruned)
}

// namesUnknownServer reports whether the StorageVersion has an entry of an API server with
// no identity Lease in the cache, as upstream filters its StorageVersion events.
func (r *Reconciler) namesUnknownServer(ctx context.Context, sv *apiserverinternalv1alpha1.StorageVersion) bool {
	for _, e := range sv.Status.StorageVersions {
		lease := &coordinationv1.Lease{}
		err := r.Client.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: e.APIServerID}, lease)
		if err != nil || !IsAPIServerIdentity(lease) {
			log.FromContext(ctx).V(4).Info("Observed storage version with invalid apiserver entry", "objName", sv.Name)
			return true
		}
	}
	return false
}

// SetupWithManager registers the two controllers, one worker each as upstream: this one for
// StorageVersions added or updated naming an API server without a Lease, and the Leases one
// for identity Leases deleted.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil {
		return fmt.Errorf("%s: Client and APIReader are required", ControllerName)
	}
	ctx := context.Background()
	unknownServer := predicate.TypedFuncs[client.Object]{
		CreateFunc: func(e event.TypedCreateEvent[client.Object]) bool {
			sv, ok := e.Object.(*apiserverinternalv1alpha1.StorageVersion)
			return ok && r.namesUnknownServer(ctx, sv)
		},
		UpdateFunc: func(e event.TypedUpdateEvent[client.Object]) bool {
			sv, ok := e.ObjectNew.(*apiserverinternalv1alpha1.StorageVersion)
			return ok && r.namesUnknownServer(ctx, sv)
		},
		DeleteFunc:  func(event.TypedDeleteEvent[client.Object]) bool { return false },
		GenericFunc: func(event.TypedGenericEvent[client.Object]) bool { return false },
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&apiserverinternalv1alpha1.StorageVersion{}, builder.WithPredicates(unknownServer)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: 1}).
		Complete(r); err != nil {
		return err
	}
	return (&LeaseReconciler{Client: r.Client, APIReader: r.APIReader, sv: r}).SetupWithManager(mgr)
}

// LeaseReconciler removes a deleted identity Lease's API server from every StorageVersion.
type LeaseReconciler struct {
	Client    client.Client
	APIReader client.Reader
	sv        *Reconciler
}

// Reconcile handles an identity Lease deleted: unless it is back, its API server's entries go.
func (r *LeaseReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	err := r.APIReader.Get(ctx, req.NamespacedName, &coordinationv1.Lease{})
	if err == nil {
		// Recreated (the API server renewed it): its entries stand.
		return reconcile.Result{}, nil
	}
	if !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	// Lease deletions are rare: a live list each time, as upstream.
	list := &apiserverinternalv1alpha1.StorageVersionList{}
	if err := r.APIReader.List(ctx, list); err != nil {
		return reconcile.Result{}, err
	}
	var errs []error
	for i := range list.Items {
		sv := &list.Items[i]
		kept, dropped := Without(sv.Status.StorageVersions, func(id string) bool { return id == req.Name })
		if !dropped {
			continue
		}
		if err := r.sv.updateOrDelete(ctx, sv, kept); err != nil {
			errs = append(errs, err)
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// SetupWithManager registers the Leases controller: deletions of identity Leases only.
func (r *LeaseReconciler) SetupWithManager(mgr ctrl.Manager) error {
	deletedIdentity := predicate.TypedFuncs[client.Object]{
		CreateFunc: func(event.TypedCreateEvent[client.Object]) bool { return false },
		UpdateFunc: func(event.TypedUpdateEvent[client.Object]) bool { return false },
		DeleteFunc: func(e event.TypedDeleteEvent[client.Object]) bool {
			lease, ok := e.Object.(*coordinationv1.Lease)
			return ok && IsAPIServerIdentity(lease)
		},
		GenericFunc: func(event.TypedGenericEvent[client.Object]) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-leases").
		For(&coordinationv1.Lease{}, builder.WithPredicates(deletedIdentity)).
		WithOptions(controller.Options{NewQueue: newLeaseQueue, MaxConcurrentReconciles: 1}).
		Complete(r)
}
