package manager

import (
	"errors"
	"sort"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"
)

// Upstream's kube-controller-manager exports its component metrics (kubernetes_feature_enabled,
// and whatever else component-base and its libraries register) through component-base's
// legacyregistry; controller-runtime's /metrics serves only its own registry. Gathering both
// there makes everything registered in the legacy registry appear on kcm's /metrics with no
// further wiring. It is done at package initialisation, before any manager serves /metrics.
func init() {
	ctrlmetrics.Registry = withLegacyRegistry(ctrlmetrics.Registry, legacyregistry.DefaultGatherer)
}

// registererGatherer registers into controller-runtime's registry and gathers from both.
type registererGatherer struct {
	prometheus.Registerer
	prometheus.Gatherer
}

// withLegacyRegistry returns a registry that registers into own and gathers own's families
// and then legacy's. A family both hold (the Go runtime and process collectors, which both
// registries carry) is served once, from own, as a metric may appear only once on /metrics.
func withLegacyRegistry(own ctrlmetrics.RegistererGatherer, legacy prometheus.Gatherer) ctrlmetrics.RegistererGatherer {
	gather := func() ([]*dto.MetricFamily, error) {
		families, ownErr := own.Gather()
		seen := make(map[string]bool, len(families))
		for _, mf := range families {
			seen[mf.GetName()] = true
		}
		more, legacyErr := legacy.Gather()
		for _, mf := range more {
			if !seen[mf.GetName()] {
				families = append(families, mf)
			}
		}
		sort.Slice(families, func(i, j int) bool { return families[i].GetName() < families[j].GetName() })
		return families, errors.Join(ownErr, legacyErr)
	}
	return registererGatherer{Registerer: own, Gatherer: prometheus.GathererFunc(gather)}
}
