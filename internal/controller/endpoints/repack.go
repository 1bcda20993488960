package endpoints

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// addressKey identifies an address as upstream does: by IP and the UID of its target, so
// that two pods sharing an IP (host network) stay apart.
type addressKey struct {
	ip  string
	uid types.UID
}

func keyOf(a *corev1.EndpointAddress) addressKey {
	k := addressKey{ip: a.IP}
	if a.TargetRef != nil {
		k.uid = a.TargetRef.UID
	}
	return k
}

// noPorts stands for a subset without ports (a headless Service without ports), so that its
// addresses are not lost in the port-indexed regrouping.
var noPorts = corev1.EndpointPort{Port: -1}

// RepackSubsets rewrites subsets into upstream's canonical form (pkg/api/v1/endpoints):
// each address appears once per port, a port offered by exactly the same addresses as
// another shares its subset, an address not ready on a port is not ready there even if
// another subset lists it ready, and addresses, ports and subsets come in a stable order.
// Two Endpoints that mean the same thing repack to equal subsets. The input is not changed.
func RepackSubsets(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	first := map[addressKey]corev1.EndpointAddress{}
	byPort := map[corev1.EndpointPort]map[addressKey]bool{}
	var portOrder []corev1.EndpointPort
	add := func(port corev1.EndpointPort, addrs []corev1.EndpointAddress, ready bool) {
		set, ok := byPort[port]
		if !ok {
			set = map[addressKey]bool{}
			byPort[port] = set
			portOrder = append(portOrder, port)
		}
		for i := range addrs {
			k := keyOf(&addrs[i])
			if _, seen := first[k]; !seen {
				first[k] = *addrs[i].DeepCopy()
			}
			// Not ready wins over ready.
			if wasReady, seen := set[k]; !seen || wasReady {
				set[k] = ready
			}
		}
	}
	for _, s := range subsets {
		ports := s.Ports
		if len(ports) == 0 {
			ports = []corev1.EndpointPort{noPorts}
		}
		for _, p := range ports {
			add(p, s.Addresses, true)
			add(p, s.NotReadyAddresses, false)
		}
	}

	// Group ports by the exact set of addresses (with readiness) that offer them.
	type group struct {
		addrs map[addressKey]bool
		ports []corev1.EndpointPort
	}
	groups := map[string]*group{}
	var groupOrder []string
	for _, port := range portOrder {
		set := byPort[port]
		sig := signature(set)
		g, ok := groups[sig]
		if !ok {
			g = &group{addrs: set}
			groups[sig] = g
			groupOrder = append(groupOrder, sig)
		}
		if port != noPorts {
			g.ports = append(g.ports, port)
		}
	}

	out := make([]corev1.EndpointSubset, 0, len(groups))
	for _, sig := range groupOrder {
		g := groups[sig]
		if len(g.addrs) == 0 {
			continue
		}
		var s corev1.EndpointSubset
		for k, ready := range g.addrs {
			if ready {
				s.Addresses = append(s.Addresses, first[k])
			} else {
				s.NotReadyAddresses = append(s.NotReadyAddresses, first[k])
			}
		}
		s.Ports = g.ports
		out = append(out, s)
	}
	return SortSubsets(out)
}

// signature names a set of addresses with their readiness, independent of map order.
func signature(set map[addressKey]bool) string {
	parts := make([]string, 0, len(set))
	for k, ready := range set {
		parts = append(parts, fmt.Sprintf("%s/%s/%t", k.ip, k.uid, ready))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// SortSubsets orders addresses by IP then target UID, ports by name, number and protocol,
// and subsets by their first port and first address, in place; it returns its argument.
func SortSubsets(subsets []corev1.EndpointSubset) []corev1.EndpointSubset {
	for i := range subsets {
		slices.SortFunc(subsets[i].Addresses, compareAddress)
		slices.SortFunc(subsets[i].NotReadyAddresses, compareAddress)
		slices.SortFunc(subsets[i].Ports, comparePort)
	}
	slices.SortFunc(subsets, func(a, b corev1.EndpointSubset) int {
		return cmp.Or(
			slices.CompareFunc(a.Ports, b.Ports, comparePort),
			slices.CompareFunc(a.Addresses, b.Addresses, compareAddress),
			slices.CompareFunc(a.NotReadyAddresses, b.NotReadyAddresses, compareAddress),
		)
	})
	return subsets
}

func compareAddress(a, b corev1.EndpointAddress) int {
	ka, kb := keyOf(&a), keyOf(&b)
	return cmp.Or(strings.Compare(ka.ip, kb.ip), strings.Compare(string(ka.uid), string(kb.uid)))
}

func comparePort(a, b corev1.EndpointPort) int {
	return cmp.Or(
		strings.Compare(a.Name, b.Name),
		cmp.Compare(a.Port, b.Port),
		strings.Compare(string(a.Protocol), string(b.Protocol)),
		strings.Compare(deref(a.AppProtocol), deref(b.AppProtocol)),
	)
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}
