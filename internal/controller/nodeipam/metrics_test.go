package nodeipam_test

import (
	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// cidrSetMetrics are upstream's node_ipam_controller cidrset families of one cluster CIDR,
// read from the legacy registry /metrics serves: the counters' and gauges' values by family
// name, and the tries histogram's sample count.
type cidrSetMetrics struct {
	values map[string]float64
	tries  uint64
}

func readCIDRSet(g Gomega, clusterCIDR string) cidrSetMetrics {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	types := map[string]dto.MetricType{
		"node_ipam_controller_cidrset_cidrs_allocations_total":      dto.MetricType_COUNTER,
		"node_ipam_controller_cidrset_cidrs_releases_total":         dto.MetricType_COUNTER,
		"node_ipam_controller_cirdset_max_cidrs":                    dto.MetricType_GAUGE,
		"node_ipam_controller_cidrset_usage_cidrs":                  dto.MetricType_GAUGE,
		"node_ipam_controller_cidrset_allocation_tries_per_request": dto.MetricType_HISTOGRAM,
	}
	m := cidrSetMetrics{values: map[string]float64{}}
	for _, f := range families {
		t, ok := types[f.GetName()]
		if !ok {
			continue
		}
		g.Expect(f.GetType()).To(Equal(t), f.GetName())
		for _, s := range f.GetMetric() {
			g.Expect(s.GetLabel()).To(HaveLen(1))
			g.Expect(s.GetLabel()[0].GetName()).To(Equal("clusterCIDR"))
			if s.GetLabel()[0].GetValue() != clusterCIDR {
				continue
			}
			m.values[f.GetName()] = s.GetCounter().GetValue() + s.GetGauge().GetValue()
			if h := s.GetHistogram(); h != nil {
				// Upstream's buckets: 1, 5, 25, 125, 625.
				g.Expect(h.GetBucket()).To(HaveLen(5))
				g.Expect(h.GetBucket()[4].GetUpperBound()).To(Equal(625.0))
				m.tries = h.GetSampleCount()
			}
		}
	}
	return m
}
