package podautoscaler

import (
	"context"
	"errors"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Tolerances are how far the usage ratio may stray from 1 before the
// calculator proposes a change, below (ScaleDown) and above (ScaleUp).
type Tolerances struct{ ScaleDown, ScaleUp float64 }

// ReplicaCalculator proposes replica counts from metrics, as upstream's.
type ReplicaCalculator struct {
	Metrics                                                MetricsClient
	Pods                                                   client.Reader // cached pod reads
	CPUInitializationPeriod, DelayOfInitialReadinessStatus time.Duration
	Now                                                    func() time.Time // nil: time.Now
}

var errNotImplemented = errors.New("not implemented")

func (c *ReplicaCalculator) GetResourceReplicas(ctx context.Context, currentReplicas, targetUtilization int32, resource corev1.ResourceName, tol Tolerances, namespace string, selector labels.Selector, container string) (replicaCount, utilization int32, rawUtilization int64, timestamp time.Time, err error) {
	return 0, 0, 0, time.Time{}, errNotImplemented
}

func (c *ReplicaCalculator) GetRawResourceReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, resource corev1.ResourceName, tol Tolerances, namespace string, selector labels.Selector, container string) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	return 0, 0, time.Time{}, errNotImplemented
}

func (c *ReplicaCalculator) GetMetricReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, metricName string, tol Tolerances, namespace string, selector, metricSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	return 0, 0, time.Time{}, errNotImplemented
}

func (c *ReplicaCalculator) GetObjectMetricReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, metricName string, tol Tolerances, namespace string, objectRef *autoscalingv2.CrossVersionObjectReference, selector, metricSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	return 0, 0, time.Time{}, errNotImplemented
}

func (c *ReplicaCalculator) GetObjectPerPodMetricReplicas(ctx context.Context, statusReplicas int32, targetAverageUsage int64, metricName string, tol Tolerances, namespace string, objectRef *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	return 0, 0, time.Time{}, errNotImplemented
}

func (c *ReplicaCalculator) GetExternalMetricReplicas(ctx context.Context, currentReplicas int32, targetUsage int64, metricName string, tol Tolerances, namespace string, metricSelector *metav1.LabelSelector, podSelector labels.Selector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	return 0, 0, time.Time{}, errNotImplemented
}

func (c *ReplicaCalculator) GetExternalPerPodMetricReplicas(ctx context.Context, statusReplicas int32, targetUsagePerPod int64, metricName string, tol Tolerances, namespace string, metricSelector *metav1.LabelSelector) (replicaCount int32, usage int64, timestamp time.Time, err error) {
	return 0, 0, time.Time{}, errNotImplemented
}
