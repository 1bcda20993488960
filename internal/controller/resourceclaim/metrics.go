package resourceclaim

import (
	"context"
	"sync"
	"sync/atomic"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	drametrics "k8s.io/dynamic-resource-allocation/resourceclaim/metrics"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
)

// Upstream's metrics of the controller: dynamic_resource_allocation_resourceclaim_creates_total
// (the published module's counter, shared with the scheduler upstream), and
// dynamic_resource_allocation_resource_claims, the claims in the cache counted at each
// scrape by allocation, admin access and source.
var (
	numClaimsDesc = metrics.NewDesc(
		metrics.BuildFQName("", "dynamic_resource_allocation", "resource_claims"),
		"Number of ResourceClaims, categorized by allocation status, admin access, and source. "+
			"Source can be 'resource_claim_template' (created from a template), "+
			"'extended_resource' (extended resources), or empty (manually created by a user).",
		[]string{"allocated", "admin_access", "source"}, nil,
		metrics.ALPHA, "")

	registerOnce sync.Once
	// claimReader is the cache the collector counts: the last manager set up (tests start
	// several in one process; the registry is the process's).
	claimReader atomic.Pointer[client.Reader]
)

// registerMetrics registers the families once per process, as upstream's constructor does,
// and points the claim count at reader.
func registerMetrics(reader client.Reader) {
	claimReader.Store(&reader)
	registerOnce.Do(func() {
		drametrics.RegisterMetrics()
		legacyregistry.CustomMustRegister(&claimCollector{})
	})
}

// claimCollector counts the cached claims at each scrape.
type claimCollector struct{ metrics.BaseStableCollector }

func (*claimCollector) DescribeWithStability(ch chan<- *metrics.Desc) { ch <- numClaimsDesc }

func (*claimCollector) CollectWithStability(ch chan<- metrics.Metric) {
	reader := claimReader.Load()
	if reader == nil {
		return
	}
	claims := &resourceapi.ResourceClaimList{}
	if err := (*reader).List(context.Background(), claims, client.UnsafeDisableDeepCopy); err != nil {
		ctrllog.Log.WithName(ControllerName).Error(err, "failed to list resource claims for metrics collection")
		return
	}
	type key struct{ allocated, adminAccess, source string }
	counts := map[key]int{}
	for i := range claims.Items {
		c := &claims.Items[i]
		allocated := "false"
		if c.Status.Allocation != nil {
			allocated = "true"
		}
		counts[key{allocated, adminAccessLabel(c), sourceLabel(c)}]++
	}
	for k, n := range counts {
		ch <- metrics.NewLazyConstMetric(numClaimsDesc, metrics.GaugeValue, float64(n), k.allocated, k.adminAccess, k.source)
	}
}
