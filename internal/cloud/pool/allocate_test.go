package pool

import (
	"errors"
	"net/netip"
	"slices"
	"strings"
	"testing"

	v1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const (
	v4 = v1.IPv4Protocol
	v6 = v1.IPv6Protocol
)

func mustPools(t *testing.T, data string) []Pool {
	t.Helper()
	pools, err := ParsePools("kube-system/test", data)
	if err != nil {
		t.Fatalf("ParsePools: %v", err)
	}
	return pools
}

func addrs(ss ...string) []netip.Addr {
	out := make([]netip.Addr, 0, len(ss))
	for _, s := range ss {
		out = append(out, netip.MustParseAddr(s))
	}
	return out
}

func held(pairs ...string) map[netip.Addr]string {
	m := map[netip.Addr]string{}
	for i := 0; i < len(pairs); i += 2 {
		m[netip.MustParseAddr(pairs[i])] = pairs[i+1]
	}
	return m
}

func TestAllocate(t *testing.T) {
	small := `
- name: small
  addresses: [10.0.0.0/31]
`
	dual := `
- name: v4
  addresses: [10.0.0.0/30]
- name: v6
  addresses: ["2001:db8::/126"]
`
	scoped := `
- name: global
  addresses: [10.0.0.0/30]
- name: team-a
  addresses: [10.1.0.10-10.1.0.11]
  namespaces: [a]
`
	cases := []struct {
		name    string
		pools   string
		holders map[netip.Addr]string
		req     Request
		want    []netip.Addr
		err     error  // errors.Is
		errText string // substring of the error
	}{
		{
			name:  "first Service gets the lowest address",
			pools: small,
			req:   Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}},
			want:  addrs("10.0.0.0"),
		},
		{
			name:    "addresses held by others are skipped",
			pools:   small,
			holders: held("10.0.0.0", "ns/other"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}},
			want:    addrs("10.0.0.1"),
		},
		{
			name:  "a CIDR's network and broadcast addresses are usable",
			pools: "- {name: p, addresses: [10.0.0.0/30]}",
			holders: held("10.0.0.0", "ns/a", "10.0.0.1", "ns/b",
				"10.0.0.2", "ns/c"),
			req:  Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}},
			want: addrs("10.0.0.3"),
		},
		{
			name:  "dual-stack gets one address per family in the Service's order",
			pools: dual,
			req:   Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v6, v4}},
			want:  addrs("2001:db8::", "10.0.0.0"),
		},
		{
			name:  "one pool may hold both families",
			pools: `- {name: mixed, addresses: ["2001:db8::5", 10.9.0.0/32]}`,
			req:   Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4, v6}},
			want:  addrs("10.9.0.0", "2001:db8::5"),
		},
		{
			name:    "dual-stack with one family exhausted gets nothing",
			pools:   dual,
			holders: held("2001:db8::", "x/a", "2001:db8::1", "x/b", "2001:db8::2", "x/c", "2001:db8::3", "x/d"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4, v6}},
			err:     ErrExhausted,
			errText: `no address available in pool(s) "v6" for IPv6`,
		},
		{
			name:    "a Service keeps the address it holds though a lower one is free",
			pools:   small,
			holders: held("10.0.0.1", "ns/s"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Current: addrs("10.0.0.1")},
			want:    addrs("10.0.0.1"),
		},
		{
			name:  "a Service keeps the free address its status shows",
			pools: small,
			req:   Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Current: addrs("10.0.0.1")},
			want:  addrs("10.0.0.1"),
		},
		{
			name:    "an address its status shows but another Service holds is not kept",
			pools:   small,
			holders: held("10.0.0.1", "ns/other"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Current: addrs("10.0.0.1")},
			want:    addrs("10.0.0.0"),
		},
		{
			name:    "an address that left every pool (the pool shrank) is replaced",
			pools:   small,
			holders: held("10.0.0.7", "ns/s"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Current: addrs("10.0.0.7")},
			want:    addrs("10.0.0.0"),
		},
		{
			name:    "an address of a pool that no longer serves the namespace is replaced",
			pools:   scoped,
			holders: held("10.1.0.10", "b/s"),
			req:     Request{Namespace: "b", Name: "s", Families: []v1.IPFamily{v4}, Current: addrs("10.1.0.10")},
			want:    addrs("10.0.0.0"),
		},
		{
			name:    "a Service that drops a family keeps only the other",
			pools:   dual,
			holders: held("10.0.0.2", "ns/s", "2001:db8::2", "ns/s"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v6}, Current: addrs("10.0.0.2", "2001:db8::2")},
			want:    addrs("2001:db8::2"),
		},
		{
			name:    "a Service that becomes dual-stack keeps its address and gets the other family",
			pools:   dual,
			holders: held("10.0.0.2", "ns/s"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4, v6}, Current: addrs("10.0.0.2")},
			want:    addrs("10.0.0.2", "2001:db8::"),
		},
		{
			name:  "the requested address is given when free",
			pools: small,
			req:   Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Requested: netip.MustParseAddr("10.0.0.1")},
			want:  addrs("10.0.0.1"),
		},
		{
			name:    "a changed request moves the Service to the requested address",
			pools:   small,
			holders: held("10.0.0.0", "ns/s"),
			req: Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4},
				Requested: netip.MustParseAddr("10.0.0.1"), Current: addrs("10.0.0.0")},
			want: addrs("10.0.0.1"),
		},
		{
			name:  "a request of one family leaves the other allocated",
			pools: dual,
			req: Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4, v6},
				Requested: netip.MustParseAddr("2001:db8::3")},
			want: addrs("10.0.0.0", "2001:db8::3"),
		},
		{
			name:    "the requested address held by another Service is an error naming it",
			pools:   small,
			holders: held("10.0.0.1", "ns/other"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Requested: netip.MustParseAddr("10.0.0.1")},
			err:     ErrRequested,
			errText: "spec.loadBalancerIP 10.0.0.1 is held by Service ns/other",
		},
		{
			name:    "the requested address in no pool is an error",
			pools:   small,
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Requested: netip.MustParseAddr("192.0.2.1")},
			err:     ErrRequested,
			errText: `spec.loadBalancerIP 192.0.2.1 is in no address pool serving namespace "ns"`,
		},
		{
			name:    "the requested address in another namespace's pool is an error",
			pools:   scoped,
			req:     Request{Namespace: "b", Name: "s", Families: []v1.IPFamily{v4}, Requested: netip.MustParseAddr("10.1.0.10")},
			err:     ErrRequested,
			errText: `is in no address pool serving namespace "b"`,
		},
		{
			name:    "the requested address of a family the Service lacks is an error",
			pools:   dual,
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}, Requested: netip.MustParseAddr("2001:db8::1")},
			err:     ErrRequested,
			errText: "spec.loadBalancerIP 2001:db8::1 is IPv6, but the Service's IP families are [IPv4]",
		},
		{
			name:    "exhausted pools are named in the error",
			pools:   scoped,
			holders: held("10.1.0.10", "a/x", "10.1.0.11", "a/y", "10.0.0.0", "b/x", "10.0.0.1", "b/y", "10.0.0.2", "b/z", "10.0.0.3", "c/x"),
			req:     Request{Namespace: "a", Name: "s", Families: []v1.IPFamily{v4}},
			err:     ErrExhausted,
			errText: `no address available in pool(s) "team-a", "global" for IPv4`,
		},
		{
			name:  "a namespace's own pool comes before the global ones",
			pools: scoped,
			req:   Request{Namespace: "a", Name: "s", Families: []v1.IPFamily{v4}},
			want:  addrs("10.1.0.10"),
		},
		{
			name:    "a namespace whose own pool is full takes from a global pool",
			pools:   scoped,
			holders: held("10.1.0.10", "a/x", "10.1.0.11", "a/y"),
			req:     Request{Namespace: "a", Name: "s", Families: []v1.IPFamily{v4}},
			want:    addrs("10.0.0.0"),
		},
		{
			name:    "another namespace never takes from a scoped pool",
			pools:   scoped,
			holders: held("10.0.0.0", "b/w", "10.0.0.1", "b/x", "10.0.0.2", "b/y", "10.0.0.3", "b/z"),
			req:     Request{Namespace: "b", Name: "s", Families: []v1.IPFamily{v4}},
			err:     ErrExhausted,
			errText: `no address available in pool(s) "global" for IPv4`,
		},
		{
			name:    "no pool of the family for the namespace is exhaustion, said plainly",
			pools:   small,
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v6}},
			err:     ErrExhausted,
			errText: `no address available for IPv6: no address pool serves namespace "ns" with IPv6 addresses`,
		},
		{
			name: "a full range moves the search to the pool's next range",
			pools: `
- name: p
  addresses: [10.0.5.0-10.0.5.1, 10.0.0.7]
`,
			holders: held("10.0.0.7", "ns/a", "10.0.5.0", "ns/b"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}},
			want:    addrs("10.0.5.1"),
		},
		{
			name:    "a full pool moves the search to the next pool",
			pools:   "- {name: one, addresses: [10.0.0.9]}\n- {name: two, addresses: [10.0.0.1]}",
			holders: held("10.0.0.9", "ns/a"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}},
			want:    addrs("10.0.0.1"),
		},
		{
			name:    "a large IPv6 pool is searched from its start",
			pools:   `- {name: p, addresses: ["2001:db8::/64"]}`,
			holders: held("2001:db8::", "ns/a", "2001:db8::1", "ns/b"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v6}},
			want:    addrs("2001:db8::2"),
		},
		{
			name:    "a pool's last address is given",
			pools:   `- {name: p, addresses: ["255.255.255.254/31"]}`,
			holders: held("255.255.255.254", "ns/a"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}},
			want:    addrs("255.255.255.255"),
		},
		{
			name:    "the top of the address space ends the search",
			pools:   `- {name: p, addresses: ["255.255.255.255"]}`,
			holders: held("255.255.255.255", "ns/a"),
			req:     Request{Namespace: "ns", Name: "s", Families: []v1.IPFamily{v4}},
			err:     ErrExhausted,
			errText: `no address available in pool(s) "p" for IPv4`,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			holders := tc.holders
			if holders == nil {
				holders = map[netip.Addr]string{}
			}
			before := len(holders)
			got, err := Allocate(mustPools(t, tc.pools), holders, tc.req)
			if len(holders) != before {
				t.Errorf("Allocate changed the holders it was given")
			}
			if tc.err != nil {
				if !errors.Is(err, tc.err) || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error = %v, want %v containing %q", err, tc.err, tc.errText)
				}
				if got != nil {
					t.Errorf("addresses = %v with an error, want none", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("Allocate: %v", err)
			}
			if !slices.Equal(got, tc.want) {
				t.Errorf("addresses = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRequestFor(t *testing.T) {
	cases := []struct {
		name    string
		svc     v1.Service
		held    []netip.Addr
		want    Request
		errText string
	}{
		{
			name: "families from spec.ipFamilies",
			svc:  v1.Service{Spec: v1.ServiceSpec{IPFamilies: []v1.IPFamily{v6, v4}, ClusterIP: "10.96.0.1"}},
			want: Request{Families: []v1.IPFamily{v6, v4}},
		},
		{
			name: "without spec.ipFamilies, the cluster IP's family",
			svc:  v1.Service{Spec: v1.ServiceSpec{ClusterIP: "fd00::1"}},
			want: Request{Families: []v1.IPFamily{v6}},
		},
		{
			name: "without either, IPv4",
			svc:  v1.Service{Spec: v1.ServiceSpec{ClusterIP: "None"}},
			want: Request{Families: []v1.IPFamily{v4}},
		},
		{
			name: "spec.loadBalancerIP is the request",
			svc:  v1.Service{Spec: v1.ServiceSpec{LoadBalancerIP: "10.0.0.9"}},
			want: Request{Families: []v1.IPFamily{v4}, Requested: netip.MustParseAddr("10.0.0.9")},
		},
		{
			name:    "an unparsable spec.loadBalancerIP is an error",
			svc:     v1.Service{Spec: v1.ServiceSpec{LoadBalancerIP: "10.0.0.300"}},
			errText: `spec.loadBalancerIP "10.0.0.300" is not an IP address`,
		},
		{
			name:    "an unknown family is an error",
			svc:     v1.Service{Spec: v1.ServiceSpec{IPFamilies: []v1.IPFamily{"IPv5"}}},
			errText: `IP family kcm's pools do not know: "IPv5"`,
		},
		{
			name: "held addresses first, then status IPs not already held; hostnames skipped",
			svc: v1.Service{Status: v1.ServiceStatus{LoadBalancer: v1.LoadBalancerStatus{Ingress: []v1.LoadBalancerIngress{
				{IP: "10.0.0.5"}, {Hostname: "lb.example"}, {IP: "10.0.0.1"}, {IP: "::ffff:10.0.0.6"},
			}}}},
			held: addrs("10.0.0.1"),
			want: Request{Families: []v1.IPFamily{v4}, Current: addrs("10.0.0.1", "10.0.0.5", "10.0.0.6")},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.svc.ObjectMeta = metav1.ObjectMeta{Namespace: "ns", Name: "s"}
			got, err := RequestFor(&tc.svc, tc.held)
			if tc.errText != "" {
				if err == nil || !strings.Contains(err.Error(), tc.errText) {
					t.Fatalf("error = %v, want one containing %q", err, tc.errText)
				}
				return
			}
			if err != nil {
				t.Fatalf("RequestFor: %v", err)
			}
			tc.want.Namespace, tc.want.Name = "ns", "s"
			if got.Namespace != tc.want.Namespace || got.Name != tc.want.Name || !slices.Equal(got.Families, tc.want.Families) ||
				got.Requested != tc.want.Requested || !slices.Equal(got.Current, tc.want.Current) {
				t.Errorf("request = %+v, want %+v", got, tc.want)
			}
		})
	}
}
