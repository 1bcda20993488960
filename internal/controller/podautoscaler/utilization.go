package podautoscaler

import "errors"

// resourceUtilizationRatio compares the pods' summed usage with their summed
// requests, as upstream's GetResourceUtilizationRatio: it returns the ratio
// of the utilization (whole percent, rounded down) to the target, the
// utilization, and the average raw usage. Samples of pods without a request
// (pods no longer selected) are left out.
func resourceUtilizationRatio(metrics PodMetricsInfo, requests map[string]int64, targetUtilization int32) (ratio float64, utilization int32, rawAverage int64, err error) {
	usageTotal, requestsTotal, n := int64(0), int64(0), 0
	for name, m := range metrics {
		request, ok := requests[name]
		if !ok {
			continue
		}
		usageTotal += m.Value
		requestsTotal += request
		n++
	}
	// Samples disjoint from the requests leave nothing to divide by.
	if requestsTotal == 0 {
		return 0, 0, 0, errors.New("no metrics returned matched known pods")
	}
	utilization = int32(usageTotal * 100 / requestsTotal)
	return float64(utilization) / float64(targetUtilization), utilization, usageTotal / int64(n), nil
}

// metricUsageRatio compares the pods' average usage (rounded down) with the
// target, as upstream's GetMetricUsageRatio; metrics is never empty here.
func metricUsageRatio(metrics PodMetricsInfo, targetUsage int64) (ratio float64, usage int64) {
	total := int64(0)
	for _, m := range metrics {
		total += m.Value
	}
	usage = total / int64(len(metrics))
	return float64(usage) / float64(targetUsage), usage
}
