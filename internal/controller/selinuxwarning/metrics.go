package selinuxwarning

import (
	"sync"
	"sync/atomic"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// conflictDesc is upstream's gauge: 1 for each side of each current conflict.
var conflictDesc = metrics.NewDesc(
	metrics.BuildFQName("", "selinux_warning_controller", "selinux_volume_conflict"),
	"Conflict between two Pods using the same volume",
	[]string{"property", "pod1_namespace", "pod1_name", "pod1_value", "pod2_namespace", "pod2_name", "pod2_value"}, nil,
	metrics.ALPHA, "")

var (
	registerOnce sync.Once
	// current is the cache of the controller set up last: a process sets it up once, a test
	// binary may again after a restart, and the metric follows the running one.
	current atomic.Pointer[volumeCache]
)

// registerMetrics registers upstream's collector in the legacy registry kcm's /metrics
// serves, once, and points it at the given cache.
func registerMetrics(c *volumeCache) {
	current.Store(c)
	registerOnce.Do(func() { legacyregistry.CustomMustRegister(&collector{}) })
}

// collector reports the conflicts the cache holds when /metrics is scraped.
type collector struct{ metrics.BaseStableCollector }

var _ metrics.StableCollector = &collector{}

func (*collector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- conflictDesc }

func (*collector) CollectWithStability(ch chan<- metrics.Metric) {
	c := current.Load()
	if c == nil {
		return
	}
	for _, x := range c.Conflicts() {
		ch <- metrics.NewLazyConstMetric(conflictDesc, metrics.GaugeValue, 1,
			x.Property, x.Pod.Namespace, x.Pod.Name, x.Value, x.OtherPod.Namespace, x.OtherPod.Name, x.OtherValue)
	}
}
