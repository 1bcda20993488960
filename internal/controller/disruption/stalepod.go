package disruption

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/pod"
)

// StalePodDisruptionTimeout is how long a pod may carry a True DisruptionTarget condition
// without being deleted before the condition is set to False.
const StalePodDisruptionTimeout = 2 * time.Minute

// StalePodControllerName names the second loop of disruption-controller, which upstream
// runs on its own queue beside the budgets'.
const StalePodControllerName = "disruption-controller-stale-pod-disruption"

// StalePodReconciler clears the DisruptionTarget condition of pods that the eviction API
// (or another API client) marked for disruption but that were not deleted in time.
type StalePodReconciler struct {
	Client client.Client
	Clock  clock.PassiveClock
	// Timeout defaults to StalePodDisruptionTimeout; tests shorten it.
	Timeout time.Duration
}

// What the stale DisruptionTarget cleanup's client (disruption-controller's) does: the
// pod's status update, as upstream's UpdateStatus.
//
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=update

// Reconcile sets a stale DisruptionTarget condition to False, or comes back when it will be
// stale.
func (r *StalePodReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	now := r.Clock.Now()
	stale, wait := staleDisruption(p, r.Timeout, now)
	if !stale {
		return reconcile.Result{}, nil
	}
	if wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	setDisruptionTargetFalse(p, now)
	// Optimistic: a new eviction may have set the condition again since our read, and the
	// update replaces the whole conditions list (upstream's UpdateStatus locks too).
	if err := patch.Status(ctx, r.Client, p); err != nil {
		return reconcile.Result{}, fmt.Errorf("clearing DisruptionTarget condition: %w", err)
	}
	log.FromContext(ctx).V(2).Info("Reset stale DisruptionTarget condition to False")
	return reconcile.Result{}, nil
}

// staleDisruption reports whether the pod carries a DisruptionTarget condition that will be
// stale, and how long until it is (0: it is). Conditions the kubelet adds never go stale (the
// pod may take arbitrarily long to terminate), nor do those of pods being deleted or finished.
func staleDisruption(p *corev1.Pod, timeout time.Duration, now time.Time) (bool, time.Duration) {
	if p.DeletionTimestamp != nil || pod.IsTerminal(p) {
		return false, 0
	}
	c := disruptionTarget(p)
	if c == nil || c.Status != corev1.ConditionTrue || c.Reason == corev1.PodReasonTerminationByKubelet {
		return false, 0
	}
	return true, max(timeout-now.Sub(c.LastTransitionTime.Time), 0)
}

func disruptionTarget(p *corev1.Pod) *corev1.PodCondition {
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.DisruptionTarget {
			return &p.Status.Conditions[i]
		}
	}
	return nil
}

// setDisruptionTargetFalse replaces the condition as upstream does: status False, no reason
// or message, transition at now, observed at the pod's generation.
func setDisruptionTargetFalse(p *corev1.Pod, now time.Time) {
	c := disruptionTarget(p)
	*c = corev1.PodCondition{
		Type:               corev1.DisruptionTarget,
		Status:             corev1.ConditionFalse,
		ObservedGeneration: p.Generation,
		LastTransitionTime: metav1.NewTime(now),
	}
}

// SetupWithManager watches the pods that carry a DisruptionTarget condition able to go stale.
func (r *StalePodReconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", StalePodControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.Timeout == 0 {
		r.Timeout = StalePodDisruptionTimeout
	}
	candidate := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		stale, _ := staleDisruption(obj.(*corev1.Pod), r.Timeout, r.Clock.Now())
		return stale
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(StalePodControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(candidate)).
		WithOptions(controller.Options{NewQueue: newStalePodQueue, MaxConcurrentReconciles: 1}).
		Complete(r)
}
