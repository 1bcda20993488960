package servicecidr

import (
	"net/netip"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func cidr(name string, ranges ...string) networkingv1.ServiceCIDR {
	return networkingv1.ServiceCIDR{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: networkingv1.ServiceCIDRSpec{CIDRs: ranges}}
}

// allocated is an IPAddress as the API server's allocator makes it.
func allocated(addr string) networkingv1.IPAddress {
	family := corev1.IPv4Protocol
	if netip.MustParseAddr(addr).Is6() {
		family = corev1.IPv6Protocol
	}
	return networkingv1.IPAddress{ObjectMeta: metav1.ObjectMeta{Name: addr, Labels: map[string]string{
		networkingv1.LabelManagedBy: AllocatorName, networkingv1.LabelIPAddressFamily: string(family)}}}
}

func TestBlocked(t *testing.T) {
	foreign := allocated("10.0.0.5")
	foreign.Labels[networkingv1.LabelManagedBy] = "someone-else"
	unlabelled := allocated("10.0.0.6")
	delete(unlabelled.Labels, networkingv1.LabelIPAddressFamily)
	cases := []struct {
		name   string
		target networkingv1.ServiceCIDR
		others []networkingv1.ServiceCIDR
		ips    []networkingv1.IPAddress
		want   bool
	}{
		{"no addresses", cidr("a", "10.0.0.0/24"), nil, nil, false},
		{"an address inside, no other ServiceCIDR", cidr("a", "10.0.0.0/24"), nil,
			[]networkingv1.IPAddress{allocated("10.0.0.10")}, true},
		{"an address outside", cidr("a", "10.0.0.0/24"), nil,
			[]networkingv1.IPAddress{allocated("10.1.0.10")}, false},
		{"covered by a larger ServiceCIDR", cidr("a", "10.0.0.0/24"), []networkingv1.ServiceCIDR{cidr("b", "10.0.0.0/16")},
			[]networkingv1.IPAddress{allocated("10.0.0.10")}, false},
		{"covered by an equal ServiceCIDR", cidr("a", "10.0.0.0/24"), []networkingv1.ServiceCIDR{cidr("b", "10.0.0.0/24")},
			[]networkingv1.IPAddress{allocated("10.0.0.10")}, false},
		{"a smaller ServiceCIDR holds the address", cidr("a", "10.0.0.0/16"), []networkingv1.ServiceCIDR{cidr("b", "10.0.0.0/24")},
			[]networkingv1.IPAddress{allocated("10.0.0.10")}, false},
		{"a smaller ServiceCIDR does not hold the address", cidr("a", "10.0.0.0/16"), []networkingv1.ServiceCIDR{cidr("b", "10.0.0.0/24")},
			[]networkingv1.IPAddress{allocated("10.0.1.10")}, true},
		{"the smaller one's network address is not in it", cidr("a", "10.0.0.0/16"), []networkingv1.ServiceCIDR{cidr("b", "10.0.1.0/24")},
			[]networkingv1.IPAddress{allocated("10.0.1.0")}, true},
		{"the smaller one's broadcast address is not in it", cidr("a", "10.0.0.0/16"), []networkingv1.ServiceCIDR{cidr("b", "10.0.1.0/24")},
			[]networkingv1.IPAddress{allocated("10.0.1.255")}, true},
		{"an address not made by the allocator", cidr("a", "10.0.0.0/24"), nil, []networkingv1.IPAddress{foreign}, false},
		{"an address without family label", cidr("a", "10.0.0.0/24"), nil, []networkingv1.IPAddress{unlabelled}, false},
		{"dual-stack: the IPv6 range holds an address", cidr("a", "10.0.0.0/24", "fd00::/108"),
			[]networkingv1.ServiceCIDR{cidr("b", "10.0.0.0/16")}, []networkingv1.IPAddress{allocated("fd00::10")}, true},
		{"dual-stack: both ranges covered", cidr("a", "10.0.0.0/24", "fd00::/108"),
			[]networkingv1.ServiceCIDR{cidr("b", "10.0.0.0/16"), cidr("c", "fd00::/64")}, []networkingv1.IPAddress{allocated("fd00::10")}, false},
		{"another ServiceCIDR being deleted still covers, as upstream", cidr("a", "10.0.0.0/24"),
			[]networkingv1.ServiceCIDR{func() networkingv1.ServiceCIDR {
				c := cidr("b", "10.0.0.0/24")
				c.DeletionTimestamp = &metav1.Time{}
				return c
			}()}, []networkingv1.IPAddress{allocated("10.0.0.10")}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			all := append([]networkingv1.ServiceCIDR{c.target}, c.others...)
			if got := Blocked(&c.target, all, c.ips); got != c.want {
				t.Errorf("Blocked = %v, want %v", got, c.want)
			}
		})
	}
}

func TestContaining(t *testing.T) {
	all := []networkingv1.ServiceCIDR{cidr("big", "10.0.0.0/16"), cidr("small", "10.0.1.0/24"), cidr("v6", "fd00::/120"), cidr("host", "10.9.9.9/32")}
	cases := []struct {
		addr string
		want []string
	}{
		{"10.0.1.7", []string{"big", "small"}},
		{"10.0.2.7", []string{"big"}},
		{"10.0.0.0", nil},               // the network address of big
		{"10.0.255.255", nil},           // its broadcast address
		{"10.0.1.0", []string{"big"}},   // small's network address, inside big
		{"10.0.1.255", []string{"big"}}, // small's broadcast address
		{"fd00::", nil},                 // IPv6 network address
		{"fd00::ff", []string{"v6"}},    // IPv6 has no broadcast address
		{"10.9.9.9", nil},               // a /32 holds nothing
		{"192.168.0.1", nil},
	}
	for _, c := range cases {
		t.Run(c.addr, func(t *testing.T) {
			if got := Containing(all, netip.MustParseAddr(c.addr)); !slices.Equal(got, c.want) {
				t.Errorf("Containing = %q, want %q", got, c.want)
			}
		})
	}
}

func TestOverlapping(t *testing.T) {
	all := []networkingv1.ServiceCIDR{cidr("big", "10.0.0.0/16"), cidr("small", "10.0.1.0/24"), cidr("other", "10.1.0.0/16"),
		cidr("v6", "fd00::/64")}
	cases := []struct {
		name  string
		added networkingv1.ServiceCIDR
		want  []string
	}{
		{"inside two", cidr("new", "10.0.1.0/28"), []string{"big", "small"}},
		{"around two", cidr("new", "10.0.0.0/15"), []string{"big", "small", "other"}},
		{"disjoint", cidr("new", "192.168.0.0/24"), nil},
		{"dual-stack", cidr("new", "10.1.2.0/24", "fd00::/112"), []string{"other", "v6"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := Overlapping(&c.added, all); !slices.Equal(got, c.want) {
				t.Errorf("Overlapping = %q, want %q", got, c.want)
			}
		})
	}
}

func TestReadyCondition(t *testing.T) {
	ready, terminating := ReadyCondition(false), ReadyCondition(true)
	if ready.Status != metav1.ConditionTrue || ready.Reason != "" || ready.Message != "Kubernetes Service CIDR is ready" {
		t.Errorf("ReadyCondition(false) = %+v", ready)
	}
	if terminating.Status != metav1.ConditionFalse || terminating.Reason != "Terminating" ||
		terminating.Message != "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR" {
		t.Errorf("ReadyCondition(true) = %+v", terminating)
	}
	apiServers := metav1.Condition{Type: "Ready", Status: metav1.ConditionTrue, Message: "Kubernetes default Service CIDR is ready"}
	cases := []struct {
		name       string
		conditions []metav1.Condition
		want       metav1.Condition
		current    bool
	}{
		{"none", nil, ready, false},
		{"the same, another time", []metav1.Condition{{Type: "Ready", Status: metav1.ConditionTrue, Message: ready.Message, LastTransitionTime: metav1.Now()}}, ready, true},
		{"the API server's message", []metav1.Condition{apiServers}, ready, false},
		{"ready, now terminating", []metav1.Condition{ready}, terminating, false},
		{"terminating already", []metav1.Condition{{Type: "Other", Status: metav1.ConditionTrue}, terminating}, terminating, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := ConditionCurrent(c.conditions, c.want); got != c.current {
				t.Errorf("ConditionCurrent = %v, want %v", got, c.current)
			}
		})
	}
}
