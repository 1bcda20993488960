package attachdetach

import (
	"sync"
	"sync/atomic"

	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// Upstream's metric families (pkg/controller/volume/attachdetach/metrics), with their names,
// labels and stability.
var (
	inUseDesc = metrics.NewDesc(
		metrics.BuildFQName("", "storage_count", "attachable_volumes_in_use"),
		"Measure number of volumes in use",
		[]string{"node", "volume_plugin"}, nil,
		metrics.ALPHA, "")

	totalVolumesDesc = metrics.NewDesc(
		metrics.BuildFQName("", "attachdetach_controller", "total_volumes"),
		"Number of volumes in A/D Controller",
		[]string{"plugin_name", "state"}, nil,
		metrics.ALPHA, "")

	// forcedDetaches counts detaches done without waiting for unmount, by reason.
	forcedDetaches = metrics.NewCounterVec(
		&metrics.CounterOpts{
			Subsystem:      "attach_detach_controller",
			Name:           "attachdetach_controller_forced_detaches",
			Help:           "Number of times the A/D Controller performed a forced detach",
			StabilityLevel: metrics.ALPHA,
		},
		[]string{"reason"},
	)
)

// nodeStats are one node's counts by volume plugin label: its pods' CSI volumes (inUse), the
// volumes they need attached (desired) and its attachments (actual).
type nodeStats struct {
	inUse, desired, actual map[string]int
}

var (
	registerOnce sync.Once
	// current is the controller set up last: a process sets it up once, a test binary may
	// again after a restart, and the metrics follow the running one.
	current atomic.Pointer[Reconciler]
)

// registerMetrics registers upstream's families in the legacy registry kcm's /metrics
// serves, once, and points the gauges at r.
func registerMetrics(r *Reconciler) {
	current.Store(r)
	registerOnce.Do(func() {
		legacyregistry.CustomMustRegister(&collector{})
		legacyregistry.MustRegister(forcedDetaches)
	})
}

// collector reports the counts of the last reconcile of every node when /metrics is scraped.
type collector struct{ metrics.BaseStableCollector }

var _ metrics.StableCollector = &collector{}

func (*collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- inUseDesc
	ch <- totalVolumesDesc
}

func (*collector) CollectWithStability(ch chan<- metrics.Metric) {
	r := current.Load()
	if r == nil {
		return
	}
	r.mu.Lock()
	desired, actual := map[string]int{}, map[string]int{}
	type inUse struct {
		node, plugin string
		n            int
	}
	var used []inUse
	for node, s := range r.stats {
		for plugin, n := range s.inUse {
			used = append(used, inUse{node, plugin, n})
		}
		for plugin, n := range s.desired {
			desired[plugin] += n
		}
		for plugin, n := range s.actual {
			actual[plugin] += n
		}
	}
	r.mu.Unlock()
	for _, u := range used {
		ch <- metrics.NewLazyConstMetric(inUseDesc, metrics.GaugeValue, float64(u.n), u.node, u.plugin)
	}
	for plugin, n := range desired {
		ch <- metrics.NewLazyConstMetric(totalVolumesDesc, metrics.GaugeValue, float64(n), plugin, "desired_state_of_world")
	}
	for plugin, n := range actual {
		ch <- metrics.NewLazyConstMetric(totalVolumesDesc, metrics.GaugeValue, float64(n), plugin, "actual_state_of_world")
	}
}
