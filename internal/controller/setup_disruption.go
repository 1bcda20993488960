package controller

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"

	"github.com/kcm/kcm/internal/controller/disruption"
)

// setupDisruption runs disruption-controller with upstream's client name: the budgets with
// --concurrent-disruption-syncs workers (default 1), and the stale DisruptionTarget cleanup
// with one worker, as upstream.
func setupDisruption(ctx *Context) error {
	cl, err := ctx.Client("disruption-controller")
	if err != nil {
		return err
	}
	cfg := rest.CopyConfig(ctx.Config)
	cfg.QPS, cfg.Burst = ctx.Options.KubeAPIQPS, int(ctx.Options.KubeAPIBurst)
	cfg.UserAgent = UserAgent("disruption-controller")
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building discovery client for disruption-controller: %w", err)
	}
	r := &disruption.Reconciler{
		Client:    cl,
		Recorder:  ctx.Recorder(disruption.ControllerName),
		Discovery: disc,
	}
	if err := r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-disruption-syncs", 1)); err != nil {
		return err
	}
	stale := &disruption.StalePodReconciler{Client: cl}
	return stale.SetupWithManager(ctx.Manager)
}
