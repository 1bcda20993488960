package procmetrics

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/util/workqueue"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's work queues report through k8s.io/component-base/metrics/prometheus/workqueue:
// client-go's global queue metrics provider, registering workqueue_* with the one label
// {name} in legacyregistry. kcm's queues are controller-runtime's priority queues, which take
// their provider per queue and default to controller-runtime's (labels {name, controller},
// plus priority on depth, in controller-runtime's registry). component-base exports neither
// its provider nor its metrics, so WorkqueueProvider declares the same families (names,
// help, stability, buckets, labels: component-base v0.37.1's metrics.go) for kcm's queues.
//
// Both sets live in legacyregistry, serving one family each: queues that libraries make with
// client-go's global provider (k8s.io/apiserver's certificate controllers, as upstream's
// "DynamicServingCertificateController") keep reporting through component-base's vectors,
// kcm's through these, each queue under its own name. These are registered unchecked (no
// descriptors), which is what lets two collectors feed one family; the registry still checks,
// at every gather, that help and type agree and that no series appears twice.
var (
	wqDepth = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Subsystem:      "workqueue",
		Name:           "depth",
		StabilityLevel: k8smetrics.BETA,
		Help:           "Current depth of workqueue",
	}, []string{"name"})

	wqAdds = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      "workqueue",
		Name:           "adds_total",
		StabilityLevel: k8smetrics.BETA,
		Help:           "Total number of adds handled by workqueue",
	}, []string{"name"})

	wqLatency = k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Subsystem:      "workqueue",
		Name:           "queue_duration_seconds",
		StabilityLevel: k8smetrics.BETA,
		Help:           "How long in seconds an item stays in workqueue before being requested.",
		Buckets:        k8smetrics.ExponentialBuckets(10e-9, 10, 10),
	}, []string{"name"})

	wqWorkDuration = k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Subsystem:      "workqueue",
		Name:           "work_duration_seconds",
		StabilityLevel: k8smetrics.BETA,
		Help:           "How long in seconds processing an item from workqueue takes.",
		Buckets:        k8smetrics.ExponentialBuckets(10e-9, 10, 10),
	}, []string{"name"})

	wqUnfinished = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Subsystem:      "workqueue",
		Name:           "unfinished_work_seconds",
		StabilityLevel: k8smetrics.BETA,
		Help: "How many seconds of work has done that " +
			"is in progress and hasn't been observed by work_duration. Large " +
			"values indicate stuck threads. One can deduce the number of stuck " +
			"threads by observing the rate at which this increases.",
	}, []string{"name"})

	wqLongestRunningProcessor = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Subsystem:      "workqueue",
		Name:           "longest_running_processor_seconds",
		StabilityLevel: k8smetrics.BETA,
		Help: "How many seconds has the longest running " +
			"processor for workqueue been running.",
	}, []string{"name"})

	wqRetries = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Subsystem:      "workqueue",
		Name:           "retries_total",
		StabilityLevel: k8smetrics.BETA,
		Help:           "Total number of retries handled by workqueue",
	}, []string{"name"})

	wqRegister sync.Once
)

// registerWorkqueue registers kcm's workqueue_* vectors in legacyregistry, once, when the
// first queue is made (as component-base registers its own).
func registerWorkqueue() {
	wqRegister.Do(func() {
		c := uncheckedCollector{}
		for _, m := range []interface {
			k8smetrics.Registerable
			prometheus.Collector
		}{wqDepth, wqAdds, wqLatency, wqWorkDuration, wqUnfinished, wqLongestRunningProcessor, wqRetries} {
			// Create is what registering in a KubeRegistry does first: it makes the
			// vector (a k8smetrics vector records nothing before).
			if m.Create(nil) {
				c = append(c, m)
			}
		}
		legacyregistry.RawMustRegister(c)
	})
}

// uncheckedCollector collects its collectors and describes nothing, so the registry accepts
// it beside component-base's collectors of the same families.
type uncheckedCollector []prometheus.Collector

func (uncheckedCollector) Describe(chan<- *prometheus.Desc) {}

func (u uncheckedCollector) Collect(ch chan<- prometheus.Metric) {
	for _, c := range u {
		c.Collect(ch)
	}
}

// WorkqueueProvider is the metrics provider of kcm's work queues: upstream's workqueue_*
// families, labelled {name} only.
func WorkqueueProvider() workqueue.MetricsProvider { return workqueueProvider{} }

type workqueueProvider struct{}

func (workqueueProvider) NewDepthMetric(name string) workqueue.GaugeMetric {
	registerWorkqueue()
	return wqDepth.WithLabelValues(name)
}

func (workqueueProvider) NewAddsMetric(name string) workqueue.CounterMetric {
	registerWorkqueue()
	return wqAdds.WithLabelValues(name)
}

func (workqueueProvider) NewLatencyMetric(name string) workqueue.HistogramMetric {
	registerWorkqueue()
	return wqLatency.WithLabelValues(name)
}

func (workqueueProvider) NewWorkDurationMetric(name string) workqueue.HistogramMetric {
	registerWorkqueue()
	return wqWorkDuration.WithLabelValues(name)
}

func (workqueueProvider) NewUnfinishedWorkSecondsMetric(name string) workqueue.SettableGaugeMetric {
	registerWorkqueue()
	return wqUnfinished.WithLabelValues(name)
}

func (workqueueProvider) NewLongestRunningProcessorSecondsMetric(name string) workqueue.SettableGaugeMetric {
	registerWorkqueue()
	return wqLongestRunningProcessor.WithLabelValues(name)
}

func (workqueueProvider) NewRetriesMetric(name string) workqueue.CounterMetric {
	registerWorkqueue()
	return wqRetries.WithLabelValues(name)
}
