package devicetainteviction

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"
	metav1ac "k8s.io/client-go/applyconfigurations/meta/v1"
	resourceac "k8s.io/client-go/applyconfigurations/resource/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
)

// ruleReconciler writes a DeviceTaintRule's EvictionInProgress condition.
type ruleReconciler struct{ *Reconciler }

// Reconcile counts what the rule's taint does and applies the condition, at most every
// ruleStatusPeriod, as upstream. While pods still wait for eviction it comes back a period
// later, so the condition turns Completed once they are gone.
func (r ruleReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	rule := &resourceapi.DeviceTaintRule{}
	if err := r.Client.Get(ctx, req.NamespacedName, rule); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}

	// Observe the condition; not again within the period unless the spec changed.
	var existing metav1.Condition
	now := r.Clock.Now()
	if i := slices.IndexFunc(rule.Status.Conditions, func(c metav1.Condition) bool {
		return c.Type == resourceapi.DeviceTaintConditionEvictionInProgress
	}); i >= 0 {
		existing = rule.Status.Conditions[i]
		since := now.Sub(existing.LastTransitionTime.Time)
		if existing.ObservedGeneration == rule.Generation && since < ruleStatusPeriod {
			return reconcile.Result{RequeueAfter: ruleStatusPeriod - since}, nil
		}
	}
	counts, err := r.countRule(ctx, rule)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Compare and write.
	cond := ruleCondition(rule, counts)
	cond.LastTransitionTime = existing.LastTransitionTime
	if cond != existing {
		cond.LastTransitionTime = metav1.NewTime(now)
		log.FromContext(ctx).V(4).Info("Calculated new condition", "condition", cond)
		ac := resourceac.DeviceTaintRule(rule.Name).WithUID(rule.UID).WithStatus(resourceac.DeviceTaintRuleStatus().
			WithConditions(&metav1ac.ConditionApplyConfiguration{
				Type: &cond.Type, Status: &cond.Status, Reason: &cond.Reason, Message: &cond.Message,
				ObservedGeneration: &cond.ObservedGeneration, LastTransitionTime: &cond.LastTransitionTime,
			}))
		body, err := patch.ServerSideApply(ac)
		if err != nil {
			return reconcile.Result{}, err
		}
		if err := r.Client.Status().Patch(ctx, rule, body, client.FieldOwner(ControllerName), client.ForceOwnership); err != nil {
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			return reconcile.Result{}, err
		}
	}
	if counts.Pending > 0 && rule.Spec.Taint.Effect == resourceapi.DeviceTaintEffectNoExecute {
		return reconcile.Result{RequeueAfter: ruleStatusPeriod}, nil
	}
	return reconcile.Result{}, nil
}

// countRule counts the pods the rule's taint evicts (for effect None: would evict were it
// NoExecute, with the devices it selects), and the pods it evicted.
func (r ruleReconciler) countRule(ctx context.Context, rule *resourceapi.DeviceTaintRule) (ruleCounts, error) {
	r.mu.Lock()
	c := ruleCounts{Evicted: r.evicted[rule.UID]}
	r.mu.Unlock()
	switch rule.Spec.Taint.Effect {
	case resourceapi.DeviceTaintEffectNoExecute, resourceapi.DeviceTaintEffectNone:
	default:
		return c, nil
	}

	rules, err := r.taintRules(ctx)
	if err != nil {
		return c, err
	}
	if rule.Spec.Taint.Effect == resourceapi.DeviceTaintEffectNone {
		// As upstream, simulate the rule with effect NoExecute in place of the stored one.
		sim := rule.DeepCopy()
		sim.Spec.Taint.Effect = resourceapi.DeviceTaintEffectNoExecute
		rules = slices.DeleteFunc(rules, func(o *resourceapi.DeviceTaintRule) bool { return o.UID == rule.UID })
		rules = append(rules, sim)
		if c.SliceDevices, c.Allocated, err = r.countDevices(ctx, rule); err != nil {
			return c, err
		}
	}

	// Every pod in the cache, read only: not deep-copied (this runs every 10 s per pending rule).
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.UnsafeDisableDeepCopy); err != nil {
		return c, err
	}
	namespaces := sets.New[string]()
	for i := range pods.Items {
		pod := &pods.Items[i]
		if pod.DeletionTimestamp != nil || len(pod.Spec.ResourceClaims) == 0 {
			continue
		}
		e, err := r.podEviction(ctx, pod, rules)
		if err != nil {
			return c, err
		}
		if e.hasRule(rule.UID) {
			c.Pending++
			namespaces.Insert(pod.Namespace)
		}
	}
	c.Namespaces = int64(namespaces.Len())
	return c, nil
}

// countDevices counts the published devices (the newest generation of each pool) and the
// allocated devices the rule selects.
func (r ruleReconciler) countDevices(ctx context.Context, rule *resourceapi.DeviceTaintRule) (published, allocated int64, err error) {
	sliceList := &resourceapi.ResourceSliceList{}
	if err := r.Client.List(ctx, sliceList); err != nil {
		return 0, 0, err
	}
	newest := map[string]int64{}
	for _, s := range sliceList.Items {
		key := poolKey(s.Spec.Driver, s.Spec.Pool.Name)
		if g, ok := newest[key]; !ok || s.Spec.Pool.Generation > g {
			newest[key] = s.Spec.Pool.Generation
		}
	}
	for _, s := range sliceList.Items {
		if s.Spec.Pool.Generation != newest[poolKey(s.Spec.Driver, s.Spec.Pool.Name)] {
			continue
		}
		for _, d := range s.Spec.Devices {
			if ruleMatchesDevice(rule, s.Spec.Driver, s.Spec.Pool.Name, d.Name) {
				published++
			}
		}
	}
	claims := &resourceapi.ResourceClaimList{}
	if err := r.Client.List(ctx, claims); err != nil {
		return 0, 0, err
	}
	for _, claim := range claims.Items {
		if claim.Status.Allocation == nil {
			continue
		}
		for _, d := range claim.Status.Allocation.Devices.Results {
			if ruleMatchesDevice(rule, d.Driver, d.Pool, d.Device) {
				allocated++
			}
		}
	}
	return published, allocated, nil
}
