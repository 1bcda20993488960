package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// This file computes the metrics' proposal: one replica count per metric of the HPA through
// the ReplicaCalculator, the highest of them, the currentMetrics and the ScalingActive
// condition, as upstream's computeReplicasForMetrics and its computeStatusFor* helpers.

// errSpec marks errors caused by the HPA's spec (the metrics' "spec" error label); its empty
// text leaves the messages as upstream writes them.
var errSpec = errors.New("")

// proposal is the metrics' outcome: the count (-1: none could be computed), the metric that
// gave it, the status of every metric, and the ScalingActive condition that reports it (nil:
// none, the HPA's condition is left as it is).
type proposal struct {
	Replicas  int32
	Metric    string
	Statuses  []autoscalingv2.MetricStatus
	Timestamp time.Time
	Active    *autoscalingv2.HorizontalPodAutoscalerCondition
}

// condition is a condition to set, its transition time left to setCondition.
func condition(t autoscalingv2.HorizontalPodAutoscalerConditionType, status corev1.ConditionStatus, reason, format string, args ...any) *autoscalingv2.HorizontalPodAutoscalerCondition {
	return &autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: status, Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// computeReplicasForMetrics proposes the highest count of the metrics that could be
// computed. With some metrics failing it still proposes when that scales up (returning the
// first failure too); when all fail, or when it would scale down, it proposes nothing (-1)
// and ScalingActive says why, from the first failure. The failures' Events are written here,
// the condition is only returned.
func (r *Reconciler) computeReplicasForMetrics(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, scale *autoscalingv1.Scale) (proposal, error) {
	selector, active, err := r.validateSelector(ctx, hpa, scale.Status.Selector)
	if err != nil {
		return proposal{Replicas: -1, Active: active}, err
	}
	specs := hpa.Spec.Metrics
	p := proposal{Statuses: make([]autoscalingv2.MetricStatus, len(specs))}
	invalid := 0
	var firstErr error
	var firstCondition autoscalingv2.HorizontalPodAutoscalerCondition
	for i, spec := range specs {
		replicas, metric, ts, cond, err := r.computeReplicasForMetric(ctx, hpa, spec, scale.Spec.Replicas, scale.Status.Replicas, selector, &p.Statuses[i])
		if err != nil {
			if invalid == 0 {
				firstErr, firstCondition = err, cond
			}
			invalid++
			continue
		}
		if p.Replicas == 0 || replicas > p.Replicas {
			p.Replicas, p.Metric, p.Timestamp = replicas, metric, ts
		}
	}
	if firstErr != nil {
		firstErr = fmt.Errorf("invalid metrics (%v invalid out of %v), first error is: %w", invalid, len(specs), firstErr)
	}
	if invalid >= len(specs) || (invalid > 0 && p.Replicas < scale.Spec.Replicas) {
		return proposal{Replicas: -1, Statuses: p.Statuses, Active: &firstCondition}, firstErr
	}
	p.Active = condition(autoscalingv2.ScalingActive, corev1.ConditionTrue, "ValidMetricFound", "the HPA was able to successfully calculate a replica count from %s", p.Metric)
	return p, firstErr
}

// validateSelector parses the target's selector and refuses it when it is missing, invalid,
// or when another HPA selects some of the same pods; a refusal comes with the ScalingActive
// condition that reports it (nil when the failure is not the selector's).
func (r *Reconciler) validateSelector(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, selector string) (labels.Selector, *autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	if selector == "" {
		msg := "selector is required"
		r.event(hpa, corev1.EventTypeWarning, "SelectorRequired", msg)
		return nil, condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "the HPA target's scale is missing a selector"), errors.New(msg)
	}
	parsed, err := labels.Parse(selector)
	if err != nil {
		msg := fmt.Sprintf("couldn't convert selector into a corresponding internal selector object: %v", err)
		r.event(hpa, corev1.EventTypeWarning, "InvalidSelector", msg)
		return nil, condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "InvalidSelector", "%s", msg), errors.New(msg)
	}
	key := types.NamespacedName{Namespace: hpa.Namespace, Name: hpa.Name}
	if !r.selectors.Update(key, parsed) {
		return nil, nil, fmt.Errorf("HPA %s/%s was deleted during reconciliation", hpa.Namespace, hpa.Name)
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(hpa.Namespace), client.MatchingLabelsSelector{Selector: parsed}); err != nil {
		return nil, nil, err
	}
	if selecting := r.selectors.Selecting(hpa.Namespace, pods.Items, 2); len(selecting) > 1 {
		msg := fmt.Sprintf("pods by selector %v are controlled by more than one HPA (e.g. %v)", selector, selecting)
		r.event(hpa, corev1.EventTypeWarning, "AmbiguousSelector", msg)
		return nil, condition(autoscalingv2.ScalingActive, corev1.ConditionFalse, "AmbiguousSelector", "%s", msg), errors.New(msg)
	}
	return parsed, nil, nil
}

// computeReplicasForMetric proposes a count for one metric and fills its status; on failure
// it returns the ScalingActive condition to report (its Event already written).
func (r *Reconciler) computeReplicasForMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec,
	specReplicas, statusReplicas int32, selector labels.Selector, status *autoscalingv2.MetricStatus) (replicas int32, metric string, ts time.Time, cond autoscalingv2.HorizontalPodAutoscalerCondition, err error) {
	start := r.Clock.Now()
	defer func() {
		action, errLabel := actionFor(replicas, hpa.Status.CurrentReplicas), errorNone
		if err != nil {
			action, errLabel = actionNone, errorInternal
		}
		if errors.Is(err, errSpec) {
			errLabel = errorSpec
		}
		observeMetricComputation(action, errLabel, r.Clock.Since(start), spec.Type)
	}()
	tol := r.tolerances(hpa)
	ns := hpa.Namespace
	switch spec.Type {
	case autoscalingv2.ObjectMetricSourceType:
		metricSelector, err := metav1.LabelSelectorAsSelector(spec.Object.Metric.Selector)
		if err != nil {
			return 0, "", time.Time{}, r.unableToCompute(hpa, "FailedGetObjectMetric", err), fmt.Errorf("failed to get object metric value: %w", err)
		}
		replicas, ts, metric, cond, err = r.objectMetric(ctx, hpa, spec, specReplicas, statusReplicas, tol, selector, metricSelector, status)
		if err != nil {
			return 0, "", time.Time{}, cond, fmt.Errorf("failed to get object metric value: %w", err)
		}
	case autoscalingv2.PodsMetricSourceType:
		metricSelector, err := metav1.LabelSelectorAsSelector(spec.Pods.Metric.Selector)
		if err != nil {
			return 0, "", time.Time{}, r.unableToCompute(hpa, "FailedGetPodsMetric", err), fmt.Errorf("failed to get pods metric value: %w", err)
		}
		replicas, usage, t, err := r.calc.GetMetricReplicas(ctx, specReplicas, spec.Pods.Target.AverageValue.MilliValue(), spec.Pods.Metric.Name, tol, ns, selector, metricSelector)
		if err != nil {
			return 0, "", time.Time{}, r.unableToCompute(hpa, "FailedGetPodsMetric", err), fmt.Errorf("failed to get pods metric value: %w", err)
		}
		*status = autoscalingv2.MetricStatus{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricStatus{
			Metric:  autoscalingv2.MetricIdentifier{Name: spec.Pods.Metric.Name, Selector: spec.Pods.Metric.Selector},
			Current: autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(usage, resource.DecimalSI)},
		}}
		return replicas, fmt.Sprintf("pods metric %s", spec.Pods.Metric.Name), t, cond, nil
	case autoscalingv2.ResourceMetricSourceType:
		replicas, current, t, name, err := r.resourceMetric(ctx, specReplicas, spec.Resource.Target, spec.Resource.Name, hpa, "", selector, spec.Type)
		if err != nil {
			return 0, "", time.Time{}, r.unableToCompute(hpa, "FailedGetResourceMetric", err), fmt.Errorf("failed to get %s resource metric value: %w", spec.Resource.Name, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, Resource: &autoscalingv2.ResourceMetricStatus{Name: spec.Resource.Name, Current: current}}
		return replicas, name, t, cond, nil
	case autoscalingv2.ContainerResourceMetricSourceType:
		c := spec.ContainerResource
		replicas, current, t, name, err := r.resourceMetric(ctx, specReplicas, c.Target, c.Name, hpa, c.Container, selector, spec.Type)
		if err != nil {
			return 0, "", time.Time{}, r.unableToCompute(hpa, "FailedGetContainerResourceMetric", err), fmt.Errorf("failed to get %s container metric value: %w", c.Container, err)
		}
		*status = autoscalingv2.MetricStatus{Type: spec.Type, ContainerResource: &autoscalingv2.ContainerResourceMetricStatus{Name: c.Name, Container: c.Container, Current: current}}
		return replicas, name, t, cond, nil
	case autoscalingv2.ExternalMetricSourceType:
		replicas, ts, metric, cond, err = r.externalMetric(ctx, hpa, spec, specReplicas, statusReplicas, tol, selector, status)
		if err != nil {
			return 0, "", time.Time{}, cond, fmt.Errorf("failed to get %s external metric value: %w", spec.External.Metric.Name, err)
		}
	default:
		// The API server's validation refuses other types; kept as upstream for safety.
		err := fmt.Errorf("unknown metric source type %q%w", string(spec.Type), errSpec)
		return 0, "", time.Time{}, r.unableToCompute(hpa, "InvalidMetricSourceType", err), err
	}
	return replicas, metric, ts, autoscalingv2.HorizontalPodAutoscalerCondition{}, nil
}

// objectMetric proposes a count from an Object metric: a value target compares the object's
// value, an average value target divides it among the target's replicas.
func (r *Reconciler) objectMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec, specReplicas, statusReplicas int32,
	tol Tolerances, selector, metricSelector labels.Selector, status *autoscalingv2.MetricStatus) (int32, time.Time, string, autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	o := spec.Object
	st := autoscalingv2.MetricStatus{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricStatus{
		DescribedObject: o.DescribedObject,
		Metric:          autoscalingv2.MetricIdentifier{Name: o.Metric.Name, Selector: o.Metric.Selector},
	}}
	switch {
	case o.Target.Type == autoscalingv2.ValueMetricType && o.Target.Value != nil:
		replicas, usage, ts, err := r.calc.GetObjectMetricReplicas(ctx, specReplicas, o.Target.Value.MilliValue(), o.Metric.Name, tol, hpa.Namespace, &o.DescribedObject, selector, metricSelector)
		if err != nil {
			return 0, ts, "", r.unableToCompute(hpa, "FailedGetObjectMetric", err), err
		}
		st.Object.Current.Value = resource.NewMilliQuantity(usage, resource.DecimalSI)
		*status = st
		return replicas, ts, fmt.Sprintf("%s metric %s", o.DescribedObject.Kind, o.Metric.Name), autoscalingv2.HorizontalPodAutoscalerCondition{}, nil
	case o.Target.Type == autoscalingv2.AverageValueMetricType && o.Target.AverageValue != nil:
		replicas, usage, ts, err := r.calc.GetObjectPerPodMetricReplicas(ctx, statusReplicas, o.Target.AverageValue.MilliValue(), o.Metric.Name, tol, hpa.Namespace, &o.DescribedObject, metricSelector)
		if err != nil {
			return 0, time.Time{}, "", r.unableToCompute(hpa, "FailedGetObjectMetric", err), fmt.Errorf("failed to get %s object metric: %w", o.Metric.Name, err)
		}
		st.Object.Current.AverageValue = resource.NewMilliQuantity(usage, resource.DecimalSI)
		*status = st
		// Upstream names this proposal "external metric" too.
		return replicas, ts, fmt.Sprintf("external metric %s(%+v)", o.Metric.Name, o.Metric.Selector), autoscalingv2.HorizontalPodAutoscalerCondition{}, nil
	}
	err := errors.New("invalid object metric source: neither a value target nor an average value target was set")
	return 0, time.Time{}, "", r.unableToCompute(hpa, "FailedGetObjectMetric", err), err
}

// externalMetric proposes a count from an External metric: an average value target divides
// the metric among the target's replicas, a value target compares it whole.
func (r *Reconciler) externalMetric(ctx context.Context, hpa *autoscalingv2.HorizontalPodAutoscaler, spec autoscalingv2.MetricSpec, specReplicas, statusReplicas int32,
	tol Tolerances, selector labels.Selector, status *autoscalingv2.MetricStatus) (int32, time.Time, string, autoscalingv2.HorizontalPodAutoscalerCondition, error) {
	e := spec.External
	name := fmt.Sprintf("external metric %s(%+v)", e.Metric.Name, e.Metric.Selector)
	st := func(current autoscalingv2.MetricValueStatus) autoscalingv2.MetricStatus {
		return autoscalingv2.MetricStatus{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricStatus{
			Metric: autoscalingv2.MetricIdentifier{Name: e.Metric.Name, Selector: e.Metric.Selector}, Current: current}}
	}
	switch {
	case e.Target.AverageValue != nil:
		replicas, usage, ts, err := r.calc.GetExternalPerPodMetricReplicas(ctx, statusReplicas, e.Target.AverageValue.MilliValue(), e.Metric.Name, tol, hpa.Namespace, e.Metric.Selector)
		if err != nil {
			return 0, time.Time{}, "", r.unableToCompute(hpa, "FailedGetExternalMetric", err), fmt.Errorf("failed to get %s external metric: %w", e.Metric.Name, err)
		}
		*status = st(autoscalingv2.MetricValueStatus{AverageValue: resource.NewMilliQuantity(usage, resource.DecimalSI)})
		return replicas, ts, name, autoscalingv2.HorizontalPodAutoscalerCondition{}, nil
	case e.Target.Value != nil:
		replicas, usage, ts, err := r.calc.GetExternalMetricReplicas(ctx, specReplicas, e.Target.Value.MilliValue(), e.Metric.Name, tol, hpa.Namespace, e.Metric.Selector, selector)
		if err != nil {
			return 0, time.Time{}, "", r.unableToCompute(hpa, "FailedGetExternalMetric", err), fmt.Errorf("failed to get external metric %s: %w", e.Metric.Name, err)
		}
		*status = st(autoscalingv2.MetricValueStatus{Value: resource.NewMilliQuantity(usage, resource.DecimalSI)})
		return replicas, ts, name, autoscalingv2.HorizontalPodAutoscalerCondition{}, nil
	}
	err := errors.New("invalid external metric source: neither a value target nor an average value target was set")
	return 0, time.Time{}, "", r.unableToCompute(hpa, "FailedGetExternalMetric", err), err
}

// resourceMetric proposes a count from a Resource or ContainerResource metric: an average
// value target compares raw usage, an average utilization target the usage's percentage of
// the pods' requests.
func (r *Reconciler) resourceMetric(ctx context.Context, current int32, target autoscalingv2.MetricTarget, res corev1.ResourceName, hpa *autoscalingv2.HorizontalPodAutoscaler,
	container string, selector labels.Selector, source autoscalingv2.MetricSourceType) (int32, autoscalingv2.MetricValueStatus, time.Time, string, error) {
	tol := r.tolerances(hpa)
	if target.AverageValue != nil {
		replicas, raw, ts, err := r.calc.GetRawResourceReplicas(ctx, current, target.AverageValue.MilliValue(), res, tol, hpa.Namespace, selector, container)
		if err != nil {
			return 0, autoscalingv2.MetricValueStatus{}, time.Time{}, "", fmt.Errorf("failed to get %s usage: %w", res, err)
		}
		q := buildQuantity(res, raw)
		return replicas, autoscalingv2.MetricValueStatus{AverageValue: &q}, ts, fmt.Sprintf("%s resource", res.String()), nil
	}
	if target.AverageUtilization == nil {
		return 0, autoscalingv2.MetricValueStatus{}, time.Time{}, "", errors.New("invalid resource metric source: neither an average utilization target nor an average value (usage) target was set")
	}
	replicas, utilization, raw, ts, err := r.calc.GetResourceReplicas(ctx, current, *target.AverageUtilization, res, tol, hpa.Namespace, selector, container)
	if err != nil {
		return 0, autoscalingv2.MetricValueStatus{}, time.Time{}, "", fmt.Errorf("failed to get %s utilization: %w", res, err)
	}
	name := fmt.Sprintf("%s resource utilization (percentage of request)", res)
	if source == autoscalingv2.ContainerResourceMetricSourceType {
		name = fmt.Sprintf("%s container resource utilization (percentage of request)", res)
	}
	q := buildQuantity(res, raw)
	return replicas, autoscalingv2.MetricValueStatus{AverageUtilization: &utilization, AverageValue: &q}, ts, name, nil
}

// buildQuantity formats a raw milli-value as the metrics server does: memory in binary
// units, everything else in decimal ones.
func buildQuantity(res corev1.ResourceName, milli int64) resource.Quantity {
	format := resource.DecimalSI
	if res == corev1.ResourceMemory {
		format = resource.BinarySI
	}
	return *resource.NewMilliQuantity(milli, format)
}

// unableToCompute writes the metric's failure Event and returns the ScalingActive condition
// that reports it.
func (r *Reconciler) unableToCompute(hpa *autoscalingv2.HorizontalPodAutoscaler, reason string, err error) autoscalingv2.HorizontalPodAutoscalerCondition {
	r.event(hpa, corev1.EventTypeWarning, reason, err.Error())
	return autoscalingv2.HorizontalPodAutoscalerCondition{
		Type:    autoscalingv2.ScalingActive,
		Status:  corev1.ConditionFalse,
		Reason:  reason,
		Message: fmt.Sprintf("the HPA was unable to compute the replica count: %v", err),
	}
}

// tolerances are the flag's tolerance, replaced per direction by the HPA's
// behavior.scaleUp/scaleDown.tolerance (HPAConfigurableTolerance).
func (r *Reconciler) tolerances(hpa *autoscalingv2.HorizontalPodAutoscaler) Tolerances {
	t := Tolerances{ScaleDown: r.Tolerance, ScaleUp: r.Tolerance}
	b := hpa.Spec.Behavior
	if b == nil || !r.ConfigurableTolerance {
		return t
	}
	if b.ScaleDown != nil && b.ScaleDown.Tolerance != nil {
		t.ScaleDown = b.ScaleDown.Tolerance.AsApproximateFloat64()
	}
	if b.ScaleUp != nil && b.ScaleUp.Tolerance != nil {
		t.ScaleUp = b.ScaleUp.Tolerance.AsApproximateFloat64()
	}
	return t
}
