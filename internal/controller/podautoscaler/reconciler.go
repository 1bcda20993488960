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
	"github.com/kcm/kcm/internal/track"
)

// ControllerName is upstream's name of the controller.
const ControllerName = "horizontal-pod-autoscaler-controller"

// hpaResource is what the stale-cache guard tracks our status writes in.
var hpaResource = schema.GroupResource{Group: "autoscaling", Resource: "horizontalpodautoscalers"}

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
	if res, skip := r.Stale.Skip(ctx, key); skip {
		return res, nil
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

// history is the HPA's recommendations and rescales as its last sync left them (nil: none
// yet). Decisions work on copies; only the worker syncing the HPA replaces them
// (keepHistory).
func (r *Reconciler) history(key types.NamespacedName) *history {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.histories[key]
}

// keepHistory stores the HPA's history as a sync's decision left it.
func (r *Reconciler) keepHistory(key types.NamespacedName, h *history) {
	r.mu.Lock()
	r.histories[key] = h
	r.mu.Unlock()
}

// reconcileAutoscaler is one sync of hpa (a copy of the cached one): observe the target's
// scale and the metrics, decide (decide.go), write /scale, then write the status once,
// whatever happened. It returns the action taken for upstream's metrics.
func (r *Reconciler) reconcileAutoscaler(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler) (string, error) {
	logger := log.FromContext(ctx)
	key := client.ObjectKeyFromObject(hpa)
	ref := hpa.Spec.ScaleTargetRef
	reference := fmt.Sprintf("%s/%s/%s", ref.Kind, hpa.Namespace, ref.Name)
	in := syncInput{Spec: &hpa.Spec, Status: &hpa.Status, ScaleToZero: r.ScaleToZero, Window: r.DownscaleStabilization}
	if r.Generation {
		g := hpa.Generation
		in.Generation = &g
	}

	// Observe: the target's scale, then the metrics unless its count alone decides.
	sc, targetGR, err := r.getScale(ctx, hpa, reference)
	in.Now = r.Clock.Now()
	if err != nil {
		in.ScaleErr = err
		r.event(hpa, corev1.EventTypeWarning, "FailedGetScale", scaleCause(err).Error())
	} else {
		in.Current, in.History = sc.Spec.Replicas, r.history(key)
		if byCount(in).Metrics {
			p, err := r.computeReplicasForMetrics(ctx, hpa, sc)
			in.Proposal, in.MetricsErr = &p, err
		}
	}

	// Compare: the count, the conditions and the status.
	p := decide(in)
	if in.Proposal != nil && !p.MetricsFailed {
		logger.V(4).Info("Proposing desired replicas", "desiredReplicas", in.Proposal.Replicas, "metric", in.Proposal.Metric,
			"tolerances", r.tolerances(hpa), "timestamp", in.Proposal.Timestamp, "scaleTarget", reference)
	}

	// Act: write /scale.
	action, failed := actionNone, error(nil)
	switch {
	case in.ScaleErr != nil:
		failed = in.ScaleErr
	case p.MetricsFailed:
		failed = fmt.Errorf("failed to compute desired number of replicas based on listed metrics for %s: %w", reference, in.MetricsErr)
	case p.Rescale:
		err := r.rescale(ctx, hpa, sc, targetGR, in.Current, p)
		p = rescaled(in, p, err, r.Clock.Now())
		if err != nil {
			failed = fmt.Errorf("failed to rescale %s: %w", reference, err)
		} else {
			action = actionFor(p.Desired, in.Current)
		}
	default:
		logger.V(4).Info("Decided not to scale", "scaleTarget", reference, "desiredReplicas", p.Desired, "lastScaleTime", hpa.Status.LastScaleTime)
	}
	if p.History != nil {
		r.keepHistory(key, p.History)
	}

	// Status: written once. A failed sync logs a failed write and returns its own error.
	if failed == nil {
		desiredReplicasCount.WithLabelValues(hpa.Namespace, hpa.Name).Set(float64(p.Status.DesiredReplicas))
	}
	original := hpa.Status
	hpa.Status = p.Status
	statusErr := r.updateStatusIfNeeded(ctx, &original, hpa)
	if failed != nil {
		if statusErr != nil {
			logger.Error(statusErr, "Updating status")
		}
		if p.MetricsFailed {
			r.event(hpa, corev1.EventTypeWarning, "FailedComputeMetricsReplicas", in.MetricsErr.Error())
		}
		return actionNone, failed
	}
	if statusErr != nil {
		return action, statusErr
	}
	// Some metrics failed but the others scaled: the sync reports the failure.
	return action, in.MetricsErr
}

// getScale reads the target's /scale through each of its kind's resources in turn. Its
// error is a *scaleError: the cause to report and the error to return.
func (r *Reconciler) getScale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, reference string) (*autoscalingv1.Scale, schema.GroupResource, error) {
	ref := hpa.Spec.ScaleTargetRef
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return nil, schema.GroupResource{}, &scaleError{Cause: err, err: fmt.Errorf("invalid API version in scale target reference: %v%w", err, errSpec)}
	}
	mappings, err := r.Mapper.RESTMappings(schema.GroupKind{Group: gv.Group, Kind: ref.Kind})
	if err != nil {
		return nil, schema.GroupResource{}, &scaleError{Cause: err, err: fmt.Errorf("unable to determine resource for scale target reference: %w", err)}
	}
	var firstErr error
	for i, m := range mappings {
		gr := m.Resource.GroupResource()
		sc, err := r.Scales.Scales(hpa.Namespace).Get(ctx, gr, ref.Name, metav1.GetOptions{})
		if err == nil {
			return sc, gr, nil
		}
		if i == 0 {
			firstErr = err
		}
	}
	if firstErr == nil {
		firstErr = errors.New("unrecognized resource")
	}
	return nil, schema.GroupResource{}, &scaleError{Cause: firstErr, err: fmt.Errorf("failed to query scale subresource for %s: %w", reference, firstErr)}
}

// rescale writes the plan's count to /scale and reports it: an Event either way, a log line
// on success.
func (r *Reconciler) rescale(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, sc *autoscalingv1.Scale, gr schema.GroupResource, current int32, p plan) error {
	if err := r.writeScale(ctx, hpa, sc, gr, p.Desired); err != nil {
		r.event(hpa, corev1.EventTypeWarning, "FailedRescale", fmt.Sprintf("New size: %d; reason: %s; error: %v", p.Desired, p.Reason, err.Error()))
		return err
	}
	r.event(hpa, corev1.EventTypeNormal, "SuccessfulRescale", fmt.Sprintf("New size: %d; reason: %s", p.Desired, p.Reason))
	log.FromContext(ctx).Info("Successfully rescaled", "currentReplicas", current, "desiredReplicas", p.Desired, "reason", p.Reason)
	return nil
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
	// What the per-object view (/debug/controllers/<controller>/objects/...) shows of a key.
	track.For(ControllerName).StaleFrom(r.Stale.View)
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
