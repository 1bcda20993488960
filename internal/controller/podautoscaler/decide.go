package podautoscaler

import (
	"errors"
	"fmt"
	"slices"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// This file holds one sync's decision, upstream's reconcileAutoscaler between reading /scale
// and writing it: from the target's count and the metrics' proposal, the count to write, the
// conditions with their reasons and messages, and the status to write. The functions are
// pure: they work on copies of the status and the history they are given and take the time
// from their input. The Reconciler observes before them, writes /scale and the status after.

// syncInput is what one sync decides from.
type syncInput struct {
	// Spec and Status are the HPA's as read; they are never modified.
	Spec   *autoscalingv2.HorizontalPodAutoscalerSpec
	Status *autoscalingv2.HorizontalPodAutoscalerStatus
	// Generation is the observedGeneration to write (HPAGeneration); nil: none is written.
	Generation *int64
	// ScaleErr is the failed read of the target's /scale (a *scaleError); when nil, Current
	// is the target's spec.replicas.
	ScaleErr error
	Current  int32
	// Proposal is the metrics' proposal, nil when they were not read (byCount says whether
	// they are); MetricsErr is their first failure.
	Proposal   *proposal
	MetricsErr error
	// History is the HPA's recommendations and rescales so far (nil: none yet).
	History *history
	// ScaleToZero is the HPAScaleToZero gate; Window is
	// --horizontal-pod-autoscaler-downscale-stabilization.
	ScaleToZero bool
	Window      time.Duration
	Now         time.Time
}

// plan is what one sync does and writes.
type plan struct {
	// Status is the status to write; when Rescale, rescaled completes it with the outcome of
	// the /scale write.
	Status autoscalingv2.HorizontalPodAutoscalerStatus
	// History is the HPA's history to keep; nil when the target's scale could not be read.
	History *history
	// Rescale: /scale is to be written to Desired, for Reason (the Events' words). Without
	// Rescale, Desired is the current count.
	Rescale bool
	Desired int32
	Reason  string
	// MetricsFailed: no count could be computed from the metrics; the status keeps the last
	// desired count, and the sync fails.
	MetricsFailed bool
}

// countDecision is what the target's count alone decides, before any metric is read.
type countDecision struct {
	// Disabled: the target is at zero and left there (scaling is disabled).
	Disabled bool
	// Metrics: the metrics decide; otherwise the count is brought to Desired, for Reason.
	Metrics bool
	Desired int32
	Reason  string
	// ScaledToZero: the HPA scaled the target to zero itself (HPAScaleToZero).
	ScaledToZero bool
}

// byCount is upstream's first switch: a target at zero is left alone unless the HPA scaled
// it there itself and can scale it back (HPAScaleToZero: minReplicas raised, or Object and
// External metrics to scale it up), a count outside minReplicas..maxReplicas is brought
// within it, any other count is the metrics' to decide.
func byCount(in syncInput) countDecision {
	minimum, maximum := minReplicas(in.Spec), in.Spec.MaxReplicas
	d := countDecision{ScaledToZero: in.ScaleToZero && conditionTrue(in.Status, autoscalingv2.ScaledToZero)}
	switch {
	case in.Current == 0:
		if !(minimum != 0 && d.ScaledToZero) && !(d.ScaledToZero && hasObjectOrExternalMetrics(in.Spec)) {
			d.Disabled = true
			return d
		}
		d.Metrics = true
	case in.Current > maximum:
		d.Desired, d.Reason = maximum, "Current number of replicas above Spec.MaxReplicas"
	case in.Current < minimum:
		d.Desired, d.Reason = minimum, "Current number of replicas below Spec.MinReplicas"
	default:
		d.Metrics = true
	}
	return d
}

// decide is one sync's decision: AbleToScale from the /scale read, then the count (byCount,
// or the metrics' proposal stabilized and bounded by normalize), ScalingActive from the
// metrics, ScalingLimited from the bounds, and the status, conditions set in upstream's
// order (their order in the list and their transition times depend on it).
func decide(in syncInput) plan {
	p := plan{Status: *in.Status.DeepCopy()}
	st := &p.Status
	if in.ScaleErr != nil {
		// Only the condition changes: the status is not rebuilt, as upstream.
		setCondition(st, in.Now, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedGetScale", "the HPA controller was unable to get the target's current scale: %v", scaleCause(in.ScaleErr))
		return p
	}
	setCondition(st, in.Now, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededGetScale", "the HPA controller was able to get the target's current scale")
	p.History = in.History.clone()
	p.History.recordInitial(in.Current, in.Now)

	c := byCount(in)
	switch {
	case c.Disabled:
		setCondition(st, in.Now, autoscalingv2.ScalingActive, corev1.ConditionFalse, "ScalingDisabled", "scaling is disabled since the replica count of the target is zero")
		if !in.ScaleToZero {
			removeCondition(st, autoscalingv2.ScaledToZero)
		}
		p.Desired = in.Current
		p.Status = rebuilt(*st, in, in.Current, nil)
		return p
	case !c.Metrics:
		p.Rescale, p.Desired, p.Reason = true, c.Desired, c.Reason
		p.Status = rebuilt(*st, in, c.Desired, nil)
		return p
	}

	prop := in.Proposal
	if a := prop.Active; a != nil {
		setCondition(st, in.Now, a.Type, a.Status, a.Reason, "%s", a.Message)
	}
	if in.MetricsErr != nil && prop.Replicas == -1 {
		p.MetricsFailed, p.Desired = true, in.Current
		p.Status = rebuilt(*st, in, in.Status.DesiredReplicas, prop.Statuses)
		return p
	}
	// Some metrics may have failed: the others still scale up.
	desired, metric, reason := c.Desired, "", ""
	if prop.Replicas > desired {
		desired, metric = prop.Replicas, prop.Metric
	}
	if desired > in.Current {
		reason = fmt.Sprintf("%s above target", metric)
	}
	if desired < in.Current {
		reason = "All metrics below target"
	}
	minimum := minReplicas(in.Spec)
	lim := limits{Current: in.Current, Min: minimum, Max: in.Spec.MaxReplicas}
	var n normalized
	if in.Spec.Behavior == nil {
		n = normalize(p.History, lim, desired, in.Window, in.Now)
	} else {
		n = normalizeWithBehavior(p.History, lim, desired, withDefaultWindow(in.Spec.Behavior, in.Window), in.Now)
	}
	setCondition(st, in.Now, autoscalingv2.AbleToScale, corev1.ConditionTrue, n.AbleReason, "%s", n.AbleMessage)
	limited := corev1.ConditionFalse
	if n.Limited {
		limited = corev1.ConditionTrue
	}
	setCondition(st, in.Now, autoscalingv2.ScalingLimited, limited, n.LimitedReason, "%s", n.LimitedMessage)
	desired = n.Replicas
	// Scaling from zero with minReplicas raised meanwhile goes at least to minReplicas.
	if in.Current == 0 && minimum != 0 && c.ScaledToZero && desired < minimum {
		desired = minimum
		if reason == "" {
			reason = "Current number of replicas below Spec.MinReplicas"
		}
	}
	p.Rescale, p.Desired, p.Reason = desired != in.Current, desired, reason
	p.Status = rebuilt(*st, in, desired, prop.Statuses)
	return p
}

// rescaled completes a Rescale plan with the outcome of the /scale write, made at now: on
// failure AbleToScale False and the last desired count kept; on success AbleToScale True, the
// rescale recorded in the history and the last scale time, and ScaledToZero set on every
// rescale so that it is never stale.
func rescaled(in syncInput, p plan, err error, now time.Time) plan {
	p.Status = *p.Status.DeepCopy()
	st := &p.Status
	if err != nil {
		setCondition(st, now, autoscalingv2.AbleToScale, corev1.ConditionFalse, "FailedUpdateScale", "the HPA controller was unable to update the target scale: %v", err)
		st.DesiredReplicas = in.Status.DesiredReplicas
		return p
	}
	setCondition(st, now, autoscalingv2.AbleToScale, corev1.ConditionTrue, "SucceededRescale", "the HPA controller was able to update the target scale to %d", p.Desired)
	p.History = p.History.clone()
	p.History.recordScale(in.Spec.Behavior, in.Current, p.Desired, now)
	switch {
	case !in.ScaleToZero:
		removeCondition(st, autoscalingv2.ScaledToZero)
	case in.Current > 0 && p.Desired == 0 && minReplicas(in.Spec) == 0 && hasObjectOrExternalMetrics(in.Spec):
		setCondition(st, now, autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero", "the HPA controller scaled the workload to zero")
	default:
		setCondition(st, now, autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero", "the HPA controller did not scale the workload to zero")
	}
	t := metav1.NewTime(now)
	st.LastScaleTime = &t
	return p
}

// rebuilt is the status upstream's setStatus writes: this sync's counts and metrics, the
// conditions and the last scale time of st, and observedGeneration (HPAGeneration).
func rebuilt(st autoscalingv2.HorizontalPodAutoscalerStatus, in syncInput, desired int32, metrics []autoscalingv2.MetricStatus) autoscalingv2.HorizontalPodAutoscalerStatus {
	out := autoscalingv2.HorizontalPodAutoscalerStatus{
		CurrentReplicas: in.Current,
		DesiredReplicas: desired,
		LastScaleTime:   st.LastScaleTime,
		CurrentMetrics:  metrics,
		Conditions:      st.Conditions,
	}
	if in.Generation != nil {
		g := *in.Generation
		out.ObservedGeneration = &g
	}
	return out
}

// minReplicas is spec.minReplicas, 1 when unset.
func minReplicas(spec *autoscalingv2.HorizontalPodAutoscalerSpec) int32 {
	if spec.MinReplicas != nil {
		return *spec.MinReplicas
	}
	return 1
}

// hasObjectOrExternalMetrics: only these metrics can scale a target up from zero.
func hasObjectOrExternalMetrics(spec *autoscalingv2.HorizontalPodAutoscalerSpec) bool {
	for _, m := range spec.Metrics {
		if m.Type == autoscalingv2.ObjectMetricSourceType || m.Type == autoscalingv2.ExternalMetricSourceType {
			return true
		}
	}
	return false
}

// scaleError is a failed read of the target's /scale: Cause is what the FailedGetScale Event
// and the AbleToScale condition report, as upstream; the error itself, with its context (and
// errSpec when the reference's apiVersion is invalid), is what the sync returns.
type scaleError struct {
	Cause error
	err   error
}

func (e *scaleError) Error() string { return e.err.Error() }
func (e *scaleError) Unwrap() error { return e.err }

// scaleCause is what a failed /scale read reports.
func scaleCause(err error) error {
	var se *scaleError
	if errors.As(err, &se) {
		return se.Cause
	}
	return err
}

// clone copies the history, so that a decision never changes the one it was given.
func (h *history) clone() *history {
	if h == nil {
		return &history{}
	}
	return &history{
		Recommendations: slices.Clone(h.Recommendations),
		ScaleUp:         slices.Clone(h.ScaleUp),
		ScaleDown:       slices.Clone(h.ScaleDown),
	}
}
