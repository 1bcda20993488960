package procmetrics

import (
	"context"
	"fmt"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	_ "k8s.io/apiserver/pkg/cel/metrics" // apiserver_cel_compilation_duration_seconds, apiserver_cel_evaluation_duration_seconds
)

// Upstream's binary registers families of API-server packages it links but never runs:
// cmd/kube-controller-manager/app imports pkg/controller/storageversiongc, which imports
// pkg/controlplane and pkg/controlplane/apiserver, and with them kube-aggregator's and
// apiextensions-apiserver's servers, the certificates registry and the external JWT signer
// plugin. Their package initialisers register families whose series never move in a
// controller manager (or, for the CEL histograms, stay at zero); operators still see their
// names, and the non-vector ones as zero series.
//
// The CEL histograms come from k8s.io/apiserver, which kcm has: imported above, the same
// registration. The others live in k8s.io/kubernetes (which kcm may not import),
// k8s.io/kube-aggregator and k8s.io/apiextensions-apiserver (modules kcm does not link):
// declared here with upstream's name, help, type, stability, label names and buckets, each
// beside the upstream file:line that declares it, and registered at initialisation as those
// packages' initialisers register them.

// kube-aggregator v0.37.1 pkg/apiserver/metrics.go:24 and :37, registered by its init (:49).
var (
	aggregatorX509MissingSAN = k8smetrics.NewCounter(&k8smetrics.CounterOpts{
		Subsystem: "kube_aggregator",
		Namespace: "apiserver",
		Name:      "x509_missing_san_total",
		Help: "Counts the number of requests to servers missing SAN extension " +
			"in their serving certificate OR the number of connection failures " +
			"due to the lack of x509 certificate SAN extension missing " +
			"(either/or, based on the runtime environment)",
		StabilityLevel: k8smetrics.ALPHA,
	})
	aggregatorX509InsecureSHA1 = k8smetrics.NewCounter(&k8smetrics.CounterOpts{
		Subsystem: "kube_aggregator",
		Namespace: "apiserver",
		Name:      "x509_insecure_sha1_total",
		Help: "Counts the number of requests to servers with insecure SHA1 signatures " +
			"in their serving certificate OR the number of connection failures " +
			"due to the insecure SHA1 signatures (either/or, based on the runtime environment)",
		StabilityLevel: k8smetrics.ALPHA,
	})
)

// kube-aggregator v0.37.1 pkg/controllers/openapi/aggregator/metrics.go:25 and :33,
// registered by its init (:43).
var (
	aggregatorOpenAPIV2Regeneration = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           "aggregator_openapi_v2_regeneration_count",
		Help:           "Counter of OpenAPI v2 spec regeneration count broken down by causing APIService name and reason.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"apiservice", "reason"})
	aggregatorOpenAPIV2RegenerationDuration = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Name:           "aggregator_openapi_v2_regeneration_duration",
		Help:           "Gauge of OpenAPI v2 spec regeneration duration in seconds.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"reason"})
)

// apiextensions-apiserver v0.37.1 pkg/controller/openapi/metrics.go:25 and
// pkg/controller/openapiv3/metrics.go:25, each registered by its package's init (:35).
var (
	apiextensionsOpenAPIV2Regeneration = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           "apiextensions_openapi_v2_regeneration_count",
		Help:           "Counter of OpenAPI v2 spec regeneration count broken down by causing CRD name and reason.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"crd", "reason"})
	apiextensionsOpenAPIV3Regeneration = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           "apiextensions_openapi_v3_regeneration_count",
		Help:           "Counter of OpenAPI v3 spec regeneration count broken down by group, version, causing CRD and reason.",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"group", "version", "crd", "reason"})
)

// apiextensions-apiserver v0.37.1 pkg/apiserver/conversion/metrics.go:113 and :122,
// registered when its package variable Metrics is initialised (:102).
var (
	conversionWebhookRequests = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           "conversion_webhook_request_total",
		Namespace:      "apiserver",
		Help:           "Counter for conversion webhook requests with success/failure and failure error type",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"result", "failure_type"})
	conversionWebhookLatency = k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Name:           "conversion_webhook_duration_seconds",
		Namespace:      "apiserver",
		Help:           "Conversion webhook request latency",
		Buckets:        []float64{0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 20, 30, 45, 60},
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"result", "failure_type"})
)

// kubernetes v1.37.1 pkg/registry/certificates/certificates/storage/metrics.go:45 and :57,
// registered by its init (:69).
var (
	csrDurationRequested = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Namespace:      "apiserver",
		Subsystem:      "certificates_registry",
		Name:           "csr_requested_duration_total",
		Help:           "Total number of issued CSRs with a requested duration, sliced by signer (only kubernetes.io signer names are specifically identified)",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"signerName"})
	csrDurationHonored = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Namespace:      "apiserver",
		Subsystem:      "certificates_registry",
		Name:           "csr_honored_duration_total",
		Help:           "Total number of issued CSRs with a requested duration that was honored, sliced by signer (only kubernetes.io signer names are specifically identified)",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"signerName"})
)

// kubernetes v1.37.1 pkg/serviceaccount/externaljwt/metrics/metrics.go:39-93, registered by
// RegisterMetrics (:98), which pkg/serviceaccount/externaljwt/plugin/plugin.go:39 calls from
// its init. The two timestamps are vectors without labels there too: no series until set.
var (
	externalJWTFetchKeysSuccess = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Namespace:      "apiserver",
		Subsystem:      "externaljwt",
		Name:           "fetch_keys_success_timestamp",
		Help:           "Unix Timestamp in seconds of the last successful FetchKeys request",
		StabilityLevel: k8smetrics.ALPHA,
	}, nil)
	externalJWTFetchKeysData = k8smetrics.NewGaugeVec(&k8smetrics.GaugeOpts{
		Namespace:      "apiserver",
		Subsystem:      "externaljwt",
		Name:           "fetch_keys_data_timestamp",
		Help:           "Unix Timestamp in seconds of the last successful FetchKeys data_timestamp value returned by the external signer",
		StabilityLevel: k8smetrics.ALPHA,
	}, nil)
	externalJWTFetchKeysRequests = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Namespace:      "apiserver",
		Subsystem:      "externaljwt",
		Name:           "fetch_keys_request_total",
		Help:           "Total attempts at syncing supported JWKs",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"code"})
	externalJWTSignRequests = k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Namespace:      "apiserver",
		Subsystem:      "externaljwt",
		Name:           "sign_request_total",
		Help:           "Total attempts at signing JWT",
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"code"})
	externalJWTRequestDuration = k8smetrics.NewHistogramVec(&k8smetrics.HistogramOpts{
		Namespace:      "apiserver",
		Subsystem:      "externaljwt",
		Name:           "request_duration_seconds",
		Help:           "Request duration and time for calls to external-jwt-signer",
		Buckets:        []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60},
		StabilityLevel: k8smetrics.ALPHA,
	}, []string{"method", "code"})
)

// linkedFamilies are the families declared above, in registration order.
var linkedFamilies = []k8smetrics.Registerable{
	aggregatorX509MissingSAN, aggregatorX509InsecureSHA1,
	aggregatorOpenAPIV2Regeneration, aggregatorOpenAPIV2RegenerationDuration,
	apiextensionsOpenAPIV2Regeneration, apiextensionsOpenAPIV3Regeneration,
	conversionWebhookRequests, conversionWebhookLatency,
	csrDurationRequested, csrDurationHonored,
	externalJWTFetchKeysSuccess, externalJWTFetchKeysData, externalJWTFetchKeysRequests,
	externalJWTSignRequests, externalJWTRequestDuration,
}

func init() {
	for _, c := range linkedFamilies {
		legacyregistry.MustRegister(c)
	}
}

// LeaderElection registers leader_election_master_status and leader_election_slowpath_total
// as upstream's process has them once its elector is made, which upstream does at startup
// with --leader-elect (and never without it): manager.New calls it then, with the lease name.
//
// component-base's leader-election provider (linked through procmetrics.go's clientgo import)
// registers both in legacyregistry the first time client-go makes an elector's metric. kcm's
// elector is controller-runtime's, made only once the Manager starts, so the slow-path counter
// (a vector that has no series until an elector takes its slow path) would not be registered
// before then. An elector that is never run makes client-go ask the provider now; the
// families are the provider's own, so kcm's real elector reports into them. Constructing it
// sets master_status{name} to 0, as upstream's elector does when it is made; kcm's elector,
// under the same lease name, sets the series to 1 once it leads.
//
// It also checks that the provider is component-base's: were another package's provider set
// first (controller-runtime's, if the initialisation order changed), leader_election_* would
// go to another registry and the slow-path family would be missing from legacyregistry.
func LeaderElection(name string) error {
	// The lock is never taken: the constructor only asks it for an identity.
	lock := &resourcelock.LeaseLock{LockConfig: resourcelock.ResourceLockConfig{Identity: "kcm"}}
	if _, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: name,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	}); err != nil {
		return err
	}
	// Registering the provider's family again is refused only if it is registered already.
	probe := k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           "leader_election_slowpath_total",
		StabilityLevel: k8smetrics.ALPHA,
		Help:           "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
	}, []string{"name"})
	if err := legacyregistry.Register(probe); err == nil {
		return fmt.Errorf("client-go's leader-election metrics provider is not component-base's: leader_election_slowpath_total was not registered in legacyregistry")
	} else if _, ok := err.(prometheus.AlreadyRegisteredError); !ok {
		return fmt.Errorf("leader_election_slowpath_total: %w", err)
	}
	return nil
}
