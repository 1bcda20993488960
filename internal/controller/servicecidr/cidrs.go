package servicecidr

import (
	"net/netip"
	"slices"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The Ready conditions this controller writes, upstream's words.
const (
	readyMessage       = "Kubernetes Service CIDR is ready"
	terminatingMessage = "There are still IPAddresses referencing the ServiceCIDR, please remove them or create a new ServiceCIDR"
)

// ReadyCondition is the Ready condition a ServiceCIDR should show: True (with no reason,
// as upstream) while it lives; False/Terminating while its deletion is blocked.
func ReadyCondition(blocked bool) metav1.Condition {
	if blocked {
		return metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionFalse,
			Reason: networkingv1.ServiceCIDRReasonTerminating, Message: terminatingMessage}
	}
	return metav1.Condition{Type: networkingv1.ServiceCIDRConditionReady, Status: metav1.ConditionTrue, Message: readyMessage}
}

// ConditionCurrent reports whether conditions already hold want (status, reason and
// message): upstream writes only when one of them differs.
func ConditionCurrent(conditions []metav1.Condition, want metav1.Condition) bool {
	i := slices.IndexFunc(conditions, func(c metav1.Condition) bool { return c.Type == want.Type })
	return i >= 0 && conditions[i].Status == want.Status && conditions[i].Reason == want.Reason &&
		conditions[i].Message == want.Message
}

// Blocked reports whether deleting cidr now would orphan an IPAddress, upstream's rule: no,
// when each of its ranges lies inside another ServiceCIDR's (every address it holds stays
// covered); otherwise yes, when an IPAddress the API server's allocator made is contained
// in cidr and in no other ServiceCIDR. all holds every ServiceCIDR, cidr among them, and, as
// upstream, those being deleted too.
func Blocked(cidr *networkingv1.ServiceCIDR, all []networkingv1.ServiceCIDR, ips []networkingv1.IPAddress) bool {
	if hasParents(cidr, all) {
		return false
	}
	for _, r := range cidr.Spec.CIDRs {
		family := familyOf(r)
		for i := range ips {
			ip := &ips[i]
			if ip.Labels[networkingv1.LabelManagedBy] != AllocatorName || ip.Labels[networkingv1.LabelIPAddressFamily] != family {
				continue
			}
			addr, err := netip.ParseAddr(ip.Name)
			if err != nil {
				// The API server validates the name as an address.
				continue
			}
			if containing := Containing(all, addr); len(containing) == 1 && containing[0] == cidr.Name {
				return true
			}
		}
	}
	return false
}

// hasParents reports whether every range of cidr is contained in (or equal to) a range of
// another ServiceCIDR. A range that does not parse counts as covered, as upstream.
func hasParents(cidr *networkingv1.ServiceCIDR, all []networkingv1.ServiceCIDR) bool {
	for _, r := range cidr.Spec.CIDRs {
		prefix, err := netip.ParsePrefix(r)
		if err != nil {
			continue
		}
		covered := slices.ContainsFunc(all, func(other networkingv1.ServiceCIDR) bool {
			return other.Name != cidr.Name && anyRange(&other, func(p netip.Prefix) bool {
				return p.Overlaps(prefix) && p.Bits() <= prefix.Bits()
			})
		})
		if !covered {
			return false
		}
	}
	return true
}

// Containing names the ServiceCIDRs an address belongs to: inside one of their ranges and
// neither its network address nor, for IPv4, its broadcast address, which the allocator
// never hands out.
func Containing(all []networkingv1.ServiceCIDR, addr netip.Addr) []string {
	var names []string
	for i := range all {
		if anyRange(&all[i], func(p netip.Prefix) bool { return prefixHolds(p, addr) }) {
			names = append(names, all[i].Name)
		}
	}
	return names
}

// Overlapping names the ServiceCIDRs with a range overlapping one of cidr's (cidr itself
// among them): a ServiceCIDR added may unblock the deletion of any of them.
func Overlapping(cidr *networkingv1.ServiceCIDR, all []networkingv1.ServiceCIDR) []string {
	var names []string
	for i := range all {
		if anyRange(&all[i], func(p netip.Prefix) bool {
			return anyRange(cidr, func(q netip.Prefix) bool { return p.Overlaps(q) })
		}) {
			names = append(names, all[i].Name)
		}
	}
	return names
}

func anyRange(cidr *networkingv1.ServiceCIDR, f func(netip.Prefix) bool) bool {
	return slices.ContainsFunc(cidr.Spec.CIDRs, func(r string) bool {
		p, err := netip.ParsePrefix(r)
		return err == nil && f(p)
	})
}

func prefixHolds(p netip.Prefix, addr netip.Addr) bool {
	if !p.Contains(addr) || p.Masked().Addr() == addr {
		return false
	}
	return !addr.Is4() || addr != broadcast(p)
}

// broadcast is an IPv4 prefix's last address: every host bit set.
func broadcast(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().As4()
	host := 32 - p.Bits()
	for i := 3; i >= 0 && host > 0; i-- {
		n := min(host, 8)
		b[i] |= byte(1<<n - 1)
		host -= n
	}
	return netip.AddrFrom4(b)
}

// familyOf is the value of an IPAddress's family label for addresses of range r.
func familyOf(r string) string {
	p, err := netip.ParsePrefix(r)
	switch {
	case err != nil:
		return string(corev1.IPFamilyUnknown)
	case p.Addr().Is4():
		return string(corev1.IPv4Protocol)
	default:
		return string(corev1.IPv6Protocol)
	}
}
