// Package pvprotection is upstream's persistentvolume-protection-controller: it keeps the
// kubernetes.io/pv-protection finalizer on live PersistentVolumes and removes it from a
// volume being deleted once the volume is no longer bound to a claim.
package pvprotection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// ControllerName is the controller's name in --controllers.
	ControllerName = "persistentvolume-protection-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "pv-protection-controller"
	// Finalizer keeps a volume in the API while it is bound.
	Finalizer = "kubernetes.io/pv-protection"
)

// Reconciler keeps the protection finalizer of one PersistentVolume.
type Reconciler struct {
	// Client reads volumes from the cache and writes them.
	Client client.Client
}

// Volumes are read from the shared cache (kcm's identity); the controller's own identity
// updates their finalizers.
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=update

// Reconcile removes the finalizer from a deleted volume that is not bound, or adds it to a
// live volume without it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pv := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, req.NamespacedName, pv); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx)
	switch {
	case IsDeletionCandidate(pv) && IsUsed(pv):
		logger.V(4).Info("Keeping PV because it is being used")
	case IsDeletionCandidate(pv):
		updated := pv.DeepCopy()
		controllerutil.RemoveFinalizer(updated, Finalizer)
		if err := r.Client.Update(ctx, updated); err != nil {
			return reconcile.Result{}, fmt.Errorf("removing the protection finalizer: %w", err)
		}
		logger.V(3).Info("Removed protection finalizer from PV")
	case NeedsFinalizer(pv):
		updated := pv.DeepCopy()
		controllerutil.AddFinalizer(updated, Finalizer)
		if err := r.Client.Update(ctx, updated); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the protection finalizer: %w", err)
		}
		logger.V(3).Info("Added protection finalizer to PV")
	}
	return reconcile.Result{}, nil
}

// IsUsed is upstream's rule: a volume is in use while its phase is Bound.
func IsUsed(pv *corev1.PersistentVolume) bool {
	return pv.Status.Phase == corev1.VolumeBound
}

// NeedsFinalizer reports whether a live volume lacks the finalizer. The admission plugin adds
// it on create; this catches volumes created while it was off.
func NeedsFinalizer(pv *corev1.PersistentVolume) bool {
	return pv.DeletionTimestamp == nil && !controllerutil.ContainsFinalizer(pv, Finalizer)
}

// IsDeletionCandidate reports whether the volume is being deleted and waits for this
// controller's finalizer.
func IsDeletionCandidate(pv *corev1.PersistentVolume) bool {
	return pv.DeletionTimestamp != nil && controllerutil.ContainsFinalizer(pv, Finalizer)
}

// SetupWithManager registers the controller for the volumes that need work, as upstream
// filters its events.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	needsWork := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		pv, ok := obj.(*corev1.PersistentVolume)
		return ok && (NeedsFinalizer(pv) || IsDeletionCandidate(pv))
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.PersistentVolume{}, builder.WithPredicates(needsWork)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
