package pool

import (
	"context"
	"errors"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/utils/ptr"
)

// builder hands the provider a fake clientset, as kcm's client builder hands it a real one.
type builder struct{ client kubernetes.Interface }

func (b builder) Config(string) (*rest.Config, error)         { return &rest.Config{}, nil }
func (b builder) ConfigOrDie(string) *rest.Config             { return &rest.Config{} }
func (b builder) Client(string) (kubernetes.Interface, error) { return b.client, nil }
func (b builder) ClientOrDie(string) kubernetes.Interface     { return b.client }

func poolsConfigMap(name, pools string) *v1.ConfigMap {
	return &v1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name},
		Data:       map[string]string{"pools": pools},
	}
}

// started is a provider as kcm makes it: default configuration, initialised with a client.
func started(t *testing.T, client kubernetes.Interface, cfg ...Config) *Provider {
	t.Helper()
	c := Config{ConfigMap: DefaultConfigMap, LoadBalancerClass: DefaultLoadBalancerClass}
	if len(cfg) > 0 {
		c = cfg[0]
	}
	p := New(c)
	p.Initialize(builder{client}, nil)
	return p
}

func lbService(namespace, name string, mutate ...func(*v1.Service)) *v1.Service {
	svc := &v1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: name},
		Spec:       v1.ServiceSpec{Type: v1.ServiceTypeLoadBalancer, IPFamilies: []v1.IPFamily{v1.IPv4Protocol}},
	}
	for _, m := range mutate {
		m(svc)
	}
	return svc
}

func ingress(ips ...string) v1.LoadBalancerStatus {
	st := v1.LoadBalancerStatus{}
	for _, ip := range ips {
		st.Ingress = append(st.Ingress, v1.LoadBalancerIngress{IP: ip, IPMode: ptr.To(v1.LoadBalancerIPModeVIP)})
	}
	return st
}

// ensure calls EnsureLoadBalancer and, as the service-lb controller does, writes the status it
// returns to the Service (created when absent), so a later provider can seed from it.
func ensure(t *testing.T, p *Provider, client kubernetes.Interface, svc *v1.Service) (v1.LoadBalancerStatus, error) {
	t.Helper()
	st, err := p.EnsureLoadBalancer(t.Context(), "kubernetes", svc, nil)
	if err != nil {
		return v1.LoadBalancerStatus{}, err
	}
	svc.Status.LoadBalancer = *st
	services := client.CoreV1().Services(svc.Namespace)
	if _, err := services.Get(t.Context(), svc.Name, metav1.GetOptions{}); err != nil {
		if _, err := services.Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	} else if _, err := services.UpdateStatus(t.Context(), svc, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	return *st, nil
}

func mustEnsure(t *testing.T, p *Provider, client kubernetes.Interface, svc *v1.Service, want ...string) {
	t.Helper()
	st, err := ensure(t, p, client, svc)
	if err != nil {
		t.Fatalf("EnsureLoadBalancer(%s/%s): %v", svc.Namespace, svc.Name, err)
	}
	if w := ingress(want...); !apiequality.Semantic.DeepEqual(st, w) {
		t.Fatalf("EnsureLoadBalancer(%s/%s) = %+v, want %+v", svc.Namespace, svc.Name, st.Ingress, w.Ingress)
	}
}

func mustExist(t *testing.T, p *Provider, svc *v1.Service, want ...string) {
	t.Helper()
	st, exists, err := p.GetLoadBalancer(t.Context(), "kubernetes", svc)
	if err != nil {
		t.Fatalf("GetLoadBalancer: %v", err)
	}
	if len(want) == 0 {
		if exists || st != nil {
			t.Fatalf("GetLoadBalancer(%s) = %v, %v; want none", svc.Name, st, exists)
		}
		return
	}
	if !exists || !apiequality.Semantic.DeepEqual(*st, ingress(want...)) {
		t.Fatalf("GetLoadBalancer(%s) = %v, %v; want %v", svc.Name, st, exists, want)
	}
}

func TestEnsureGivesAddressesAsStatus(t *testing.T) {
	client := fake.NewClientset(poolsConfigMap(DefaultConfigMap, `
- {name: v4, addresses: [10.0.0.0/30]}
- {name: v6, addresses: ["2001:db8::/126"]}
`))
	p := started(t, client)
	dual := lbService("ns", "dual", func(s *v1.Service) { s.Spec.IPFamilies = []v1.IPFamily{v1.IPv6Protocol, v1.IPv4Protocol} })
	mustExist(t, p, dual)
	mustEnsure(t, p, client, dual, "2001:db8::", "10.0.0.0")
	mustExist(t, p, dual, "2001:db8::", "10.0.0.0")
	// Ensured again (every sync), the Service keeps its addresses.
	mustEnsure(t, p, client, dual, "2001:db8::", "10.0.0.0")
	mustEnsure(t, p, client, lbService("ns", "single"), "10.0.0.1")
	if err := p.UpdateLoadBalancer(t.Context(), "kubernetes", dual, []*v1.Node{{}}); err != nil {
		t.Errorf("UpdateLoadBalancer: %v", err)
	}
	if name := p.GetLoadBalancerName(t.Context(), "kubernetes", lbService("ns", "x", func(s *v1.Service) { s.UID = "1234-56" })); name != "a123456" {
		t.Errorf("GetLoadBalancerName = %q, want upstream's default a123456", name)
	}
}

func TestSameAddressesAfterRestart(t *testing.T) {
	client := fake.NewClientset(poolsConfigMap(DefaultConfigMap, "- {name: p, addresses: [10.0.0.0/29]}"))
	first := started(t, client)
	a, b, c := lbService("ns", "a"), lbService("ns", "b"), lbService("other", "c")
	mustEnsure(t, first, client, a, "10.0.0.0")
	mustEnsure(t, first, client, b, "10.0.0.1")
	mustEnsure(t, first, client, c, "10.0.0.2")
	// Services the provider does not serve show addresses of the pool it must not count:
	// another class's (written by another implementation) and a ClusterIP Service's.
	for _, svc := range []*v1.Service{
		lbService("ns", "classy", func(s *v1.Service) {
			s.Spec.LoadBalancerClass = ptr.To("example.com/other")
			s.Status.LoadBalancer = ingress("10.0.0.3")
		}),
		lbService("ns", "cluster-ip", func(s *v1.Service) {
			s.Spec.Type = v1.ServiceTypeClusterIP
			s.Status.LoadBalancer = ingress("10.0.0.4")
		}),
	} {
		if _, err := client.CoreV1().Services(svc.Namespace).Create(t.Context(), svc, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}

	// A new provider (kcm restarted) knows the holdings before any Ensure...
	restarted := started(t, client)
	mustExist(t, restarted, b, "10.0.0.1")
	// ...and, asked in another order, gives each Service the address it had.
	mustEnsure(t, restarted, client, c, "10.0.0.2")
	mustEnsure(t, restarted, client, b, "10.0.0.1")
	mustEnsure(t, restarted, client, a, "10.0.0.0")
	mustEnsure(t, restarted, client, lbService("ns", "d"), "10.0.0.3")
	mustEnsure(t, restarted, client, lbService("ns", "e"), "10.0.0.4")
}

func TestReleaseThenReuse(t *testing.T) {
	client := fake.NewClientset(poolsConfigMap(DefaultConfigMap, "- {name: two, addresses: [10.0.0.0/31]}"))
	p := started(t, client)
	a, b, c := lbService("ns", "a"), lbService("ns", "b"), lbService("ns", "c")
	mustEnsure(t, p, client, a, "10.0.0.0")
	mustEnsure(t, p, client, b, "10.0.0.1")
	_, err := ensure(t, p, client, c)
	if !errors.Is(err, ErrExhausted) || err.Error() != `no address available in pool(s) "two" for IPv4` {
		t.Fatalf("third Service: error %v, want ErrExhausted naming the pool", err)
	}
	mustExist(t, p, c)

	for range 2 { // released twice: the second finds nothing, and succeeds
		if err := p.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", a); err != nil {
			t.Fatalf("EnsureLoadBalancerDeleted: %v", err)
		}
	}
	mustExist(t, p, a)
	mustExist(t, p, b, "10.0.0.1")
	mustEnsure(t, p, client, c, "10.0.0.0")
}

func TestDeletedAfterRestartIsReleased(t *testing.T) {
	gone := lbService("ns", "gone", func(s *v1.Service) {
		s.DeletionTimestamp = ptr.To(metav1.Now())
		s.Finalizers = []string{"service.kubernetes.io/load-balancer-cleanup"}
		s.Status.LoadBalancer = ingress("10.0.0.1")
	})
	client := fake.NewClientset(poolsConfigMap(DefaultConfigMap, "- {name: one, addresses: [10.0.0.1]}"), gone)
	p := started(t, client)
	// The first call after a restart is the deletion: it must release what the status shows.
	if err := p.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", gone); err != nil {
		t.Fatal(err)
	}
	mustEnsure(t, p, client, lbService("ns", "next"), "10.0.0.1")
}

func TestPoolsReadLive(t *testing.T) {
	client := fake.NewClientset()
	p := started(t, client, Config{ConfigMap: "lb-pools", LoadBalancerClass: DefaultLoadBalancerClass})
	svc := lbService("ns", "a")
	wantErr := func(errText string) {
		t.Helper()
		_, err := ensure(t, p, client, svc)
		if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), errText) {
			t.Fatalf("error = %v, want ErrConfig containing %q", err, errText)
		}
		mustExist(t, p, svc)
	}
	cms := client.CoreV1().ConfigMaps("kube-system")
	wantErr(`ConfigMap kube-system/lb-pools not found: create it with the address pools under the key "pools"`)

	cm := poolsConfigMap("lb-pools", "")
	cm.Data = map[string]string{"pool": "[]"}
	if _, err := cms.Create(t.Context(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantErr(`ConfigMap kube-system/lb-pools has no key "pools"`)

	cm.Data = map[string]string{"pools": "- {name: p, addresses: [10.0.0.1-10.0.0.0]}"}
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	wantErr(`ConfigMap kube-system/lb-pools: pool "p": address "10.0.0.1-10.0.0.0": the range's last address is below its first`)

	// Fixed, then grown: each edit applies at the next allocation, with the same provider.
	cm.Data = map[string]string{"pools": "- {name: p, addresses: [10.0.0.1]}"}
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustEnsure(t, p, client, svc, "10.0.0.1")
	if _, err := ensure(t, p, client, lbService("ns", "b")); !errors.Is(err, ErrExhausted) {
		t.Fatalf("second Service: error %v, want ErrExhausted", err)
	}
	cm.Data = map[string]string{"pools": "- {name: p, addresses: [10.0.0.1-10.0.0.2]}"}
	if _, err := cms.Update(t.Context(), cm, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
	mustEnsure(t, p, client, lbService("ns", "b"), "10.0.0.2")
}

func TestRequestedAddress(t *testing.T) {
	client := fake.NewClientset(poolsConfigMap(DefaultConfigMap, "- {name: p, addresses: [10.0.0.0/29]}"))
	p := started(t, client)
	a := lbService("ns", "a", func(s *v1.Service) { s.Spec.LoadBalancerIP = "10.0.0.5" })
	mustEnsure(t, p, client, a, "10.0.0.5")
	mustEnsure(t, p, client, lbService("ns", "b"), "10.0.0.0")

	c := lbService("ns", "c", func(s *v1.Service) { s.Spec.LoadBalancerIP = "10.0.0.5" })
	_, err := ensure(t, p, client, c)
	if !errors.Is(err, ErrRequested) || !strings.Contains(err.Error(), "spec.loadBalancerIP 10.0.0.5 is held by Service ns/a") {
		t.Fatalf("error = %v, want ErrRequested naming the holder", err)
	}

	// A failed request changes nothing: b asks for a's address and keeps its own meanwhile.
	b := lbService("ns", "b", func(s *v1.Service) { s.Spec.LoadBalancerIP = "10.0.0.5" })
	if _, err := ensure(t, p, client, b); !errors.Is(err, ErrRequested) {
		t.Fatalf("error = %v, want ErrRequested", err)
	}
	mustExist(t, p, b, "10.0.0.0")
	mustEnsure(t, p, client, lbService("ns", "d"), "10.0.0.1")

	// Once a is deleted, c gets the address it asked for.
	if err := p.EnsureLoadBalancerDeleted(t.Context(), "kubernetes", a); err != nil {
		t.Fatal(err)
	}
	mustEnsure(t, p, client, c, "10.0.0.5")

	// A Service whose request changes moves, and its old address is free again.
	b.Spec.LoadBalancerIP = "10.0.0.7"
	mustEnsure(t, p, client, b, "10.0.0.7")
	mustEnsure(t, p, client, lbService("ns", "e"), "10.0.0.0")
}

func TestOnlyItsClassIsServed(t *testing.T) {
	client := fake.NewClientset(poolsConfigMap(DefaultConfigMap, "- {name: p, addresses: [10.0.0.0/29]}"))
	p := started(t, client, Config{ConfigMap: DefaultConfigMap, LoadBalancerClass: "example.com/lb"})
	if got := p.LoadBalancerClass(); got != "example.com/lb" {
		t.Errorf("LoadBalancerClass() = %q", got)
	}
	other := lbService("ns", "other", func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To(DefaultLoadBalancerClass) })
	_, err := ensure(t, p, client, other)
	if err == nil || !strings.Contains(err.Error(), `service ns/other has loadBalancerClass "kcm.io/pool"; the pool provider serves only Services without a class or of class "example.com/lb"`) {
		t.Fatalf("error = %v, want a refusal naming both classes", err)
	}
	mustExist(t, p, other)
	mustEnsure(t, p, client, lbService("ns", "own", func(s *v1.Service) { s.Spec.LoadBalancerClass = ptr.To("example.com/lb") }), "10.0.0.0")
	mustEnsure(t, p, client, lbService("ns", "classless"), "10.0.0.1")
}

func TestSeedRetriedAfterFailedList(t *testing.T) {
	client := fake.NewClientset(
		poolsConfigMap(DefaultConfigMap, "- {name: p, addresses: [10.0.0.0/29]}"),
		lbService("ns", "old", func(s *v1.Service) { s.Status.LoadBalancer = ingress("10.0.0.0") }),
	)
	failures := 1
	client.PrependReactor("list", "services", func(clienttesting.Action) (bool, runtime.Object, error) {
		if failures > 0 {
			failures--
			return true, nil, errors.New("connection refused")
		}
		return false, nil, nil
	})
	p := started(t, client)
	_, err := ensure(t, p, client, lbService("ns", "new"))
	if err == nil || !strings.Contains(err.Error(), "listing Services to rebuild the pools' allocations: connection refused") {
		t.Fatalf("error = %v, want the failed LIST", err)
	}
	// The next call lists again and counts the old Service's address.
	mustEnsure(t, p, client, lbService("ns", "new"), "10.0.0.1")
}

func TestUninitialisedProviderErrs(t *testing.T) {
	p := New(Config{ConfigMap: DefaultConfigMap, LoadBalancerClass: DefaultLoadBalancerClass})
	if _, err := p.EnsureLoadBalancer(context.Background(), "kubernetes", lbService("ns", "a"), nil); err == nil ||
		!strings.Contains(err.Error(), "not initialised") {
		t.Fatalf("error = %v, want not initialised", err)
	}
	if _, _, err := p.GetLoadBalancer(context.Background(), "kubernetes", lbService("ns", "a")); err == nil {
		t.Fatal("GetLoadBalancer without a client: no error")
	}
}

func TestSeedGivesASharedAddressToTheOldest(t *testing.T) {
	at := func(sec int64) metav1.Time { return metav1.Unix(1_700_000_000+sec, 0) }
	// Two Services show one address (a status written by hand, or by another tool): the older
	// keeps it, whichever the LIST returns first; the newer gets another at its next sync.
	newer := lbService("ns", "a-newer", func(s *v1.Service) {
		s.CreationTimestamp = at(60)
		s.Status.LoadBalancer = ingress("10.0.0.0")
	})
	older := lbService("ns", "b-older", func(s *v1.Service) {
		s.CreationTimestamp = at(0)
		s.Status.LoadBalancer = ingress("10.0.0.0")
	})
	client := fake.NewClientset(poolsConfigMap(DefaultConfigMap, "- {name: p, addresses: [10.0.0.0/29]}"), newer, older)
	p := started(t, client)
	mustExist(t, p, older, "10.0.0.0")
	mustExist(t, p, newer)
	mustEnsure(t, p, client, newer, "10.0.0.1")
	mustEnsure(t, p, client, older, "10.0.0.0")
}
