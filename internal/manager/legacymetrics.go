package manager

import (
	"errors"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
	// controller-runtime registers its controller metrics and its Go and process collectors
	// when this package is initialised: imported so that that happens before init below.
	_ "sigs.k8s.io/controller-runtime/pkg/controller"

	// Upstream's process-wide families (rest_client_*, workqueue_*, leader_election_*,
	// informer_*, kubernetes_build_info) in legacyregistry, linked wherever the manager is.
	_ "github.com/kcm/kcm/internal/procmetrics"
)

// Upstream's kube-controller-manager exports every family through component-base's
// legacyregistry (its own, client-go's through component-base's adapters, the Go and process
// collectors); controller-runtime keeps its own registry (controller_runtime_*, and its
// adapters for client-go, which kcm does not use: see internal/procmetrics). /metrics serves
// ctrlmetrics.Registry, which is made here to gather both. It is done at package
// initialisation, before any manager serves /metrics.
//
// A family both registries carry is served from legacyregistry, as upstream registers it:
// controller-runtime's copies of upstream's families (workqueue_*, rest_client_requests_total,
// leader_election_master_status) stay empty since kcm reports through upstream's, and its Go
// and process collectors, the same as legacyregistry's, are dropped so that a scrape reads the
// runtime once.
func init() {
	if own, ok := ctrlmetrics.Registry.(*prometheus.Registry); ok {
		own.Unregister(collectors.NewGoCollector(collectors.WithGoCollectorRuntimeMetrics(collectors.MetricsAll)))
		own.Unregister(collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	ctrlmetrics.Registry = withLegacyRegistry(ctrlmetrics.Registry, legacyregistry.DefaultGatherer)
}

// registererGatherer registers into controller-runtime's registry and gathers from both.
type registererGatherer struct {
	prometheus.Registerer
	prometheus.Gatherer
}

// withLegacyRegistry returns a registry that registers into own and gathers legacy's
// families and then own's. A family both hold is served once, from legacy, as a metric may
// appear only once on /metrics and legacy's are upstream's.
func withLegacyRegistry(own ctrlmetrics.RegistererGatherer, legacy prometheus.Gatherer) ctrlmetrics.RegistererGatherer {
	gather := func() ([]*dto.MetricFamily, error) {
		families, legacyErr := legacy.Gather()
		seen := make(map[string]bool, len(families))
		for _, mf := range families {
			seen[mf.GetName()] = true
		}
		more, ownErr := own.Gather()
		for _, mf := range more {
			if !seen[mf.GetName()] {
				families = append(families, mf)
			}
		}
		sort.Slice(families, func(i, j int) bool { return families[i].GetName() < families[j].GetName() })
		return families, errors.Join(legacyErr, ownErr)
	}
	return registererGatherer{Registerer: own, Gatherer: prometheus.GathererFunc(gather)}
}
