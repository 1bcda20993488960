package podautoscaler

import (
	"context"
	"errors"
	"fmt"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	resourceclient "k8s.io/metrics/pkg/client/clientset/versioned/typed/metrics/v1beta1"
	customclient "k8s.io/metrics/pkg/client/custom_metrics"
	externalclient "k8s.io/metrics/pkg/client/external_metrics"
)

// PodMetric is one pod's sample of a metric, as the metrics APIs report it.
type PodMetric struct {
	Timestamp time.Time
	Window    time.Duration
	Value     int64 // milli-value
}

// PodMetricsInfo is the samples of one metric by pod name.
type PodMetricsInfo map[string]PodMetric

// MetricsClient reads the metrics the horizontal pod autoscaler scales on:
// upstream's metrics.MetricsClient, with a context first everywhere.
type MetricsClient interface {
	// GetResourceMetric reads the usage of resource by the named container of
	// every pod matching selector, or by all its containers summed when
	// container is empty. A pod without a sample is left out, not an error:
	// the calculator tells missing pods from the pods' own list.
	GetResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetricsInfo, time.Time, error)
	// GetRawMetric reads a custom metric describing every pod matching selector.
	GetRawMetric(ctx context.Context, metricName, namespace string, selector, metricSelector labels.Selector) (PodMetricsInfo, time.Time, error)
	// GetObjectMetric reads a custom metric describing one object.
	GetObjectMetric(ctx context.Context, metricName, namespace string, objectRef *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error)
	// GetExternalMetric reads every value of an external metric matching selector.
	GetExternalMetric(ctx context.Context, metricName, namespace string, selector labels.Selector) ([]int64, time.Time, error)
}

// customMetricDefaultWindow is the window upstream assumes for a custom
// metric sample that does not say its own.
const customMetricDefaultWindow = time.Minute

// RESTMetricsClient reads the three metrics APIs through the API server's
// aggregator, as upstream's restMetricsClient, with the controller's own
// identity: pod usage is listed, a custom metric (of the pods, or of one
// object) is a get of <resource>/<metric>, external series are listed.
//
// +kubebuilder:rbac:groups=metrics.k8s.io,resources=pods,verbs=list
// +kubebuilder:rbac:groups=custom.metrics.k8s.io,resources=*,verbs=get
// +kubebuilder:rbac:groups=external.metrics.k8s.io,resources=*,verbs=list
type RESTMetricsClient struct {
	resource resourceclient.PodMetricsesGetter
	custom   customclient.CustomMetricsClient
	external externalclient.ExternalMetricsClient
	// apis caches which custom.metrics.k8s.io version the API server
	// prefers; Run forgets it periodically so a new adapter is picked up.
	apis customclient.AvailableAPIsGetter
}

var _ MetricsClient = &RESTMetricsClient{}

// NewRESTMetricsClient reads metrics.k8s.io/v1beta1, custom.metrics.k8s.io
// (the version discovery prefers, as upstream) and
// external.metrics.k8s.io/v1beta1 with cfg (the controller's own identity).
// The custom metrics version is discovered once and kept until Run forgets
// it; without Run it is kept for the client's life.
//
// The result is the concrete client (contract change from MetricsClient) so
// that the caller can start Run; it is a MetricsClient everywhere else.
func NewRESTMetricsClient(cfg *rest.Config, mapper meta.RESTMapper) (*RESTMetricsClient, error) {
	// Discovery is not cached here: the available-APIs getter keeps its own
	// answer, and re-asks after each invalidation, as upstream.
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to init the discovery client for the custom metrics API: %w", err)
	}
	resource, err := resourceclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to init the resource client: %w", err)
	}
	external, err := externalclient.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("failed to init the external metrics client: %w", err)
	}
	apis := customclient.NewAvailableAPIsGetter(disco)
	c := newMetricsClient(resource, customclient.NewForConfig(cfg, mapper, apis), external)
	c.apis = apis
	return c, nil
}

// newMetricsClient builds the client on any three metrics clients (fakes in
// unit tests).
func newMetricsClient(resource resourceclient.PodMetricsesGetter, custom customclient.CustomMetricsClient, external externalclient.ExternalMetricsClient) *RESTMetricsClient {
	return &RESTMetricsClient{resource: resource, custom: custom, external: external}
}

// Run forgets the preferred custom metrics API version every period until
// ctx ends, as upstream runs custom_metrics.PeriodicallyInvalidate beside
// the controller with the HPA's sync period.
func (c *RESTMetricsClient) Run(ctx context.Context, period time.Duration) {
	if c.apis == nil {
		<-ctx.Done()
		return
	}
	customclient.PeriodicallyInvalidate(c.apis, period, ctx.Done())
}

// GetResourceMetric reads pod usage from metrics.k8s.io. The timestamp
// returned is the first pod's, as upstream.
func (c *RESTMetricsClient) GetResourceMetric(ctx context.Context, resource corev1.ResourceName, namespace string, selector labels.Selector, container string) (PodMetricsInfo, time.Time, error) {
	list, err := c.resource.PodMetricses(namespace).List(ctx, metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from resource metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from resource metrics API")
	}
	var res PodMetricsInfo
	if container != "" {
		res = containerMetrics(ctx, list.Items, resource, container)
	} else {
		res = podMetrics(ctx, list.Items, resource)
	}
	return res, list.Items[0].Timestamp.Time, nil
}

// containerMetrics keeps the named container's usage of each pod; a pod
// without that container, or whose container does not report resource, is
// left out.
func containerMetrics(ctx context.Context, items []metricsv1beta1.PodMetrics, resource corev1.ResourceName, container string) PodMetricsInfo {
	res := make(PodMetricsInfo, len(items))
	for _, m := range items {
		found := false
		for _, ctr := range m.Containers {
			if ctr.Name != container {
				continue
			}
			found = true
			if v, ok := ctr.Usage[resource]; ok {
				res[m.Name] = PodMetric{Timestamp: m.Timestamp.Time, Window: m.Window.Duration, Value: v.MilliValue()}
			}
			break
		}
		if !found {
			klog.FromContext(ctx).V(2).Info("Missing container metric", "container", container, "pod", klog.KRef(m.Namespace, m.Name))
		}
	}
	return res
}

// podMetrics sums the usage of all of each pod's containers; a pod with no
// containers, or one container not reporting resource, is left out, since a
// partial sum would understate its usage.
func podMetrics(ctx context.Context, items []metricsv1beta1.PodMetrics, resource corev1.ResourceName) PodMetricsInfo {
	res := make(PodMetricsInfo, len(items))
	for _, m := range items {
		sum := int64(0)
		missing := len(m.Containers) == 0
		for _, ctr := range m.Containers {
			v, ok := ctr.Usage[resource]
			if !ok {
				missing = true
				klog.FromContext(ctx).V(2).Info("Missing resource metric", "resourceMetric", resource, "pod", klog.KRef(m.Namespace, m.Name))
				break
			}
			sum += v.MilliValue()
		}
		if !missing {
			res[m.Name] = PodMetric{Timestamp: m.Timestamp.Time, Window: m.Window.Duration, Value: sum}
		}
	}
	return res
}

// GetRawMetric reads a pods metric from custom.metrics.k8s.io.
func (c *RESTMetricsClient) GetRawMetric(_ context.Context, metricName, namespace string, selector, metricSelector labels.Selector) (PodMetricsInfo, time.Time, error) {
	list, err := c.custom.NamespacedMetrics(namespace).GetForObjects(schema.GroupKind{Kind: "Pod"}, selector, metricName, metricSelector)
	if err != nil {
		return nil, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from custom metrics API")
	}
	res := make(PodMetricsInfo, len(list.Items))
	for _, m := range list.Items {
		window := customMetricDefaultWindow
		if m.WindowSeconds != nil {
			window = time.Duration(*m.WindowSeconds) * time.Second
		}
		res[m.DescribedObject.Name] = PodMetric{Timestamp: m.Timestamp.Time, Window: window, Value: m.Value.MilliValue()}
	}
	return res, list.Items[0].Timestamp.Time, nil
}

// GetObjectMetric reads an object metric from custom.metrics.k8s.io. A
// Namespace is asked for as the root-scoped object named after the HPA's own
// namespace, whatever name the reference gives: a reference may not leave
// the HPA's namespace.
func (c *RESTMetricsClient) GetObjectMetric(_ context.Context, metricName, namespace string, objectRef *autoscalingv2.CrossVersionObjectReference, metricSelector labels.Selector) (int64, time.Time, error) {
	gvk := schema.FromAPIVersionAndKind(objectRef.APIVersion, objectRef.Kind)
	var (
		value *custommetricsv1beta2.MetricValue
		err   error
	)
	if gvk.Kind == "Namespace" && gvk.Group == "" {
		value, err = c.custom.RootScopedMetrics().GetForObject(gvk.GroupKind(), namespace, metricName, metricSelector)
	} else {
		value, err = c.custom.NamespacedMetrics(namespace).GetForObject(gvk.GroupKind(), objectRef.Name, metricName, metricSelector)
	}
	if err != nil {
		return 0, time.Time{}, fmt.Errorf("unable to fetch metrics from custom metrics API: %w", err)
	}
	return value.Value.MilliValue(), value.Timestamp.Time, nil
}

// GetExternalMetric reads every series of an external metric matching
// selector from external.metrics.k8s.io.
func (c *RESTMetricsClient) GetExternalMetric(_ context.Context, metricName, namespace string, selector labels.Selector) ([]int64, time.Time, error) {
	list, err := c.external.NamespacedMetrics(namespace).List(metricName, selector)
	if err != nil {
		return []int64{}, time.Time{}, fmt.Errorf("unable to fetch metrics from external metrics API: %w", err)
	}
	if len(list.Items) == 0 {
		return nil, time.Time{}, errors.New("no metrics returned from external metrics API")
	}
	res := make([]int64, 0, len(list.Items))
	for _, m := range list.Items {
		res = append(res, m.Value.MilliValue())
	}
	return res, list.Items[0].Timestamp.Time, nil
}
