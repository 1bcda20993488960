package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/scale"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/staleness"
)

// ControllerName is upstream's name of the controller.
const ControllerName = "horizontal-pod-autoscaler-controller"

// hpaResource is what the stale-cache guard tracks our status writes in.
var hpaResource = schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}

// staleRecheck is how soon a sync skipped for a stale cache runs again.
const staleRecheck = 100 * time.Millisecond

// Reconciler is upstream's HorizontalController: every HPA is synced when it appears, when
// its spec changes (HPAGeneration) and every SyncPeriod; each sync reads the target's /scale,
// proposes a count from the metrics, stabilizes and bounds it, writes /scale when it
// changes, and then the HPA's status.
type Reconciler struct {
	// Client reads HPAs and pods from the shared cache and writes HPA status as the
	// controller's own identity.
	Client client.Client
	// Scales reads and writes the /scale subresource of any kind.
	Scales scale.ScalesGetter
	// Mapper maps a scaleTargetRef's group and kind to its resources.
	Mapper meta.RESTMapper
	// Metrics reads the metrics APIs.
	Metrics  MetricsClient
	Recorder recorder.EventRecorder
	Clock    clock.PassiveClock

	// The --horizontal-pod-autoscaler-* flags.
	SyncPeriod              time.Duration
	DownscaleStabilization  time.Duration
	Tolerance               float64
	CPUInitializationPeriod time.Duration
	InitialReadinessDelay   time.Duration

	// ScaleToZero: HPAScaleToZero, a target at zero replicas is scaled from zero by Object
	// and External metrics once the HPA scaled it there (ScaledToZero condition).
	ScaleToZero bool
	// ConfigurableTolerance: HPAConfigurableTolerance, behavior's per-direction tolerance.
	ConfigurableTolerance bool
	// Generation: HPAGeneration, status.observedGeneration written and spec changes synced
	// at once.
	Generation bool
	// PodLevelResources: the PodLevelResources gate, pod-level requests used for utilization.
	PodLevelResources bool
	// Stale skips a sync while the cache has not caught up with our last status write
	// (StaleControllerConsistencyHPA); nil: never.
	Stale *staleness.Guard

	calc      *ReplicaCalculator
	selectors *selectorStore
	mu        sync.Mutex
	histories map[types.NamespacedName]*history
}

// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers,verbs=get;list;watch
// +kubebuilder:rbac:groups=autoscaling,resources=horizontalpodautoscalers/status,verbs=update
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get;update
// +kubebuilder:rbac:groups="",resources=pods,verbs=list;watch

// Reconcile syncs one HPA and asks to be called again a sync period later, whatever the
// outcome, as upstream's fixed-interval queue: an error is logged and retried at the next
// period, except a conflict on the status write, retried at once from a fresh read.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.NamespacedName
	logger := log.FromContext(ctx)
	if stale, wait := r.Stale.Stale(key); stale {
		logger.V(4).Info("Skipping sync: the cache has not caught up with our last status write")
		return reconcile.Result{RequeueAfter: max(min(wait, staleRecheck), time.Millisecond)}, nil
	}
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	if err := r.Client.Get(ctx, key, hpa); err != nil {
		if apierrors.IsNotFound(err) {
			logger.Info("Horizontal Pod Autoscaler has been deleted")
			r.forget(key)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if r.selectors.Register(key) {
		numHorizontalPodAutoscalers.Inc()
	}

	start := r.Clock.Now()
	action, err := r.reconcileAutoscaler(ctx, hpa)
	errLabel := errorNone
	switch {
	case errors.Is(err, errSpec):
		errLabel = errorSpec
	case err != nil:
		errLabel = errorInternal
	}
	observeReconciliation(action, errLabel, r.Clock.Since(start))
	if err != nil {
		if apierrors.IsConflict(err) {
			return reconcile.Result{}, err
		}
		logger.Error(err, "Sync failed; retrying at the next sync period")
	}
	return reconcile.Result{RequeueAfter: r.SyncPeriod}, nil
}

// forget drops what the Reconciler keeps of a deleted HPA.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	delete(r.histories, key)
	r.mu.Unlock()
	if r.selectors.Delete(key) {
		numHorizontalPodAutoscalers.Dec()
	}
	r.Stale.Clear(key)
}

// history is the HPA's recommendations and rescales; only the worker syncing the HPA
// touches them.
func (r *Reconciler) history(key types.NamespacedName) *history {
	r.mu.Lock()
	defer r.mu.Unlock()
	h := r.histories[key]
	if h == nil {
		h = &history{}
		r.histories[key] = h
	}
	return h
}

// reconcileAutoscaler is one sync of hpa (a copy of the cached one): observe the target's
// scale, propose from the metrics, normalize, write /scale, then status. It returns the
// action taken for upstream's metrics.
func (r *Reconciler) reconcileAutoscaler(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (action string, retErr error) {
	logger := log.FromContext(ctx)
	key := client.ObjectKeyFromObject(hpa)
	original := hpa.Status.DeepCopy()
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)

	// Observe: the target's scale.
	sc, targetGR, getErr, err := r.getScale(ctx, hpa, reference)
	if err != nil {
		r.event(hpa, corev1.EventTypeWarning, "FailedGetScale", getErr.Error())
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", getErr)
		if err := r.updateStatusIfNeeded(ctx, original, hpa); err != nil {
			logger.Error(err, "Updating status")
		}
		return actionNone, err
	}
	setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	now := r.Clock.Now()
	current := sc.Spec.Replicas
	h := r.history(key)
	h.recordInitial(current, now)

	minReplicas := int32(1)
	if hpa.Spec.MinReplicas != nil {
		minReplicas = *hpa.Spec.MinReplicas
	}
	hasObjectOrExternal := hasObjectOrExternalMetrics(hpa)
	scaledToZero := r.ScaleToZero && conditionTrue(hpa, autoscalingv2.ScaledToZero)

	// Compare: the count the metrics ask for, or the bound the current count is outside.
	var (
		desired  int32
		reason   string
		statuses []autoscalingv2.MetricStatus
		rescale  = true
		compute  = true
	)
	switch {
	case current == 0:
		// A target at zero is left alone (scaling is disabled), unless the HPA scaled it
		// there itself and can scale it back (HPAScaleToZero).
		if !(minReplicas != 0 && scaledToZero) && !(scaledToZero && hasObjectOrExternal) {
			compute, rescale = false, false
			setCondition(hpa, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
			if !r.ScaleToZero {
				removeCondition(hpa, autoscalingv2.ScaledToZero)
			}
		}
	case current > hpa.Spec.MaxReplicas:
		reason, desired, compute = "Current number of replicas above Spec.MaxReplicas", hpa.Spec.MaxReplicas, false
	case current < minReplicas:
		reason, desired, compute = "Current number of replicas below Spec.MinReplicas", minReplicas, false
	}
	if compute {
		p, err := r.computeReplicasForMetrics(ctx, hpa, sc)
		statuses = p.Statuses
		if err != nil && p.Replicas == -1 {
			r.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false)
			if err := r.updateStatusIfNeeded(ctx, original, hpa); err != nil {
				logger.Error(err, "Updating status")
			}
			r.event(hpa, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", err.Error())
			return actionNone, fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference, err)
		}
		// Some metrics failed but the others scale up: scale, and report the failure.
		retErr = err
		logger.V(4).Info("Proposing desired replicas", "desiredReplicas", p.Replicas, "metric", p.Metric,
			"tolerances", r.tolerances(hpa), "timestamp", p.Timestamp, "scaleTarget", reference)
		rescaleMetric := ""
		if p.Replicas > desired {
			desired, rescaleMetric = p.Replicas, p.Metric
		}
		if desired > current {
			reason = fmt.Sprintf("%s above target", rescaleMetric)
		}
		if desired < current {
			reason = "All metrics below target"
		}
		lim := limits{Current: current, Min: minReplicas, Max: hpa.Spec.MaxReplicas}
		var n normalized
		if hpa.Spec.Behavior == nil {
			n = normalize(h, lim, desired, r.DownscaleStabilization, now)
		} else {
			n = normalizeWithBehavior(h, lim, desired, withDefaultWindow(hpa.Spec.Behavior, r.DownscaleStabilization), now)
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, n.AbleReason, "%s", n.AbleMessage)
		limited := corev1.ConditionFalse
		if n.Limited {
			limited = corev1.ConditionTrue
		}
		setCondition(hpa, autoscalingv2.ScalingLimited, limited, n.LimitedReason, "%s", n.LimitedMessage)
		desired = n.Replicas
		// Scaling from zero with minReplicas raised meanwhile goes at least to minReplicas.
		if current == 0 && minReplicas != 0 && scaledToZero && desired < minReplicas {
			desired = minReplicas
			if reason == "" {
				reason = "Current number of replicas below Spec.MinReplicas"
			}
		}
		rescale = desired != current
	}

	// Act: write /scale.
	action = actionNone
	if rescale {
		if err := r.writeScale(ctx, hpa, sc, targetGR, desired); err != nil {
			r.event(hpa, corev1.EventTypeWarning, "FailedRescale", fmt.Sprintf("New size: %d; reason: %s; error: %v", desired, reason, err.Error()))
			setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: %v", err)
			r.setStatus(hpa, current, hpa.Status.DesiredReplicas, statuses, false)
			if err := r.updateStatusIfNeeded(ctx, original, hpa); err != nil {
				logger.Error(err, "Updating status")
			}
			return actionNone, fmt.Errorf("failed to rescale %s: %w", reference, err)
		}
		setCondition(hpa, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", "the HPA controller was able to update the target scale to %d", desired)
		r.event(hpa, corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", desired, reason))
		h.recordScale(hpa.Spec.Behavior, current, desired, r.Clock.Now())
		logger.Info("Successfully rescaled", "currentReplicas", current, "desiredReplicas", desired, "reason", reason)
		// ScaledToZero is set on every rescale, so that it is never stale.
		switch {
		case !r.ScaleToZero:
			removeCondition(hpa, autoscalingv2.ScaledToZero)
		case current > 0 && desired == 0 && minReplicas == 0 && hasObjectOrExternal:
			setCondition(hpa, autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero")
		default:
			setCondition(hpa, autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero")
		}
		action = actionFor(desired, current)
	} else {
		logger.V(4).Info("Decided not to scale", "scaleTarget", reference, "desiredReplicas", desired, "lastScaleTime", hpa.Status.LastScaleTime)
		desired = current
	}

	// Status.
	r.setStatus(hpa, current, desired, statuses, rescale)
	desiredReplicasCount.WithLabelValues(hpa.Namespace, hpa.Name).Set(float64(desired))
	if err := r.updateStatusIfNeeded(ctx, original, hpa); err != nil {
		return action, err
	}
	return action, retErr
}

// getScale reads the target's /scale through each of its kind's resources in turn. On
// failure it returns the error to report (getErr) and the one to return.
func (r *Reconciler) getScale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, reference string) (*autoscalingv1.Scale, schema.GroupResource, error, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, err, fmt.Errorf("invalid API version in scale target reference: %v%w", err, errSpec)
	}
	mappings, err := r.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, schema.GroupResource{}, err, fmt.Errorf("unable to determine resource for scale target reference: %w", err)
	}
	var firstErr error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := r.Scales.Scales(hpa.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil, nil
		}
		if i == 0 {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, firstErr, fmt.Errorf("failed to query scale subresource for %s: %w", reference, firstErr)
}

// writeScale updates the target's /scale to replicas, re-reading it after a conflict.
func (r *Reconciler) writeScale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, sc *autoscalingv1.Scale, gr schema.GroupResource, replicas int32) error {
	scales := r.Scales.Scales(hpa.Namespace)
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc.Spec.Replicas = replicas
		_, err := scales.Update(ctx, gr, sc, metav1.UpdateOptions{})
		if err == nil {
			return nil
		}
		if latest, getErr := scales.Get(ctx, gr, hpa.Spec.ScaleTargetRef.Name, metav1.GetOptions{}); getErr == nil {
			*sc = *latest
		} else {
			log.FromContext(ctx).Error(getErr, "Getting the latest scale during conflict retry")
		}
		return err
	})
}

// setStatus rebuilds the status from this sync, keeping the conditions and the last scale
// time (now, when rescaled).
func (r *Reconciler) setStatus(hpa *autoscalingv2.HorizontalPodAutoscaler, current, desired int32, statuses []autoscalingv2.MetricStatus, rescaled bool) {
	hpa.Status = autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: current,
		DesiredReplicas: desired,
		LastScaleTime:   hpa.Status.LastScaleTime,
		CurrentMetrics:  statuses,
		Conditions:      hpa.Status.Conditions,
	}
	if r.Generation {
		g := hpa.Generation
		hpa.Status.ObservedGeneration = &g
	}
	if rescaled {
		t := metav1.NewTime(r.Clock.Now())
		hpa.Status.LastScaleTime = &t
	}
}

// updateStatusIfNeeded writes the status when this sync changed it. The write carries the
// resourceVersion read (conditions' transition times and the last scale time depend on the
// old status): a conflict is returned.
func (r *Reconciler) updateStatusIfNeeded(ctx context.Context, original *autoscalingv2.HorizontalPodAutoscalerStatus, hpa *autoscalingv2.HorizontalPodAutoscaler) error {
	if equality.Semantic.DeepEqual(original, &hpa.Status) {
		return nil
	}
	if err := patch.Status(ctx, r.Client, hpa); err != nil {
		r.event(hpa, corev1.EventTypeWarning, "FailedUpdateStatus", err.Error())
		return fmt.Errorf("failed to update status for %s: %w", hpa.Name, err)
	}
	r.Stale.WroteAt(client.ObjectKeyFromObject(hpa), hpa.UID, hpaResource, hpa.ResourceVersion)
	log.FromContext(ctx).V(2).Info("Successfully updated status")
	return nil
}

// event writes an Event about the HPA.
func (r *Reconciler) event(hpa *autoscalingv2.HorizontalPodAutoscaler, eventType, reason, note string) {
	r.Recorder.Eventf(hpa, nil, eventType, reason, reason, "%s", note)
}

// hasObjectOrExternalMetrics: only these metrics can scale a target up from zero.
func hasObjectOrExternalMetrics(hpa *autoscalingv2.HorizontalPodAutoscaler) bool {
	for _, m := range hpa.Spec.Metrics {
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			return true
		}
	}
	return false
}

// prepare builds the Reconciler's own state from its injected dependencies.
func (r *Reconciler) prepare() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.calc = &ReplicaCalculator{Metrics: r.Metrics, Pods: r.Client, CPUInitializationPeriod: r.CPUInitializationPeriod,
		DelayOfInitialReadinessStatus: r.InitialReadinessDelay, Clock: r.Clock, PodLevelResources: r.PodLevelResources}
	r.selectors = newSelectorStore()
	r.histories = map[types.NamespacedName]*history{}
}

// SetupWithManager registers the controller: HPAs are synced when created, when their spec
// changes (HPAGeneration; otherwise, as upstream, at the next period) and when deleted (to
// forget them); other updates, the controller's own status writes among them, wait for the
// period, as upstream's rate-limited requeue of updates.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Scales == nil || r.Mapper == nil || r.Metrics == nil || r.Recorder == nil {
		return errors.New(ControllerName + ": Client, Scales, Mapper, Metrics and Recorder are required")
	}
	if r.SyncPeriod <= 0 {
		return errors.New(ControllerName + ": the sync period must be positive")
	}
	r.prepare()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&autoscalingv2.HorizontalPodAutoscaler{}, builder.WithPredicates(updatesSynced(r.Generation))).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// updatesSynced lets creations and deletions through, and of the updates only spec changes
// with HPAGeneration (the API server bumps the generation on spec changes only): every other
// update, the controller's own status writes among them, waits for the next period, as
// upstream's rate-limited requeue of updates (which avoids a hot loop, issue 42715).
func updatesSynced(generation bool) predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return generation && e.ObjectOld.GetGeneration() != e.ObjectNew.GetGeneration()
		},
	}
}
