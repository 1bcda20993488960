package nodeipam_test

import (
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/testenv"
)

// cidrSetMetrics are upstream's node_ipam_controller cidrset families of one cluster CIDR,
// read from the legacy registry /metrics serves: the counters' and gauges' values by family
// name, and the tries histogram's sample count.
type cidrSetMetrics struct {
	values map[string]float64
	tries  uint64
}

func readCIDRSet(g Gomega, clusterCIDR string) cidrSetMetrics {
	labels := map[string]string{"clusterCIDR": clusterCIDR}
	m := cidrSetMetrics{values: map[string]float64{}}
	for _, name := range []string{
		"node_ipam_controller_cidrset_cidrs_allocations_total", "node_ipam_controller_cidrset_cidrs_releases_total",
		"node_ipam_controller_cirdset_max_cidrs", "node_ipam_controller_cidrset_usage_cidrs",
	} {
		m.values[name] = testenv.Sample(name, labels)
	}
	if h := testenv.Histogram("node_ipam_controller_cidrset_allocation_tries_per_request", labels); h != nil {
		// Upstream's buckets: 1, 5, 25, 125, 625.
		g.Expect(h.GetBucket()).To(HaveLen(5))
		g.Expect(h.GetBucket()[4].GetUpperBound()).To(Equal(625.0))
		m.tries = h.GetSampleCount()
	}
	return m
}
