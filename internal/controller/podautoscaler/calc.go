package podautoscaler

import (
	"context"
	"fmt"
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/pod"
)

// Tolerances are how far the usage ratio may stray from 1 before the
// calculator proposes a change, below (ScaleDown) and above (ScaleUp).
type Tolerances struct{ ScaleDown, ScaleUp float64 }

func (t Tolerances) String() string {
	return fmt.Sprintf("[down:%.1f%%, up:%.1f%%]", t.ScaleDown*100., t.ScaleUp*100.)
}

// within says whether a usage ratio is too close to 1 to act on.
func (t Tolerances) within(ratio float64) bool {
	return 1.0-t.ScaleDown <= ratio && ratio <= 1.0+t.ScaleUp
}

// ReplicaCalculator proposes replica counts from metrics, as upstream's.
type ReplicaCalculator struct {
	Metrics MetricsClient
	Pods    client.Reader // cached pod reads
	// CPUInitializationPeriod and DelayOfInitialReadinessStatus are the
	// --horizontal-pod-autoscaler-cpu-initialization-period and
	// --horizontal-pod-autoscaler-initial-readiness-delay.
	CPUInitializationPeriod, DelayOfInitialReadinessStatus time.Duration
	// Clock is the Reconciler's: a pod's readiness and its CPU initialization are
	// judged against its time now.
	Clock clock.PassiveClock
	// PodLevelResources is the PodLevelResources gate (contract addition):
	// on, a pod's pod-level requests are what its utilization is measured
	// against when the metric names no container.
	PodLevelResources bool
}

// GetResourceReplicas proposes a replica count for a target utilization
// (percent of the pods' requests) of resource by the pods matching selector.
func (c *ReplicaCalculator) GetResourceReplicas(ctx context.Context, currentReplicas, targetUtilization int32, resource corev1.ResourceName, tol Tolerances, namespace string, selector labels.Selector, container string) (replicaCount, utilization int32, rawUtilization int64, timestamp time.Time, err error) {
	metrics, timestamp, err := c.Metrics.GetResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	pods, err := c.listPods(ctx, namespace, selector)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	groups, err := c.usableMetrics(pods, metrics, resource)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	requests, err := podRequests(pods, container, resource, c.PodLevelResources)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}
	usageRatio, utilization, rawUtilization, err := resourceUtilizationRatio(metrics, requests, targetUtilization)
	if err != nil {
		return 0, 0, 0, time.Time{}, err
	}

	// A pod without a sample counts, on a scale-down, as using its whole
	// request, or the target when the target is above 100%.
	fallback := int64(max(100, targetUtilization))
	replicaCount, err = proposeReplicas(currentReplicas, usageRatio, tol, groups, metrics,
		func(name string) int64 { return requests[name] * fallback / 100 },
		func(m PodMetricsInfo) (float64, error) {
			r, _, _, err := resourceUtilizationRatio(m, requests, targetUtilization)
			return r, err
		})
	if err != nil {
		return 0, utilization, rawUtilization, time.Time{}, err
	}
	return replicaCount, utilization, rawUtilization, timestamp, nil
}

// GetRawResourceReplicas proposes a replica count for a target average usage
// (milli-units) of resource by the pods matching selector.
func (c *ReplicaCalculator) GetRawResourceReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, resource corev1.ResourceName, tol Tolerances, namespace string, selector labels.Selector, container string) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	metrics, timestamp, err := c.Metrics.GetResourceMetric(ctx, resource, namespace, selector, container)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metrics for resource %s: %w", resource, err)
	}
	replicaCount, usage, err = c.plainMetricReplicas(ctx, metrics, currentReplicas, targetUsage, tol, namespace, selector, resource)
	return replicaCount, usage, timestamp, err
}

// GetMetricReplicas proposes a replica count for a target average value
// (milli-units) of a custom pods metric of the pods matching selector.
func (c *ReplicaCalculator) GetMetricReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, metricName string, tol Tolerances, namespace string, selector, metricSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	metrics, timestamp, err := c.Metrics.GetRawMetric(ctx, metricName, namespace, selector, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s: %w", metricName, err)
	}
	// Readiness is weighed for CPU only; a custom metric is taken as it is.
	replicaCount, usage, err = c.plainMetricReplicas(ctx, metrics, currentReplicas, targetUsage, tol, namespace, selector, "")
	return replicaCount, usage, timestamp, err
}

// plainMetricReplicas is the proposal for an average value per pod: a pod
// without a sample counts, on a scale-down, as using exactly the target.
func (c *ReplicaCalculator) plainMetricReplicas(ctx context.Context, metrics PodMetricsInfo, currentReplicas int32, targetUsage int64, tol Tolerances, namespace string, selector labels.Selector, resource corev1.ResourceName) (replicaCount int32, usage int64, err error) {
	pods, err := c.listPods(ctx, namespace, selector)
	if err != nil {
		return 0, 0, err
	}
	groups, err := c.usableMetrics(pods, metrics, resource)
	if err != nil {
		return 0, 0, err
	}
	usageRatio, usage := metricUsageRatio(metrics, targetUsage)
	replicaCount, err = proposeReplicas(currentReplicas, usageRatio, tol, groups, metrics,
		func(string) int64 { return targetUsage },
		func(m PodMetricsInfo) (float64, error) {
			r, _ := metricUsageRatio(m, targetUsage)
			return r, nil
		})
	return replicaCount, usage, err
}

// listPods reads the pods the HPA's target selects from the cache.
func (c *ReplicaCalculator) listPods(ctx context.Context, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	var list corev1.PodList
	if err := c.Pods.List(ctx, &list, client.InNamespace(namespace), client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, fmt.Errorf("unable to get pods while calculating replica count: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, fmt.Errorf("no pods returned by selector while calculating replica count")
	}
	return list.Items, nil
}

// usableMetrics groups the pods and drops the samples of ignored and unready
// pods from metrics, in place; no sample left is an error.
func (c *ReplicaCalculator) usableMetrics(pods []corev1.Pod, metrics PodMetricsInfo, resource corev1.ResourceName) (podGroups, error) {
	g := groupPods(pods, metrics, resource, c.CPUInitializationPeriod, c.DelayOfInitialReadinessStatus, c.Clock.Now())
	for name := range g.ignored {
		delete(metrics, name)
	}
	for name := range g.unready {
		delete(metrics, name)
	}
	if len(metrics) == 0 {
		return g, fmt.Errorf("did not receive metrics for targeted pods (pods might be unready)")
	}
	return g, nil
}

// proposeReplicas turns the ready pods' usage ratio into a replica count, as
// upstream: with every pod sampled and ready, ceil(ratio × ready pods)
// unless within tolerance. Otherwise the ratio is computed again with the
// pods left out filled in so as to damp the change: missing pods use
// fallback on a scale-down and nothing on a scale-up, unready pods nothing
// on a scale-up. The change is dropped when the filled-in ratio is within
// tolerance or points the other way, or when the count it gives would move
// against the ratio.
func proposeReplicas(currentReplicas int32, usageRatio float64, tol Tolerances, g podGroups, metrics PodMetricsInfo, fallback func(pod string) int64, ratio func(PodMetricsInfo) (float64, error)) (int32, error) {
	scaleUpWithUnready := len(g.unready) > 0 && usageRatio > 1.0
	if !scaleUpWithUnready && len(g.missing) == 0 {
		if tol.within(usageRatio) {
			return currentReplicas, nil
		}
		return int32(math.Ceil(usageRatio * float64(g.ready))), nil
	}

	if len(g.missing) > 0 {
		switch {
		case usageRatio < 1.0:
			for name := range g.missing {
				metrics[name] = PodMetric{Value: fallback(name)}
			}
		case usageRatio > 1.0:
			for name := range g.missing {
				metrics[name] = PodMetric{Value: 0}
			}
		}
	}
	if scaleUpWithUnready {
		for name := range g.unready {
			metrics[name] = PodMetric{Value: 0}
		}
	}

	newRatio, err := ratio(metrics)
	if err != nil {
		return 0, err
	}
	if tol.within(newRatio) || (usageRatio < 1.0 && newRatio > 1.0) || (usageRatio > 1.0 && newRatio < 1.0) {
		return currentReplicas, nil
	}
	// The count is over every pod that has a sample now, filled in or not.
	newReplicas := int32(math.Ceil(newRatio * float64(len(metrics))))
	if (newRatio < 1.0 && newReplicas > currentReplicas) || (newRatio > 1.0 && newReplicas < currentReplicas) {
		return currentReplicas, nil
	}
	return newReplicas, nil
}

// GetObjectMetricReplicas proposes a replica count for a target value
// (milli-units) of a metric describing one object. As upstream, the
// timestamp returned is always zero.
func (c *ReplicaCalculator) GetObjectMetricReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, metricName string, tol Tolerances, namespace string, objectRef *autoscalingv2.CrossVersionObjectReference, selector, metricSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	usage, _, err = c.Metrics.GetObjectMetric(ctx, metricName, namespace, objectRef, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s on %s %s/%s: %w", metricName, objectRef.Kind, namespace, objectRef.Name, err)
	}
	replicaCount, err = c.usageRatioReplicas(ctx, currentReplicas, float64(usage)/float64(targetUsage), tol, namespace, selector)
	return replicaCount, usage, time.Time{}, err
}

// GetObjectPerPodMetricReplicas proposes a replica count for a target
// average value per replica (milli-units) of a metric describing one object.
func (c *ReplicaCalculator) GetObjectPerPodMetricReplicas(ctx context.Context, statusReplicas int32, targetAverageUsage int64, metricName string, tol Tolerances, namespace string, objectRef *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	usage, timestamp, err = c.Metrics.GetObjectMetric(ctx, metricName, namespace, objectRef, metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get metric %s on %s %s/%s: %w", metricName, objectRef.Kind, namespace, objectRef.Name, err)
	}
	replicaCount = statusReplicas
	if !tol.within(float64(usage) / (float64(targetAverageUsage) * float64(statusReplicas))) {
		replicaCount = int32(math.Ceil(float64(usage) / float64(targetAverageUsage)))
	}
	usage = int64(math.Ceil(float64(usage) / float64(statusReplicas)))
	return replicaCount, usage, timestamp, nil
}

// GetExternalMetricReplicas proposes a replica count for a target total
// value (milli-units) of an external metric's series matching
// metricSelector. As upstream, the timestamp returned is always zero.
func (c *ReplicaCalculator) GetExternalMetricReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, metricName string, tol Tolerances, namespace string, metricSelector *metav1.LabelSelector, podSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	selector, err := metav1.LabelSelectorAsSelector(metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	values, _, err := c.Metrics.GetExternalMetric(ctx, metricName, namespace, selector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %s", namespace, metricName, metricSelector, err)
	}
	for _, v := range values {
		// A positive overflow is held at the largest value.
		if v > 0 && usage > math.MaxInt64-v {
			usage = math.MaxInt64
			break
		}
		usage += v
	}
	replicaCount, err = c.usageRatioReplicas(ctx, currentReplicas, float64(usage)/float64(targetUsage), tol, namespace, podSelector)
	return replicaCount, usage, time.Time{}, err
}

// GetExternalPerPodMetricReplicas proposes a replica count for a target
// value per replica (milli-units) of an external metric's series total.
func (c *ReplicaCalculator) GetExternalPerPodMetricReplicas(ctx context.Context, statusReplicas int32, targetUsagePerPod int64, metricName string, tol Tolerances, namespace string, metricSelector *metav1.LabelSelector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	selector, err := metav1.LabelSelectorAsSelector(metricSelector)
	if err != nil {
		return 0, 0, time.Time{}, err
	}
	values, timestamp, err := c.Metrics.GetExternalMetric(ctx, metricName, namespace, selector)
	if err != nil {
		return 0, 0, time.Time{}, fmt.Errorf("unable to get external metric %s/%s/%+v: %s", namespace, metricName, metricSelector, err)
	}
	for _, v := range values {
		usage += v
		if usage < 0 {
			// Only an overflow turns the sum negative.
			usage = math.MaxInt64
			break
		}
	}
	replicaCount = statusReplicas
	if !tol.within(float64(usage) / (float64(targetUsagePerPod) * float64(statusReplicas))) {
		replicaCount = clampInt32(math.Ceil(float64(usage) / float64(targetUsagePerPod)))
	}
	if float64(usage) < float64(math.MaxInt64) {
		usage = int64(math.Ceil(float64(usage) / float64(statusReplicas)))
	} else {
		usage = math.MaxInt64
	}
	return replicaCount, usage, timestamp, nil
}

// usageRatioReplicas scales the ready pods by an object or external
// metric's ratio. From zero replicas (scaling to zero is allowed) the
// proposal is ceil(ratio) whatever the tolerance, since there are no pods.
func (c *ReplicaCalculator) usageRatioReplicas(ctx context.Context, currentReplicas int32, usageRatio float64, tol Tolerances, namespace string, selector labels.Selector) (int32, error) {
	if currentReplicas == 0 {
		return int32(math.Ceil(usageRatio)), nil
	}
	if tol.within(usageRatio) {
		return currentReplicas, nil
	}
	ready, err := c.readyPodsCount(ctx, namespace, selector)
	if err != nil {
		return 0, fmt.Errorf("unable to calculate ready pods: %s", err)
	}
	return clampInt32(math.Ceil(usageRatio * float64(ready))), nil
}

// readyPodsCount counts the running, ready pods matching selector.
func (c *ReplicaCalculator) readyPodsCount(ctx context.Context, namespace string, selector labels.Selector) (int64, error) {
	pods, err := c.listPods(ctx, namespace, selector)
	if err != nil {
		return 0, err
	}
	ready := int64(0)
	for i := range pods {
		if pods[i].Status.Phase == corev1.PodRunning && pod.IsReady(&pods[i]) {
			ready++
		}
	}
	return ready, nil
}

// clampInt32 holds a replica count that overflows int32 at the largest.
func clampInt32(f float64) int32 {
	if f > math.MaxInt32 {
		return math.MaxInt32
	}
	return int32(f)
}
