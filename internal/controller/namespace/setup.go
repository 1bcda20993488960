package namespace

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is namespace-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:        ControllerName,
	Aliases:     []string{"namespace"},
	ClientName:  ClientName,
	Flags:       []options.Flag{options.ConcurrentNamespaceSyncs, options.NamespaceSyncPeriod},
	Convergence: &Convergence,
	Setup:       Setup,
}

// Setup runs namespace-controller as upstream wires it: its own client at 20 times
// --kube-api-qps and 100 times --kube-api-burst, a metadata client for the deletes and a
// discovery client, all sharing that client's rate limiter.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentNamespaceSyncs)
	cfg, err := ctx.ScaledRESTConfig(QPSMultiplier, BurstMultiplier)
	if err != nil {
		return err
	}
	// As upstream, deprecation warnings of the resources it deletes generically are not logged.
	cfg.WarningHandler = rest.NoWarnings{}
	// No cache: as upstream, the controller reads the namespace and its pods live.
	cl, err := ctx.NewClient(cfg, false)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building metadata client for %s: %w", ClientName, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building discovery client for %s: %w", ClientName, err)
	}
	r := &Reconciler{
		Client:     cl,
		Metadata:   md,
		Discover:   dc.ServerPreferredNamespacedResources,
		SyncPeriod: ctx.Duration(options.NamespaceSyncPeriod),
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/namespace/namespace_controller.go:80.
var newQueue = setup.Queue("namespace")
