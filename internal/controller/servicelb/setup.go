package servicelb

import (
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/cloud"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is service-lb-controller (cloud-controller-manager's loop, k8s.io/cloud-provider
// v0.37.1) as kcm's registry knows it: on by default, it runs only with a --cloud-provider.
var Descriptor = setup.Descriptor{
	Name:          ControllerName,
	Aliases:       []string{"service"},
	ClientName:    "service-controller",
	CloudProvider: true,
	Flags:         append(append([]options.Flag{}, cloud.Flags...), options.ConcurrentServiceSyncs, options.ClusterName),
	Convergence:   &Convergence,
	Setup:         Setup,
}

// Setup runs service-lb-controller with --concurrent-service-syncs workers against the
// --cloud-provider's load balancers, named for --cluster-name. Without a provider, or with
// one that has no load balancers, it does not run, as upstream's cloud-controller-manager
// does not start it.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentServiceSyncs)
	clusterName := ctx.String(options.ClusterName)
	provider, err := cloud.Provider(ctx)
	if err != nil {
		return err
	}
	balancer, ok := provider.LoadBalancer()
	if !ok {
		log.Log.WithName("controllers").WithValues("controller", ControllerName).Info(
			"Failed to start service controller: the cloud provider does not support external load balancers",
			"cloudProvider", provider.ProviderName())
		return setup.ErrSkipped
	}
	registerMetrics()
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:         cl,
		Recorder:       ctx.Recorder(EventSource),
		Balancer:       balancer,
		ProviderName:   provider.ProviderName(),
		ClusterName:    clusterName,
		Class:          providerClass(provider),
		RequeueWaiting: provider.ProviderName() == cloud.PoolProviderName,
	}
	setup.Apply(ctx, r)
	servedClass.Store(r.Class)
	if err := r.SetupWithManager(ctx.Manager, workers); err != nil {
		return err
	}
	// running_managed_controllers{name="service"}, as upstream's Run reports it.
	return ctx.Manager.Add(procmetrics.RunningController("service"))
}

// providerClass is the provider's own loadBalancerClass, if it serves one.
func providerClass(p cloudprovider.Interface) string {
	if c, ok := p.(cloud.LoadBalancerClasser); ok {
		return c.LoadBalancerClass()
	}
	return ""
}
