package devicetainteviction

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// The cache's indexes: a pool's slices, to look devices up; the claims with a device
// allocated from a pool, to find the pods a slice's taints concern; the pods of a PodGroup
// ("<namespace>/<name>"), for claims reserved for the group.
const (
	slicesByPool = "devicetainteviction.spec.pool"
	claimsByPool = "devicetainteviction.status.allocation.pools"
	podsByGroup  = "devicetainteviction.spec.schedulingGroup.podGroupName"
)

var (
	sliceIndex = index.Index{Object: &resourceapi.ResourceSlice{}, Field: slicesByPool, Extract: func(obj client.Object) []string {
		s := obj.(*resourceapi.ResourceSlice)
		return []string{poolKey(s.Spec.Driver, s.Spec.Pool.Name)}
	}}
	claimIndex = index.Index{Object: &resourceapi.ResourceClaim{}, Field: claimsByPool, Extract: func(obj client.Object) []string {
		c := obj.(*resourceapi.ResourceClaim)
		if c.Status.Allocation == nil {
			return nil
		}
		var keys []string
		for _, d := range c.Status.Allocation.Devices.Results {
			keys = append(keys, poolKey(d.Driver, d.Pool))
		}
		return keys
	}}
	groupIndex = index.Index{Object: &corev1.Pod{}, Field: podsByGroup, Extract: func(obj client.Object) []string {
		p := obj.(*corev1.Pod)
		if p.Spec.SchedulingGroup == nil || p.Spec.SchedulingGroup.PodGroupName == nil {
			return nil
		}
		return []string{p.Namespace + "/" + *p.Spec.SchedulingGroup.PodGroupName}
	}}
)

func poolKey(driver, pool string) string { return driver + "/" + pool }

// podsOfClaim are the pods a claim is reserved for: by name, or, with PodGroups on, as the
// pods of a PodGroup it is reserved for (a reservation that may outlive the gate).
func (r *Reconciler) podsOfClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	claim := obj.(*resourceapi.ResourceClaim)
	var reqs []reconcile.Request
	for _, c := range claim.Status.ReservedFor {
		switch {
		case c.APIGroup == "" && c.Resource == "pods":
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: claim.Namespace, Name: c.Name}})
		case c.APIGroup == schedulingv1beta1.GroupName && c.Resource == "podgroups" && r.PodGroups:
			pods := &corev1.PodList{}
			if err := r.Client.List(ctx, pods, client.MatchingFields{podsByGroup: claim.Namespace + "/" + c.Name}); err != nil {
				log.FromContext(ctx).Error(err, "Listing the pods of a PodGroup", "podGroup", c.Name)
				continue
			}
			for i := range pods.Items {
				reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
			}
		}
	}
	return reqs
}

// podsOfSlice are the pods of the claims allocated from the slice's pool.
func (r *Reconciler) podsOfSlice(ctx context.Context, obj client.Object) []reconcile.Request {
	s := obj.(*resourceapi.ResourceSlice)
	claims := &resourceapi.ResourceClaimList{}
	if err := r.Client.List(ctx, claims, client.MatchingFields{claimsByPool: poolKey(s.Spec.Driver, s.Spec.Pool.Name)}); err != nil {
		log.FromContext(ctx).Error(err, "Listing the claims of a pool", "resourceSlice", s.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range claims.Items {
		reqs = append(reqs, r.podsOfClaim(ctx, &claims.Items[i])...)
	}
	return reqs
}

// podsOfRule are the pods of the claims with a device the rule selects.
func (r *Reconciler) podsOfRule(ctx context.Context, obj client.Object) []reconcile.Request {
	rule := obj.(*resourceapi.DeviceTaintRule)
	claims := &resourceapi.ResourceClaimList{}
	if err := r.Client.List(ctx, claims); err != nil {
		log.FromContext(ctx).Error(err, "Listing claims", "deviceTaintRule", rule.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range claims.Items {
		claim := &claims.Items[i]
		if claim.Status.Allocation == nil {
			continue
		}
		for _, d := range claim.Status.Allocation.Devices.Results {
			if ruleMatchesDevice(rule, d.Driver, d.Pool, d.Device) {
				reqs = append(reqs, r.podsOfClaim(ctx, claim)...)
				break
			}
		}
	}
	return reqs
}

// podChanges passes, as upstream's pod handler, pods appearing or going and changes of
// their binding or their claims' statuses.
var podChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
		return old.Spec.NodeName != cur.Spec.NodeName ||
			!equality.Semantic.DeepEqual(old.Status.ResourceClaimStatuses, cur.Status.ResourceClaimStatuses)
	},
}

// claimChanges passes changes of a claim's allocation or reservations.
var claimChanges = predicate.Funcs{
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld.(*resourceapi.ResourceClaim), e.ObjectNew.(*resourceapi.ResourceClaim)
		return old.UID != cur.UID ||
			!equality.Semantic.DeepEqual(old.Status.Allocation, cur.Status.Allocation) ||
			!equality.Semantic.DeepEqual(old.Status.ReservedFor, cur.Status.ReservedFor)
	},
}

// SetupWithManager reconciles pods (and the pods of claims, slices and rules that change),
// and, with rules on, DeviceTaintRules' status. The cache must index by sliceIndex and
// claimIndex.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.pending = map[types.NamespacedName]types.UID{}
	r.evicted = map[types.UID]int64{}
	r.ruleEvents = make(chan event.GenericEvent, 1024)

	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(podChanges)).
		Watches(&resourceapi.ResourceClaim{}, handler.EnqueueRequestsFromMapFunc(r.podsOfClaim), builder.WithPredicates(claimChanges)).
		Watches(&resourceapi.ResourceSlice{}, handler.EnqueueRequestsFromMapFunc(r.podsOfSlice)).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName), MaxConcurrentReconciles: workers})
	if r.Rules {
		b = b.Watches(&resourceapi.DeviceTaintRule{}, handler.EnqueueRequestsFromMapFunc(r.podsOfRule),
			builder.WithPredicates(predicate.GenerationChangedPredicate{}))
	}
	if err := b.Complete(r); err != nil {
		return err
	}
	if !r.Rules {
		return nil
	}
	// A rule's status: when it appears or its spec changes (not on its own status
	// writes), and when the pods' evictions it causes change.
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-rules").
		For(&resourceapi.DeviceTaintRule{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		WatchesRawSource(source.Channel(r.ruleEvents, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName + "-rules"), MaxConcurrentReconciles: workers}).
		Complete(ruleReconciler{r})
}
