package pool

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"slices"
	"sync"

	v1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// ProviderName is the name the provider registers; --cloud-provider=pool selects it.
const ProviderName = "pool"

// clientName is the client the provider asks its client builder for (the user agent kcm's
// builder gives it; the identity stays kcm's own).
const clientName = "pool-provider"

func init() {
	cloudprovider.RegisterCloudProvider(ProviderName, func(config io.Reader) (cloudprovider.Interface, error) {
		cfg, err := ParseConfig(config)
		if err != nil {
			return nil, err
		}
		return New(cfg), nil
	})
}

// Provider is the pool provider: a cloudprovider.Interface with a LoadBalancer only.
type Provider struct {
	cfg Config

	// mu serialises every call: allocation reads and changes the holdings as one step, and
	// the first call seeds them.
	mu        sync.Mutex
	client    kubernetes.Interface
	clientErr error
	// seeded is set once the holdings are rebuilt from the Services' status.
	seeded bool
	// holder is the Service ("namespace/name") holding each address; holds is the same
	// relation by Service, each Service's addresses in its family order.
	holder map[netip.Addr]string
	holds  map[string][]netip.Addr
}

var (
	_ cloudprovider.Interface    = &Provider{}
	_ cloudprovider.LoadBalancer = &Provider{}
)

// New makes a provider for a configuration; Initialize gives it its client.
func New(cfg Config) *Provider {
	return &Provider{cfg: cfg, holder: map[netip.Addr]string{}, holds: map[string][]netip.Addr{}}
}

// Initialize takes the client the provider reads Services and its ConfigMap with. It writes
// nothing: the service-lb controller writes the Services' status from what it returns.
func (p *Provider) Initialize(clientBuilder cloudprovider.ControllerClientBuilder, _ <-chan struct{}) {
	client, err := clientBuilder.Client(clientName)
	p.mu.Lock()
	defer p.mu.Unlock()
	p.client, p.clientErr = client, err
}

// LoadBalancer is the provider's one capability.
func (p *Provider) LoadBalancer() (cloudprovider.LoadBalancer, bool) { return p, true }

// Instances, InstancesV2, Zones, Clusters and Routes: the pool knows no machines and programs
// no network, so the node and route loops do not run with it.
func (p *Provider) Instances() (cloudprovider.Instances, bool)     { return nil, false }
func (p *Provider) InstancesV2() (cloudprovider.InstancesV2, bool) { return nil, false }
func (p *Provider) Zones() (cloudprovider.Zones, bool)             { return nil, false }
func (p *Provider) Clusters() (cloudprovider.Clusters, bool)       { return nil, false }
func (p *Provider) Routes() (cloudprovider.Routes, bool)           { return nil, false }

// ProviderName is "pool".
func (p *Provider) ProviderName() string { return ProviderName }

// HasClusterID is true: the provider shares nothing with another cluster to tell apart.
func (p *Provider) HasClusterID() bool { return true }

// LoadBalancerClass is the class the provider serves besides class-less Services
// (internal/cloud.LoadBalancerClasser).
func (p *Provider) LoadBalancerClass() string { return p.cfg.LoadBalancerClass }

// serves says whether a Service is the provider's: no class, or its own.
func (p *Provider) serves(svc *v1.Service) bool {
	c := svc.Spec.LoadBalancerClass
	return c == nil || *c == p.cfg.LoadBalancerClass
}

// GetLoadBalancer: a Service's load balancer exists while it holds addresses.
func (p *Provider) GetLoadBalancer(ctx context.Context, _ string, svc *v1.Service) (*v1.LoadBalancerStatus, bool, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.seed(ctx); err != nil {
		return nil, false, err
	}
	held := p.holds[key(svc)]
	if len(held) == 0 {
		return nil, false, nil
	}
	return status(held), true, nil
}

// GetLoadBalancerName is upstream's default name; the pool has nothing to name.
func (p *Provider) GetLoadBalancerName(_ context.Context, _ string, svc *v1.Service) string {
	return cloudprovider.DefaultLoadBalancerName(svc)
}

// EnsureLoadBalancer gives the Service its addresses (Allocate) from the pools as the
// ConfigMap says now, records them, and returns them as its status.
func (p *Provider) EnsureLoadBalancer(ctx context.Context, _ string, svc *v1.Service, _ []*v1.Node) (*v1.LoadBalancerStatus, error) {
	if !p.serves(svc) {
		// The service-lb controller passes only the provider's Services; refusing the others
		// keeps a bug there from taking addresses for a class another implementation serves.
		return nil, fmt.Errorf("service %s has loadBalancerClass %q; the pool provider serves only Services without a class or of class %q",
			key(svc), *svc.Spec.LoadBalancerClass, p.cfg.LoadBalancerClass)
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if err := p.seed(ctx); err != nil {
		return nil, err
	}
	pools, err := p.pools(ctx)
	if err != nil {
		return nil, err
	}
	k := key(svc)
	req, err := RequestFor(svc, p.holds[k])
	if err != nil {
		return nil, err
	}
	got, err := Allocate(pools, p.holder, req)
	if err != nil {
		return nil, err
	}
	if !slices.Equal(got, p.holds[k]) {
		log.FromContext(ctx).V(2).Info("Allocated load-balancer addresses from the pools",
			"service", k, "addresses", got, "previous", p.holds[k])
	}
	p.release(k)
	p.hold(k, got)
	return status(got), nil
}

// UpdateLoadBalancer has nothing to program: an address does not depend on the nodes.
func (p *Provider) UpdateLoadBalancer(context.Context, string, *v1.Service, []*v1.Node) error {
	return nil
}

// EnsureLoadBalancerDeleted releases the Service's addresses; releasing none is success.
func (p *Provider) EnsureLoadBalancerDeleted(ctx context.Context, _ string, svc *v1.Service) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	// Seeding first: a Service deleted right after a restart holds addresses only once the
	// holdings are rebuilt, and must release them then, not keep them to the next restart.
	if err := p.seed(ctx); err != nil {
		return err
	}
	if held := p.holds[key(svc)]; len(held) > 0 {
		log.FromContext(ctx).V(2).Info("Released load-balancer addresses to the pools", "service", key(svc), "addresses", held)
	}
	p.release(key(svc))
	return nil
}

// seed rebuilds the holdings once, from one LIST of Services: each Service the provider serves
// holds the IPs its status.loadBalancer.ingress shows. That status is the only state kept
// across restarts (and across a change of leader), so the same Services keep the same
// addresses. The API server clears the status of a Service that stops being of type
// LoadBalancer, so only current ones count. Called with p.mu held; a failed LIST is retried
// by the next call.
func (p *Provider) seed(ctx context.Context) error {
	if p.seeded {
		return nil
	}
	if err := p.ready(); err != nil {
		return err
	}
	list, err := p.client.CoreV1().Services(metav1.NamespaceAll).List(ctx, metav1.ListOptions{})
	if err != nil {
		return fmt.Errorf("listing Services to rebuild the pools' allocations: %w", err)
	}
	svcs := list.Items
	// Oldest first: should two Services show the same address (status written by hand), the
	// one that had it first keeps it, whatever order the LIST returned.
	slices.SortFunc(svcs, func(a, b v1.Service) int {
		return cmp.Or(a.CreationTimestamp.Compare(b.CreationTimestamp.Time), cmp.Compare(key(&a), key(&b)))
	})
	logger := log.FromContext(ctx)
	n := 0
	for i := range svcs {
		svc := &svcs[i]
		if svc.Spec.Type != v1.ServiceTypeLoadBalancer || !p.serves(svc) {
			continue
		}
		k := key(svc)
		var addrs []netip.Addr
		for _, ing := range svc.Status.LoadBalancer.Ingress {
			a, err := netip.ParseAddr(ing.IP)
			if err != nil {
				continue
			}
			a = a.Unmap()
			if other, held := p.holder[a]; held {
				logger.Info("Service shows a load-balancer address another Service holds; it will get another one at its next sync",
					"service", k, "address", a, "holder", other)
				continue
			}
			addrs = append(addrs, a)
		}
		p.hold(k, addrs)
		n += len(addrs)
	}
	p.seeded = true
	logger.Info("Rebuilt the address pools' allocations from Services' status", "addresses", n)
	return nil
}

// pools reads the pools' ConfigMap now: an edit takes effect at the next allocation, without a
// restart and without a watch to keep.
func (p *Provider) pools(ctx context.Context) ([]Pool, error) {
	source := ConfigMapNamespace + "/" + p.cfg.ConfigMap
	cm, err := p.client.CoreV1().ConfigMaps(ConfigMapNamespace).Get(ctx, p.cfg.ConfigMap, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%w: ConfigMap %s not found: create it with the address pools under the key %q",
			ErrConfig, source, PoolsKey)
	}
	if err != nil {
		return nil, fmt.Errorf("reading the address pools' ConfigMap %s: %w", source, err)
	}
	data, ok := cm.Data[PoolsKey]
	if !ok {
		return nil, fmt.Errorf("%w: ConfigMap %s has no key %q", ErrConfig, source, PoolsKey)
	}
	return ParsePools(source, data)
}

func (p *Provider) ready() error {
	if p.clientErr != nil {
		return fmt.Errorf("pool provider has no client: %w", p.clientErr)
	}
	if p.client == nil {
		return errors.New("pool provider is not initialised")
	}
	return nil
}

func (p *Provider) hold(k string, addrs []netip.Addr) {
	if len(addrs) == 0 {
		return
	}
	p.holds[k] = addrs
	for _, a := range addrs {
		p.holder[a] = k
	}
}

func (p *Provider) release(k string) {
	for _, a := range p.holds[k] {
		delete(p.holder, a)
	}
	delete(p.holds, k)
}

func key(svc *v1.Service) string { return svc.Namespace + "/" + svc.Name }

// status is the load balancer's status: one ingress per address, reached as a virtual IP
// (ipMode VIP: kube-proxy may short-circuit traffic to it inside the cluster).
func status(addrs []netip.Addr) *v1.LoadBalancerStatus {
	st := &v1.LoadBalancerStatus{}
	for _, a := range addrs {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: a.String(), IPMode: ptr.To(v1.LoadBalancerIPModeVIP)})
	}
	return st
}
