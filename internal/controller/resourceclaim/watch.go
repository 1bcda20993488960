package resourceclaim

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

// The cache's indexes the controller lists by. Keys of the pod indexes are bare names; list
// with client.InNamespace.
var (
	// podsByClaim: pods by the ResourceClaims their spec.resourceClaims resolve to (a
	// claim's name, or the generated claim their status records), so a claim's change
	// reaches its pods.
	podsByClaim = index.Index{Object: &corev1.Pod{}, Field: "spec.resourceClaims.resourceClaimName", Extract: podClaimNames}
	// podsByClaimTemplate: pods by the ResourceClaimTemplates they name, so a template
	// created after its pod brings the pod back.
	podsByClaimTemplate = index.Index{Object: &corev1.Pod{}, Field: "spec.resourceClaims.resourceClaimTemplateName", Extract: podTemplateNames}
	// claimsByController: claims by their controller's UID, to find a pod's generated claims.
	claimsByController = index.Index{Object: &resourceapi.ResourceClaim{}, Field: index.ControllerUID, Extract: index.ControllerUIDOf}
)

func podClaimNames(obj client.Object) []string {
	p := obj.(*corev1.Pod)
	var names []string
	for i := range p.Spec.ResourceClaims {
		// A claim not generated yet, or an API this client does not know, is not indexed.
		if name, _, err := resourceclaim.Name(p, &p.Spec.ResourceClaims[i]); err == nil && name != nil {
			names = append(names, *name)
		}
	}
	return names
}

func podTemplateNames(obj client.Object) []string {
	p := obj.(*corev1.Pod)
	var names []string
	for _, pc := range p.Spec.ResourceClaims {
		if pc.ResourceClaimTemplateName != nil {
			names = append(names, *pc.ResourceClaimTemplateName)
		}
	}
	return names
}

// SetupWithManager registers the two reconcilers, each with workers workers. Pods are synced
// when they need work (a claim to generate or to reserve), and again when one of their claims
// or templates changes; claims when they change and when a pod using them is done or gone.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	r.init()
	podsNeedingWork := predicate.Funcs{
		CreateFunc:  func(e event.CreateEvent) bool { return r.podNeedsWork(e.Object) },
		UpdateFunc:  func(e event.UpdateEvent) bool { return r.podNeedsWork(e.ObjectNew) },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(podsNeedingWork)).
		Watches(&resourceapi.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(r.podsOfClaim)).
		Watches(&resourceapi.ResourceClaimTemplate{}, handler.EnqueueRequestsFromMapFunc(r.podsOfTemplate)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(podReconciler{r})
	if err != nil {
		return err
	}
	claimChanged := predicate.Funcs{
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-claims").
		For(&resourceapi.ResourceClaim{}, builder.WithPredicates(claimChanged)).
		Watches(&corev1.Pod{}, podReleases{r}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(claimReconciler{r})
}

// podNeedsWork reports whether a pod has work for the pod reconciler: a claim to generate
// from its template, or, once scheduled, an allocated claim to reserve for it.
func (r *Reconciler) podNeedsWork(obj client.Object) bool {
	p, ok := obj.(*corev1.Pod)
	if !ok || p.DeletionTimestamp != nil || isTerminal(p) {
		return false
	}
	ctx := context.Background()
	for i := range p.Spec.ResourceClaims {
		pc := &p.Spec.ResourceClaims[i]
		name, mustCheckOwner, err := resourceclaim.Name(p, pc)
		if err != nil {
			// Not generated yet, or an API this client does not know: the sync says which.
			return true
		}
		if name == nil {
			continue
		}
		claim := &resourceapi.ResourceClaim{}
		err = r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: *name}, claim)
		switch {
		case client.IgnoreNotFound(err) != nil:
			return true
		case err != nil:
			if pc.ResourceClaimTemplateName != nil {
				// Recorded but gone: made again.
				return true
			}
			// A claim the user must create.
			continue
		}
		if mustCheckOwner && resourceclaim.IsForPod(p, claim, false) != nil {
			continue
		}
		if p.Spec.NodeName != "" && claim.Status.Allocation != nil &&
			!resourceclaim.IsReservedForPod(p, claim, false) && resourceclaim.CanBeReserved(claim) {
			return true
		}
	}
	return false
}

// podsOfClaim maps a claim to the pods using it that need work. A claim this controller
// created is in the cache from its first event on.
func (r *Reconciler) podsOfClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	r.forgetCreated(obj)
	return r.podsNeedingWork(ctx, obj, podsByClaim.Field)
}

// podsOfTemplate maps a template to the pods naming it that need work.
func (r *Reconciler) podsOfTemplate(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.podsNeedingWork(ctx, obj, podsByClaimTemplate.Field)
}

func (r *Reconciler) podsNeedingWork(ctx context.Context, obj client.Object, field string) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(obj.GetNamespace()), client.MatchingFields{field: obj.GetName()}); err != nil {
		log.FromContext(ctx).Error(err, "Listing pods from the cache", "object", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for i := range pods.Items {
		if r.podNeedsWork(&pods.Items[i]) {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
		}
	}
	return reqs
}

// podReleases maps a pod's events to the claims it releases: it remembers deleted pods, and a
// pod that no longer needs its claims (deleted, terminated, or deleted before scheduling)
// brings its spec's claims and its extended-resource claim to the claim reconciler.
type podReleases struct{ r *Reconciler }

type claimQueue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (h podReleases) Create(_ context.Context, e event.CreateEvent, q claimQueue) {
	h.released(e.Object, false, q)
}

func (h podReleases) Update(_ context.Context, e event.UpdateEvent, q claimQueue) {
	h.released(e.ObjectNew, false, q)
}

func (h podReleases) Delete(_ context.Context, e event.DeleteEvent, q claimQueue) {
	h.released(e.Object, true, q)
}

func (h podReleases) Generic(context.Context, event.GenericEvent, claimQueue) {}

func (h podReleases) released(obj client.Object, deleted bool, q claimQueue) {
	p, ok := obj.(*corev1.Pod)
	if !ok {
		return
	}
	// The extended-resource claim is in the status, put there by the scheduler; it is
	// released whatever the gate says now, since it may have been made when it was on.
	extended := p.Status.ExtendedResourceClaimStatus
	if len(p.Spec.ResourceClaims) == 0 && extended == nil {
		return
	}
	if deleted {
		h.r.deleted.Add(p.UID, nil)
	}
	if needs, _ := podNeedsClaims(p, deleted); needs {
		return
	}
	for _, name := range podClaimNames(p) {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: name}})
	}
	if extended != nil {
		q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: p.Namespace, Name: extended.ResourceClaimName}})
	}
}
