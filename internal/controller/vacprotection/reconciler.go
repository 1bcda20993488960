// Package vacprotection is upstream's volumeattributesclass-protection-controller: it keeps
// the kubernetes.io/vac-protection finalizer on live VolumeAttributesClasses and removes it
// from a class being deleted once no PersistentVolumeClaim or PersistentVolume refers to it
// (ClaimReferences, VolumeReferences).
//
// Upstream asks only its informers, and says so: a claim created just before the class was
// deleted may not have reached them, and the class goes while the claim names it. kcm asks
// the cache first and, when the cache finds no reference, confirms with a live list of
// volumes and claims before removing the finalizer. Deletions of classes are rare; the live
// lists cost nothing the rest of the time.
package vacprotection

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// ControllerName is the controller's name in --controllers.
	ControllerName = "volumeattributesclass-protection-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "volumeattributesclass-protection-controller"
	// Finalizer keeps a class in the API while claims or volumes refer to it.
	Finalizer = "kubernetes.io/vac-protection"
	// livePage is how many objects one page of a live list holds.
	livePage = 500
)

// Reconciler keeps the protection finalizer of one VolumeAttributesClass.
type Reconciler struct {
	// Client reads classes, claims and volumes from the cache and writes classes.
	Client client.Client
	// APIReader lists claims and volumes live before a class is released.
	APIReader client.Reader
}

// Classes, claims and volumes are read from the shared cache (kcm's identity); the
// controller's own identity updates classes and lists claims and volumes live.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattributesclasses,verbs=update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=list
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=list

// Reconcile removes the finalizer from a deleted class nothing refers to, or adds it to a
// live class without it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	vac := &storagev1.VolumeAttributesClass{}
	if err := r.Client.Get(ctx, req.NamespacedName, vac); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	logger := log.FromContext(ctx)
	switch {
	case IsDeletionCandidate(vac):
		used, err := r.isUsed(ctx, vac.Name)
		if err != nil {
			return reconcile.Result{}, err
		}
		if used {
			logger.V(4).Info("Keeping VAC because it is being used")
			return reconcile.Result{}, nil
		}
		updated := vac.DeepCopy()
		controllerutil.RemoveFinalizer(updated, Finalizer)
		if err := r.Client.Update(ctx, updated); err != nil {
			return reconcile.Result{}, fmt.Errorf("removing the protection finalizer: %w", err)
		}
		logger.V(3).Info("Removed protection finalizer from VAC")
	case NeedsFinalizer(vac):
		updated := vac.DeepCopy()
		controllerutil.AddFinalizer(updated, Finalizer)
		if err := r.Client.Update(ctx, updated); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the protection finalizer: %w", err)
		}
		logger.V(3).Info("Added protection finalizer to VAC")
	}
	return reconcile.Result{}, nil
}

// isUsed asks the cache's indexes, then, when they find nothing, the API server: a claim or
// volume naming the class may not have reached the cache yet.
func (r *Reconciler) isUsed(ctx context.Context, name string) (bool, error) {
	volumes := &corev1.PersistentVolumeList{}
	if err := r.Client.List(ctx, volumes, client.MatchingFields{ClassName: name}); err != nil {
		return false, err
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, claims, client.MatchingFields{ClassName: name}); err != nil {
		return false, err
	}
	if len(volumes.Items) > 0 || len(claims.Items) > 0 {
		return true, nil
	}
	used, err := liveUse(ctx, r.APIReader, &corev1.PersistentVolumeList{}, name, func(l *corev1.PersistentVolumeList) bool {
		return slices.ContainsFunc(l.Items, func(pv corev1.PersistentVolume) bool { return slices.Contains(VolumeReferences(&pv), name) })
	})
	if err != nil || used {
		return used, err
	}
	return liveUse(ctx, r.APIReader, &corev1.PersistentVolumeClaimList{}, name, func(l *corev1.PersistentVolumeClaimList) bool {
		return slices.ContainsFunc(l.Items, func(pvc corev1.PersistentVolumeClaim) bool {
			return slices.Contains(ClaimReferences(&pvc), name)
		})
	})
}

// liveUse lists a kind live, a page at a time, until one page holds a reference.
func liveUse[L client.ObjectList](ctx context.Context, reader client.Reader, list L, name string, refers func(L) bool) (bool, error) {
	opts := []client.ListOption{client.Limit(livePage)}
	for {
		if err := reader.List(ctx, list, opts...); err != nil {
			return false, fmt.Errorf("live list to check VAC %s is unused: %w", name, err)
		}
		if refers(list) {
			return true, nil
		}
		next := list.GetContinue()
		if next == "" {
			return false, nil
		}
		opts = []client.ListOption{client.Limit(livePage), client.Continue(next)}
	}
}

// SetupWithManager registers the controller: classes that need work, and the classes a claim
// or volume stopped referring to (by an update or its deletion), as upstream.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil {
		return fmt.Errorf("%s: Client and APIReader are required", ControllerName)
	}
	needsWork := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return needsWork(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return needsWork(e.ObjectNew) },
		// A class gone needs nothing more.
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&storagev1.VolumeAttributesClass{}, builder.WithPredicates(needsWork)).
		Watches(&corev1.PersistentVolumeClaim{}, releases(func(o client.Object) []string {
			return ClaimReferences(o.(*corev1.PersistentVolumeClaim))
		})).
		Watches(&corev1.PersistentVolume{}, releases(func(o client.Object) []string {
			return VolumeReferences(o.(*corev1.PersistentVolume))
		})).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

func needsWork(o client.Object) bool {
	vac, ok := o.(*storagev1.VolumeAttributesClass)
	return ok && (NeedsFinalizer(vac) || IsDeletionCandidate(vac))
}

// releases maps a claim's or volume's update to the classes it dropped and its deletion to
// every class it named.
func releases(refs func(client.Object) []string) handler.EventHandler {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], names []string) {
		for _, name := range names {
			q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
		}
	}
	return handler.Funcs{
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, Dropped(refs(e.ObjectOld), refs(e.ObjectNew)))
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, refs(e.Object))
		},
	}
}
