package disruption

import (
	"fmt"

	"k8s.io/client-go/discovery"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is disruption-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"disruption"},
	ClientName: "disruption-controller",
	Flags:      []options.Flag{options.ConcurrentDisruptionSyncs},
	Setup:      Setup,
}

// Setup runs disruption-controller: the budgets with --concurrent-disruption-syncs workers
// (default 1), and the stale DisruptionTarget cleanup with one worker, as upstream. The
// discovery client (scale subresources of custom controllers) shares the client's bucket.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentDisruptionSyncs)
	cfg, err := ctx.RESTConfig()
	if err != nil {
		return err
	}
	cl, err := ctx.NewClient(cfg, true)
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building discovery client for %s: %w", ControllerName, err)
	}
	r := &Reconciler{
		Client:    cl,
		Recorder:  ctx.Recorder(EventSource),
		Discovery: disc,
	}
	setup.Apply(ctx, r)
	if err := r.SetupWithManager(ctx.Manager, workers); err != nil {
		return err
	}
	stale := &StalePodReconciler{Client: cl}
	setup.Apply(ctx, stale)
	return stale.SetupWithManager(ctx.Manager)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/disruption/disruption.go:189.
var newQueue = setup.Queue("disruption")

// newStalePodQueue names the work queue of StalePodControllerName as upstream names its own:
// pkg/controller/disruption/disruption.go:204.
var newStalePodQueue = setup.Queue("stale_pod_disruption")
