package nodelifecycle_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"

	"github.com/kcm/kcm/internal/testenv"
)

// collector reads upstream's node_collector families from the legacy registry /metrics
// serves: the per-zone gauges and counter by their only label, zone, and the two histograms'
// sample counts, with upstream's types and buckets.
type collector struct {
	zoneSize, zoneHealth, unhealthy, evictions map[string]float64
	nodeUpdates, allUpdates                    uint64
}

func readCollector(g Gomega) collector {
	byZone := func(name string, t dto.MetricType) map[string]float64 {
		f, into := testenv.ReadFamily(name), map[string]float64{}
		g.Expect(f.Series).NotTo(BeEmpty(), "%s is registered and has series", name)
		g.Expect(f.Type).To(Equal(t), name)
		for _, s := range f.Series {
			g.Expect(s.Labels).To(HaveLen(1))
			g.Expect(s.Labels).To(HaveKey("zone"))
			into[s.Labels["zone"]] = s.Value
		}
		return into
	}
	histogram := func(name string, first float64) uint64 {
		f := testenv.ReadFamily(name)
		g.Expect(f.Type).To(Equal(dto.MetricType_HISTOGRAM), name)
		g.Expect(f.Series).To(HaveLen(1))
		g.Expect(f.Series[0].Labels).To(BeEmpty())
		h := f.Series[0].Histogram
		// Upstream's buckets: ×4, 8 of them.
		g.Expect(h.GetBucket()).To(HaveLen(8))
		g.Expect(h.GetBucket()[0].GetUpperBound()).To(Equal(first))
		return h.GetSampleCount()
	}
	return collector{
		zoneSize:    byZone("node_collector_zone_size", dto.MetricType_GAUGE),
		zoneHealth:  byZone("node_collector_zone_health", dto.MetricType_GAUGE),
		unhealthy:   byZone("node_collector_unhealthy_nodes_in_zone", dto.MetricType_GAUGE),
		evictions:   byZone("node_collector_evictions_total", dto.MetricType_COUNTER),
		nodeUpdates: histogram("node_collector_update_node_health_duration_seconds", 0.001),
		allUpdates:  histogram("node_collector_update_all_nodes_health_duration_seconds", 0.01),
	}
}
