package resourcequota

import (
	"fmt"

	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is resourcequota-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"resourcequota"},
	ClientName: ClientName,
	Flags:      []options.Flag{options.ConcurrentResourceQuotaSyncs, options.ResourceQuotaSyncPeriod},
	Setup:      Setup,
}

// Setup runs resourcequota-controller with its own client. Pods, services, claims, resource
// claims and device classes are read from the shared cache; the other kinds quotas count
// (count/<resource>, configmaps, secrets, ...) from a metadata-only cache of the
// controller's own, because the shared cache holds only some ConfigMaps and would hold
// whole Secrets.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentResourceQuotaSyncs)
	cfg, err := ctx.RESTConfig()
	if err != nil {
		return err
	}
	cl, err := ctx.NewClient(cfg, true)
	if err != nil {
		return err
	}
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return fmt.Errorf("building HTTP client for %s: %w", ClientName, err)
	}
	counts, err := cache.New(cfg, cache.Options{
		HTTPClient:       httpClient,
		Scheme:           ctx.Manager.GetScheme(),
		Mapper:           ctx.Manager.GetRESTMapper(),
		DefaultTransform: MetadataTransform,
	})
	if err != nil {
		return fmt.Errorf("building the object count cache of %s: %w", ControllerName, err)
	}
	if err := ctx.Manager.Add(counts); err != nil {
		return err
	}
	// Upstream counts resource claims when the API server serves them
	// (resource.k8s.io/v1 may be turned off with --runtime-config).
	claims, err := served(ctx.Manager.GetRESTMapper(), resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"))
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:     cl,
		Counts:     counts,
		Mapper:     ctx.Manager.GetRESTMapper(),
		SyncPeriod: ctx.Duration(options.ResourceQuotaSyncPeriod),
		Claims:     claims,
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// served reports whether the API server serves a kind.
func served(mapper meta.RESTMapper, gvk schema.GroupVersionKind) (bool, error) {
	if _, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err != nil {
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		return false, fmt.Errorf("looking up %s: %w", gvk, err)
	}
	return true, nil
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/resourcequota/resource_quota_controller.go:114.
var newQueue = setup.Queue("resourcequota_primary")
