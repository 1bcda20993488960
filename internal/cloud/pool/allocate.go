package pool

import (
	"errors"
	"fmt"
	"net/netip"
	"slices"
	"strings"

	v1 "k8s.io/api/core/v1"
)

var (
	// ErrExhausted: no free address of a family the Service needs in the pools serving its
	// namespace. The Service waits; an address released or a pool grown lets it through.
	ErrExhausted = errors.New("no address available")
	// ErrRequested: the Service's spec.loadBalancerIP cannot be given to it.
	ErrRequested = errors.New("requested address unavailable")
)

// Request is one Service's claim, as Allocate reads it.
type Request struct {
	Namespace, Name string
	// Families the Service needs one address of each, in its order (spec.ipFamilies).
	Families []v1.IPFamily
	// Requested is spec.loadBalancerIP; the zero Addr when unset.
	Requested netip.Addr
	// Current are the addresses the Service holds, then those its status shows: kept when
	// still theirs to keep, so an address does not move.
	Current []netip.Addr
}

func (r Request) key() string { return r.Namespace + "/" + r.Name }

// RequestFor reads a Service's claim; held are the addresses the provider records for it.
func RequestFor(svc *v1.Service, held []netip.Addr) (Request, error) {
	req := Request{Namespace: svc.Namespace, Name: svc.Name, Families: families(svc)}
	for _, f := range req.Families {
		if f != v1.IPv4Protocol && f != v1.IPv6Protocol {
			return Request{}, fmt.Errorf("service %s has an IP family kcm's pools do not know: %q", req.key(), f)
		}
	}
	if ip := svc.Spec.LoadBalancerIP; ip != "" {
		a, err := netip.ParseAddr(ip)
		if err != nil || a.Zone() != "" {
			return Request{}, fmt.Errorf("%w: spec.loadBalancerIP %q is not an IP address", ErrRequested, ip)
		}
		req.Requested = a.Unmap()
	}
	req.Current = append(req.Current, held...)
	for _, ing := range svc.Status.LoadBalancer.Ingress {
		// A hostname or an unparsable IP in status was not written from a pool: nothing to keep.
		a, err := netip.ParseAddr(ing.IP)
		if err != nil {
			continue
		}
		if a = a.Unmap(); !slices.Contains(req.Current, a) {
			req.Current = append(req.Current, a)
		}
	}
	return req, nil
}

// families are the IP families a Service needs an address of: spec.ipFamilies, which the API
// server fills for every Service with a cluster IP; without it, the family of spec.clusterIP;
// IPv4 when neither says.
func families(svc *v1.Service) []v1.IPFamily {
	if len(svc.Spec.IPFamilies) > 0 {
		return svc.Spec.IPFamilies
	}
	if a, err := netip.ParseAddr(svc.Spec.ClusterIP); err == nil {
		return []v1.IPFamily{familyOf(a)}
	}
	return []v1.IPFamily{v1.IPv4Protocol}
}

func familyOf(a netip.Addr) v1.IPFamily {
	if a.Is4() {
		return v1.IPv4Protocol
	}
	return v1.IPv6Protocol
}

// Allocate decides a Service's addresses: one per family in req.Families, in that order.
// holders maps each held address to the Service holding it ("namespace/name"). For each family:
//
//  1. spec.loadBalancerIP of that family, when it is in a pool serving the namespace and no
//     other Service holds it; otherwise an ErrRequested error (never another address instead:
//     the user asked for that one);
//  2. else the first of req.Current of that family still in a pool serving the namespace and
//     held by no other Service: addresses are stable;
//  3. else the lowest free address of the namespace's own pools, then of the global pools,
//     each in the ConfigMap's order; ErrExhausted when there is none.
//
// An address the Service holds but that left every pool serving its namespace (the pool
// shrank, or stopped serving the namespace) is not kept: the ConfigMap is the operator's
// statement of which addresses the cluster may announce, and an edit there takes effect
// without a restart; keeping it would announce an address the operator took back, maybe to
// give to something else. The Service gets another address at its next sync instead.
//
// A failure for one family fails the whole request: the caller changes nothing, so a
// dual-stack Service never shows half of what it needs and keeps what it had.
func Allocate(pools []Pool, holders map[netip.Addr]string, req Request) ([]netip.Addr, error) {
	key := req.key()
	free := func(a netip.Addr) bool {
		h, held := holders[a]
		return !held || h == key
	}
	if r := req.Requested; r.IsValid() && !slices.Contains(req.Families, familyOf(r)) {
		return nil, fmt.Errorf("%w: spec.loadBalancerIP %s is %s, but the Service's IP families are %v",
			ErrRequested, r, familyOf(r), req.Families)
	}
	got := make([]netip.Addr, 0, len(req.Families))
	for _, f := range req.Families {
		candidates := candidatePools(pools, req.Namespace, f)
		if r := req.Requested; r.IsValid() && familyOf(r) == f {
			if !slices.ContainsFunc(candidates, func(p Pool) bool { return p.contains(r) }) {
				return nil, fmt.Errorf("%w: spec.loadBalancerIP %s is in no address pool serving namespace %q",
					ErrRequested, r, req.Namespace)
			}
			if !free(r) {
				return nil, fmt.Errorf("%w: spec.loadBalancerIP %s is held by Service %s", ErrRequested, r, holders[r])
			}
			got = append(got, r)
			continue
		}
		if i := slices.IndexFunc(req.Current, func(a netip.Addr) bool {
			return familyOf(a) == f && free(a) && slices.ContainsFunc(candidates, func(p Pool) bool { return p.contains(a) })
		}); i >= 0 {
			got = append(got, req.Current[i])
			continue
		}
		if len(candidates) == 0 {
			return nil, fmt.Errorf("%w for %s: no address pool serves namespace %q with %s addresses",
				ErrExhausted, f, req.Namespace, f)
		}
		a, ok := lowestFree(candidates, f, free)
		if !ok {
			names := make([]string, len(candidates))
			for i, p := range candidates {
				names[i] = fmt.Sprintf("%q", p.Name)
			}
			return nil, fmt.Errorf("%w in pool(s) %s for %s", ErrExhausted, strings.Join(names, ", "), f)
		}
		got = append(got, a)
	}
	return got, nil
}

// candidatePools are the pools a namespace may take addresses of the family from: the ones
// naming it first, so a namespace given its own pool uses it before the shared ones, then
// the global pools.
func candidatePools(pools []Pool, namespace string, f v1.IPFamily) []Pool {
	var own, global []Pool
	for _, p := range pools {
		switch {
		case !p.hasFamily(f) || !p.serves(namespace):
		case len(p.Namespaces) > 0:
			own = append(own, p)
		default:
			global = append(global, p)
		}
	}
	return append(own, global...)
}

// lowestFree walks each pool's ranges from their first address. Every address it passes is
// held, so the walk is bounded by the number of held addresses, not by a range's size (an
// IPv6 /64 is never enumerated).
func lowestFree(pools []Pool, f v1.IPFamily, free func(netip.Addr) bool) (netip.Addr, bool) {
	for _, p := range pools {
		for _, r := range p.Ranges {
			if familyOf(r.First) != f {
				continue
			}
			for a := r.First; ; a = a.Next() {
				if free(a) {
					return a, true
				}
				if a == r.Last {
					break
				}
			}
		}
	}
	return netip.Addr{}, false
}
