package nodelifecycle_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// collector reads upstream's node_collector families from the legacy registry /metrics
// serves: the per-zone gauges and counter by their only label, zone, and the two histograms'
// sample counts, with upstream's types and buckets.
type collector struct {
	zoneSize, zoneHealth, unhealthy, evictions map[string]float64
	nodeUpdates, allUpdates                    uint64
}

func readCollector(g Gomega) collector {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	c := collector{zoneSize: map[string]float64{}, zoneHealth: map[string]float64{}, unhealthy: map[string]float64{}, evictions: map[string]float64{}}
	byZone := func(f *dto.MetricFamily, t dto.MetricType, into map[string]float64) {
		g.Expect(f.GetType()).To(Equal(t), f.GetName())
		for _, m := range f.GetMetric() {
			g.Expect(m.GetLabel()).To(HaveLen(1))
			g.Expect(m.GetLabel()[0].GetName()).To(Equal("zone"))
			into[m.GetLabel()[0].GetValue()] = m.GetGauge().GetValue() + m.GetCounter().GetValue()
		}
	}
	histogram := func(f *dto.MetricFamily, first float64) uint64 {
		g.Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
		g.Expect(f.GetMetric()).To(HaveLen(1))
		g.Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
		h := f.GetMetric()[0].GetHistogram()
		// Upstream's buckets: ×4, 8 of them.
		g.Expect(h.GetBucket()).To(HaveLen(8))
		g.Expect(h.GetBucket()[0].GetUpperBound()).To(Equal(first))
		return h.GetSampleCount()
	}
	found := 0
	for _, f := range families {
		found++
		switch f.GetName() {
		case "node_collector_zone_size":
			byZone(f, dto.MetricType_GAUGE, c.zoneSize)
		case "node_collector_zone_health":
			byZone(f, dto.MetricType_GAUGE, c.zoneHealth)
		case "node_collector_unhealthy_nodes_in_zone":
			byZone(f, dto.MetricType_GAUGE, c.unhealthy)
		case "node_collector_evictions_total":
			byZone(f, dto.MetricType_COUNTER, c.evictions)
		case "node_collector_update_node_health_duration_seconds":
			c.nodeUpdates = histogram(f, 0.001)
		case "node_collector_update_all_nodes_health_duration_seconds":
			c.allUpdates = histogram(f, 0.01)
		default:
			found--
		}
	}
	g.Expect(found).To(Equal(6), "all six node_collector families are registered and have series")
	return c
}
