// Package podgroupprotection is upstream's podgroup-protection-controller: the API server's
// PodGroupProtection admission plugin stamps the scheduling.k8s.io/podgroup-protection
// finalizer on every new PodGroup, and this controller removes it from a PodGroup being
// deleted once no active (not yet terminated) pod names it in spec.schedulingGroup.
//
// As upstream, the decision reads the cache only: pods by the PodGroup they name, through an
// index holding active pods alone.
package podgroupprotection

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
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
	// ControllerName is upstream's controller name.
	ControllerName = "podgroup-protection-controller"
	// ClientName is upstream's client (and service account) name: the controller's name.
	ClientName = ControllerName
)

// Reconciler releases deleted PodGroups no active pod uses.
type Reconciler struct {
	// Client reads PodGroups and pods from the cache and writes PodGroups.
	Client client.Client
}

// PodGroups and pods are read from the shared cache (kcm's identity); the controller's own
// identity updates PodGroups to drop the finalizer.
// +kubebuilder:rbac:groups=scheduling.k8s.io,resources=podgroups,verbs=update

// Reconcile removes the finalizer of a PodGroup being deleted once no active pod names it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	pg := &schedulingv1beta1.PodGroup{}
	if err := r.Client.Get(ctx, req.NamespacedName, pg); err != nil {
		if apierrors.IsNotFound(err) {
			logger.V(4).Info("PodGroup not found, ignoring")
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !IsDeletionCandidate(pg) {
		return reconcile.Result{}, nil
	}

	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(pg.Namespace), client.MatchingFields{ActivePodGroupName: pg.Name}); err != nil {
		return reconcile.Result{}, fmt.Errorf("listing the active pods of PodGroup %s: %w", req, err)
	}
	if len(pods.Items) > 0 {
		logger.V(4).Info("Keeping PodGroup finalizer because it is still being used by pods", "pod", pods.Items[0].Name)
		return reconcile.Result{}, nil
	}

	updated := pg.DeepCopy()
	controllerutil.RemoveFinalizer(updated, Finalizer)
	if err := r.Client.Update(ctx, updated); err != nil {
		return reconcile.Result{}, fmt.Errorf("removing the protection finalizer from PodGroup %s: %w", req, err)
	}
	logger.V(3).Info("Removed protection finalizer from PodGroup")
	return reconcile.Result{}, nil
}

// SetupWithManager registers the controller: PodGroups being deleted with the finalizer,
// and the PodGroups of pods whose events may release them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&schedulingv1beta1.PodGroup{}, builder.WithPredicates(deletionCandidates())).
		Watches(&corev1.Pod{}, podHandler{}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// deletionCandidates passes PodGroup creations and updates that leave a deletion candidate,
// as upstream's PodGroup handler; deletions need nothing.
func deletionCandidates() predicate.Funcs {
	candidate := func(obj client.Object) bool {
		pg, ok := obj.(*schedulingv1beta1.PodGroup)
		return ok && IsDeletionCandidate(pg)
	}
	return predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return candidate(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return candidate(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
}

// podHandler enqueues the PodGroups PodEventGroups names for each pod event.
type podHandler struct{}

var _ handler.EventHandler = podHandler{}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (podHandler) Create(_ context.Context, e event.CreateEvent, q queue) {
	enqueue(q, e.Object, nil, asPod(e.Object))
}

func (podHandler) Update(_ context.Context, e event.UpdateEvent, q queue) {
	enqueue(q, e.ObjectNew, asPod(e.ObjectOld), asPod(e.ObjectNew))
}

func (podHandler) Delete(_ context.Context, e event.DeleteEvent, q queue) {
	enqueue(q, e.Object, asPod(e.Object), nil)
}

func (podHandler) Generic(context.Context, event.GenericEvent, queue) {}

func enqueue(q queue, obj client.Object, oldPod, newPod *corev1.Pod) {
	if oldPod == nil && newPod == nil {
		return
	}
	for _, name := range PodEventGroups(oldPod, newPod) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}})
	}
}

func asPod(obj client.Object) *corev1.Pod {
	pod, _ := obj.(*corev1.Pod)
	return pod
}
