package controller

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/namespace"
	"github.com/kcm/kcm/internal/controller/resourcequota"
)

// namespaceFlags are the upstream flags the namespace-controller reads.
var namespaceFlags = []string{"concurrent-namespace-syncs", "namespace-sync-period"}

// resourceQuotaFlags are the upstream flags the resourcequota-controller reads.
var resourceQuotaFlags = []string{"concurrent-resource-quota-syncs", "resource-quota-sync-period"}

// setupNamespace runs namespace-controller as upstream wires it: its own client at 20 times
// --kube-api-qps and 100 times --kube-api-burst, a metadata client for the deletes and a
// discovery client, all sharing that client's rate limiter.
func setupNamespace(ctx *Context) error {
	cfg := rest.CopyConfig(ctx.Config)
	cfg.QPS = ctx.Options.KubeAPIQPS * namespace.QPSMultiplier
	cfg.Burst = int(ctx.Options.KubeAPIBurst) * namespace.BurstMultiplier
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	cfg.UserAgent = UserAgent(namespace.ClientName)
	// As upstream, deprecation warnings of the resources it deletes generically are not logged.
	cfg.WarningHandler = rest.NoWarnings{}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("building HTTP client for %s: %w", namespace.ClientName, err)
	}
	// No cache: as upstream, the controller reads the namespace and its pods live.
	cl, err := client.New(cfg, client.Options{HTTPClient: httpClient, Scheme: ctx.Manager.GetScheme(), Mapper: ctx.Manager.GetRESTMapper()})
	if err != nil {
		return fmt.Errorf("building client for %s: %w", namespace.ClientName, err)
	}
	md, err := metadata.NewForConfigAndClient(cfg, httpClient)
	if err != nil {
		return fmt.Errorf("building metadata client for %s: %w", namespace.ClientName, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfigAndClient(cfg, httpClient)
	if err != nil {
		return fmt.Errorf("building discovery client for %s: %w", namespace.ClientName, err)
	}
	r := &namespace.Reconciler{
		Client:     cl,
		Metadata:   md,
		Discover:   dc.ServerPreferredNamespacedResources,
		SyncPeriod: ctx.Options.Duration("namespace-sync-period"),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-namespace-syncs", namespace.Workers))
}

// setupResourceQuota runs resourcequota-controller with its own client. Pods, services and
// claims are read from the shared cache; the other kinds quotas count (count/<resource>,
// configmaps, secrets, ...) from a metadata-only cache of the controller's own, because the
// shared cache holds only some ConfigMaps and would hold whole Secrets.
func setupResourceQuota(ctx *Context) error {
	cl, err := ctx.Client(resourcequota.ClientName)
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(ctx.Config)
	cfg.QPS = ctx.Options.KubeAPIQPS
	cfg.Burst = int(ctx.Options.KubeAPIBurst)
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	cfg.UserAgent = UserAgent(resourcequota.ClientName)
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("building HTTP client for %s: %w", resourcequota.ClientName, err)
	}
	counts, err := cache.New(cfg, cache.Options{
		HTTPClient:       httpClient,
		Scheme:           ctx.Manager.GetScheme(),
		Mapper:           ctx.Manager.GetRESTMapper(),
		DefaultTransform: resourcequota.MetadataTransform,
	})
	if err != nil {
		return fmt.Errorf("building the object count cache of %s: %w", resourcequota.ControllerName, err)
	}
	if err := ctx.Manager.Add(counts); err != nil {
		return err
	}
	r := &resourcequota.Reconciler{
		Client:     cl,
		Counts:     counts,
		Mapper:     ctx.Manager.GetRESTMapper(),
		SyncPeriod: ctx.Options.Duration("resource-quota-sync-period"),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-resource-quota-syncs", resourcequota.Workers))
}
