// Package ephemeralvolume is upstream's ephemeral-volume-controller: for every generic
// ephemeral volume of a pod it creates the PersistentVolumeClaim "<pod>-<volume>" from the
// volume's claim template, controlled by the pod so that it goes with the pod. A claim of
// that name that the pod does not control is never touched: the pod gets a Warning Event.
package ephemeralvolume

import (
	"context"
	"fmt"
	"maps"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/ephemeral"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/index"
)

const (
	// ControllerName is the controller's name in --controllers and its client's name.
	ControllerName = "ephemeral-volume-controller"
	// EventSource is the component upstream's Events report.
	EventSource = "ephemeral_volume"
	// ReasonFailedBinding is the reason of the Warning Event on a pod whose claim cannot be
	// made (upstream's volume events.FailedBinding).
	ReasonFailedBinding = "FailedBinding"
)

// Reconciler creates the claims of one pod's generic ephemeral volumes.
type Reconciler struct {
	// Client reads pods and claims from the cache and creates claims.
	Client   client.Client
	Recorder recorder.EventRecorder
}

// Pods and claims are read from the shared cache and Events recorded with kcm's identity;
// the controller's own identity creates the claims. Each claim's controller reference blocks
// the pod's deletion, which the API server's OwnerReferencesPermissionEnforcement admits only
// with update on pods/finalizers (upstream's role grants it for that).
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=create
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update

// Reconcile creates each missing claim of a live pod. The first volume that fails stops the
// sync with a Warning Event and is retried with backoff, as upstream.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}
	for i := range p.Spec.Volumes {
		v := &p.Spec.Volumes[i]
		if v.Ephemeral == nil {
			continue
		}
		if err := r.ensureClaim(ctx, p, v); err != nil {
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonFailedBinding, "CreateClaim", "ephemeral volume %s: %v", v.Name, err)
			return reconcile.Result{}, fmt.Errorf("pod %s, ephemeral volume %s: %w", req.NamespacedName, v.Name, err)
		}
	}
	return reconcile.Result{}, nil
}

// ensureClaim creates the volume's claim unless the cache already has it, and checks that an
// existing claim is the pod's own.
func (r *Reconciler) ensureClaim(ctx context.Context, p *corev1.Pod, v *corev1.Volume) error {
	name := ephemeral.VolumeClaimName(p, v)
	existing := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, existing)
	switch {
	case err == nil:
		return ephemeral.VolumeIsForPod(p, existing)
	case client.IgnoreNotFound(err) != nil:
		return err
	}
	pvc := ClaimFor(p, v)
	createAttempts.Inc()
	if err := r.Client.Create(ctx, pvc); err != nil {
		createFailures.Inc()
		return fmt.Errorf("create PVC %s: %w", name, err)
	}
	log.FromContext(ctx).V(3).Info("Created PVC for ephemeral volume", "volume", v.Name, "PVC", name)
	return nil
}

// ClaimFor is the claim of a pod's generic ephemeral volume: named "<pod>-<volume>", with the
// template's labels, annotations and spec, controlled by the pod (blocking its deletion in
// the foreground, so the claim goes first).
func ClaimFor(p *corev1.Pod, v *corev1.Volume) *corev1.PersistentVolumeClaim {
	tmpl := v.Ephemeral.VolumeClaimTemplate
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: p.Namespace,
			Name:      ephemeral.VolumeClaimName(p, v),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID,
				Controller: new(true), BlockOwnerDeletion: new(true),
			}},
			// Copies: the create decodes the response into the claim, and the template
			// belongs to the cached pod.
			Labels:      maps.Clone(tmpl.Labels),
			Annotations: maps.Clone(tmpl.Annotations),
		},
		Spec: *tmpl.Spec.DeepCopy(),
	}
}

// SetupWithManager registers the controller: pods are synced when they appear (their
// volumes are immutable), and again when one of their claims is deleted.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client and Recorder are required", ControllerName)
	}
	podAdded := predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return needsClaims(e.Object) },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	claimDeleted := predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		UpdateFunc:  func(event.UpdateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(podAdded)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.podsOfClaim), builder.WithPredicates(claimDeleted)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// podsOfClaim maps a deleted claim to the live pods whose volumes name it.
func (r *Reconciler) podsOfClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(obj.GetNamespace()), client.MatchingFields{index.PodClaimName: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Listing pods of a deleted PVC from the cache", "PVC", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range pods.Items {
		if needsClaims(&pods.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
		}
	}
	return reqs
}

// needsClaims reports whether a pod is live and has a generic ephemeral volume.
func needsClaims(obj client.Object) bool {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp != nil {
		return false
	}
	for i := range p.Spec.Volumes {
		if p.Spec.Volumes[i].Ephemeral != nil {
			return true
		}
	}
	return false
}
