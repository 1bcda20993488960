package noderoute

import (
	"fmt"
	"net"
	"strings"

	netutils "k8s.io/utils/net"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/cloud"
	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is node-route-controller (cloud-controller-manager's route loop,
// k8s.io/cloud-provider v0.37.1) as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:          ControllerName,
	Aliases:       []string{"route"},
	ClientName:    "route-controller",
	CloudProvider: true,
	Flags: append(append([]options.Flag{}, cloud.Flags...), options.AllocateNodeCIDRs, options.ConfigureCloudRoutes,
		options.ClusterCIDR, options.RouteReconciliationPeriod, options.ClusterName),
	Setup: Setup,
}

// Setup runs the route controller when a provider is configured, --allocate-node-cidrs and
// --configure-cloud-routes are set and the provider has routes; otherwise it says why and
// skips, as kube-controller-manager's route controller did. --cluster-cidr must then hold one
// CIDR, or two of different families, with upstream's errors.
func Setup(ctx *setup.Context) error {
	allocate := ctx.Bool(options.AllocateNodeCIDRs)
	configure := ctx.Bool(options.ConfigureCloudRoutes)
	clusterCIDR := ctx.String(options.ClusterCIDR)
	period := ctx.Duration(options.RouteReconciliationPeriod)
	clusterName := ctx.String(options.ClusterName)
	watchNodes := ctx.Enabled(features.CloudControllerManagerWatchBasedRoutesReconciliation)
	provider, err := cloud.Provider(ctx)
	if err != nil {
		return err
	}
	logger := log.Log.WithName("controllers").WithValues("controller", ControllerName)
	if !allocate || !configure {
		logger.Info("Will not configure cloud provider routes for allocate-node-cidrs",
			"allocateNodeCIDRs", allocate, "configureCloudRoutes", configure)
		return setup.ErrSkipped
	}
	routes, ok := provider.Routes()
	if !ok {
		logger.Info("--configure-cloud-routes is set, but cloud provider does not support routes. Will not configure cloud provider routes.",
			"cloudProvider", provider.ProviderName())
		return setup.ErrSkipped
	}
	cidrs, err := clusterCIDRs(clusterCIDR)
	if err != nil {
		return err
	}
	registerMetrics()

	// Writes through client-go (the published helpers) and the cached client share one
	// connection: one token bucket.
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	cs, err := ctx.Clientset()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:       cl,
		Clientset:    cs,
		Recorder:     ctx.Recorder(eventSource),
		Routes:       routes,
		ClusterName:  clusterName,
		ClusterCIDRs: cidrs,
		WatchNodes:   watchNodes,
		Period:       period,
		MinInterval:  DefaultMinInterval,
	}
	setup.Apply(ctx, r)
	if err := r.SetupWithManager(ctx.Manager); err != nil {
		return err
	}
	// running_managed_controllers{name="route"}, as upstream's Run reports it.
	return ctx.Manager.Add(procmetrics.RunningController("route"))
}

// clusterCIDRs parses --cluster-cidr as upstream's route controller does: comma-separated,
// at most two, and two only of different families. An empty value is an invalid CIDR.
func clusterCIDRs(flag string) ([]*net.IPNet, error) {
	cidrs, err := netutils.ParseCIDRs(strings.Split(strings.TrimSpace(flag), ","))
	if err != nil {
		return nil, err
	}
	dualStack, _ := netutils.IsDualStackCIDRs(cidrs)
	if len(cidrs) > 1 && !dualStack {
		return nil, fmt.Errorf("len of ClusterCIDRs==%v and they are not configured as dual stack (at least one from each IPFamily", len(cidrs))
	}
	if len(cidrs) > 2 {
		return nil, fmt.Errorf("length of clusterCIDRs is:%v more than max allowed of 2", len(cidrs))
	}
	return cidrs, nil
}
