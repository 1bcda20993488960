// Package cloud gives kcm's cloud loops (service-lb-controller, node-route-controller,
// cloud-node-controller, cloud-node-lifecycle-controller: upstream's cloud-controller-manager
// loops, run in the one binary) their provider.
//
// A provider is k8s.io/cloud-provider's cloudprovider.Interface, registered under its name with
// cloudprovider.RegisterCloudProvider by a package compiled into kcm (providers.go imports them;
// internal/cloud/pool registers "pool"); --cloud-provider names it and --cloud-config is its
// configuration file, as with upstream's cloud-controller-manager. Without --cloud-provider,
// or with "external" (another component runs the cloud loops), the loops do not run. One
// provider is made per manager and shared by the loops, and initialised once.
package cloud

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/cloud/pool"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Flags are the flags every cloud loop reads through Provider: its descriptor lists them
// beside its own.
var Flags = []options.Flag{options.CloudProvider, options.CloudConfig, options.AllowUntaggedCloud}

var (
	mu sync.Mutex
	// made holds each manager's provider, made by the first loop set up.
	made = map[manager.Manager]made1{}
)

type made1 struct {
	cloud cloudprovider.Interface
	err   error
}

// Provider returns the cloud provider the command line names, made and initialised once per
// manager. Without one (--cloud-provider empty or "external") it logs why the controller being
// set up does not run and returns setup.ErrSkipped. A name no compiled-in provider registered,
// an unreadable --cloud-config, or a provider that refuses its configuration is an error,
// which stops kcm at startup as it stops upstream's cloud-controller-manager.
func Provider(ctx *setup.Context) (cloudprovider.Interface, error) {
	name := ctx.String(options.CloudProvider)
	file := ctx.String(options.CloudConfig)
	allowUntagged := ctx.Bool(options.AllowUntaggedCloud)
	logger := log.Log.WithName("controllers").WithValues("controller", ctx.Controller.Name)
	if name == "" || cloudprovider.IsExternal(name) {
		logger.Info("Controller needs a cloud provider; --cloud-provider names none kcm runs, so it will not run",
			"cloudProvider", name)
		return nil, setup.ErrSkipped
	}
	mu.Lock()
	defer mu.Unlock()
	if m, ok := made[ctx.Manager]; ok {
		return m.cloud, m.err
	}
	cloud, err := newProvider(ctx, name, file, allowUntagged)
	made[ctx.Manager] = made1{cloud, err}
	return cloud, err
}

func newProvider(ctx *setup.Context, name, file string, allowUntagged bool) (cloudprovider.Interface, error) {
	if !cloudprovider.IsCloudProvider(name) {
		return nil, fmt.Errorf("unknown cloud provider %q (--cloud-provider): no provider compiled into kcm registered that name; kcm's own is %q", name, PoolProviderName)
	}
	var config io.Reader // nil, not a nil *os.File: providers check for nil
	if file != "" {
		f, err := os.Open(file)
		if err != nil {
			return nil, fmt.Errorf("couldn't open cloud provider configuration (--cloud-config): %w", err)
		}
		defer f.Close()
		config = f
	}
	cloud, err := cloudprovider.GetCloudProvider(name, config)
	if err != nil {
		return nil, fmt.Errorf("could not init cloud provider %q: %w", name, err)
	}
	if cloud == nil {
		return nil, fmt.Errorf("cloud provider %q made no provider", name)
	}
	if !cloud.HasClusterID() {
		if !allowUntagged {
			return nil, errors.New("no ClusterID found.  A ClusterID is required for the cloud provider to function properly.  This check can be bypassed by setting the allow-untagged-cloud option")
		}
		log.Log.WithName("cloud").Info("Detected a cluster without a ClusterID.  A ClusterID will be required in the future.  Please tag your cluster to avoid any future issues")
	}
	// As upstream's cloud-controller-manager, the provider is initialised once, with a client
	// builder, and stopped with the process. kcm's builder gives kcm's own identity
	// (system:kube-controller-manager under kubeadm: get on configmaps, list and watch on
	// everything), not a ServiceAccount of the provider's.
	stop := make(chan struct{})
	if err := ctx.Manager.Add(stopper(stop)); err != nil {
		return nil, err
	}
	cloud.Initialize(clientbuilder.SimpleControllerClientBuilder{ClientConfig: ctx.Config}, stop)
	return cloud, nil
}

// PoolProviderName is the name kcm's own provider, internal/cloud/pool, registers.
const PoolProviderName = pool.ProviderName

// stopper closes its channel when the manager stops, on every replica (not only the leader):
// the provider's stop channel.
type stopper chan struct{}

func (s stopper) Start(ctx context.Context) error {
	<-ctx.Done()
	close(s)
	return nil
}

func (stopper) NeedLeaderElection() bool { return false }

// LoadBalancerClasser is implemented by a provider that serves, beside Services without a
// spec.loadBalancerClass (the only ones upstream's service controller hands any provider),
// the Services of one class of its own: kcm's pool provider. service-lb-controller leaves
// every other class alone.
type LoadBalancerClasser interface {
	LoadBalancerClass() string
}
