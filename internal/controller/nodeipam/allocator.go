package nodeipam

import (
	"fmt"
	"net"
	"slices"
	"sync"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
	netutils "k8s.io/utils/net"
)

// allocator is the range allocator's state: one cidrSet per cluster CIDR (a node's podCIDRs[i]
// comes from cluster CIDR i, as upstream) and which node holds which CIDRs, so that a node
// gone from the cache gives its CIDRs back (a Reconcile sees only the name of a deleted
// node). Safe for the Reconciler's concurrent workers.
type allocator struct {
	mu    sync.Mutex
	sets  []*cidrSet
	nodes map[string]holding
}

// holding is the CIDRs one node (by UID: a node deleted and created again under its name is
// another node) holds in the sets.
type holding struct {
	uid   types.UID
	cidrs []*net.IPNet
}

// newAllocator cuts the cluster CIDRs into node CIDRs and keeps the service ranges out of
// them (a range overlapping no cluster CIDR is ignored, as upstream).
func newAllocator(cfg config, logger logr.Logger) (*allocator, error) {
	a := &allocator{nodes: map[string]holding{}}
	for i, cidr := range cfg.clusterCIDRs {
		s, err := newCIDRSet(cidr, cfg.maskSizes[i])
		if err != nil {
			return nil, err
		}
		a.sets = append(a.sets, s)
	}
	if len(cfg.serviceCIDRs) == 0 {
		logger.Info("No Service CIDR provided. Skipping filtering out service addresses")
	}
	for _, svc := range cfg.serviceCIDRs {
		for i, cidr := range cfg.clusterCIDRs {
			if !cidr.Contains(svc.IP.Mask(cidr.Mask)) && !svc.Contains(cidr.IP.Mask(svc.Mask)) {
				continue
			}
			if err := a.sets[i].occupy(svc); err != nil {
				logger.Error(err, "Error filtering out service cidr out cluster cidr", "CIDR", cidr, "index", i, "serviceCIDR", svc)
			}
		}
	}
	return a, nil
}

// occupy marks the podCIDRs a node already has as used, with upstream's errors for CIDRs
// that do not parse, have no cluster CIDR at their index, or lie outside it. Nothing is
// marked when any fails. A node that held other CIDRs before (created again under its name,
// or given other CIDRs by someone else) gives those back.
func (a *allocator) occupy(name string, uid types.UID, podCIDRs []string) error {
	cidrs := make([]*net.IPNet, len(podCIDRs))
	for i, s := range podCIDRs {
		_, cidr, err := netutils.ParseCIDRSloppy(s)
		if err != nil {
			return fmt.Errorf("failed to parse node %s, CIDR %s", name, s)
		}
		if i >= len(a.sets) {
			return fmt.Errorf("node:%s has an allocated cidr: %v at index:%v that does not exist in cluster cidrs configuration", name, s, i)
		}
		if _, _, err := a.sets[i].span(cidr); err != nil {
			return fmt.Errorf("failed to mark cidr[%v] at idx [%v] as occupied for node: %v: %v", cidr, i, name, err)
		}
		cidrs[i] = cidr
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.nodes[name]; ok && h.uid == uid && equalCIDRs(h.cidrs, cidrs) {
		return nil
	}
	a.releaseLocked(name)
	for i, cidr := range cidrs {
		_ = a.sets[i].occupy(cidr) // span checked above
	}
	a.nodes[name] = holding{uid: uid, cidrs: cidrs}
	return nil
}

// allocate gives a node without podCIDRs one CIDR from each cluster CIDR. A node already
// given CIDRs whose patch the cache has not shown yet gets the same ones again, so that a
// stale read never hands out a second set. On exhaustion it returns the index of the
// cluster CIDR that ran out, and keeps nothing.
func (a *allocator) allocate(name string, uid types.UID) ([]*net.IPNet, int, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if h, ok := a.nodes[name]; ok {
		if h.uid == uid {
			return h.cidrs, 0, nil
		}
		a.releaseLocked(name)
	}
	cidrs := make([]*net.IPNet, 0, len(a.sets))
	for i, s := range a.sets {
		cidr, err := s.allocateNext()
		if err != nil {
			for j, got := range cidrs {
				_ = a.sets[j].release(got)
			}
			return nil, i, err
		}
		cidrs = append(cidrs, cidr)
	}
	a.nodes[name] = holding{uid: uid, cidrs: cidrs}
	return cidrs, 0, nil
}

// release gives back the CIDRs the named node holds (it is gone, or its patch failed).
func (a *allocator) release(name string) {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.releaseLocked(name)
}

func (a *allocator) releaseLocked(name string) {
	h, ok := a.nodes[name]
	if !ok {
		return
	}
	for i, cidr := range h.cidrs {
		_ = a.sets[i].release(cidr)
	}
	delete(a.nodes, name)
}

func equalCIDRs(a, b []*net.IPNet) bool {
	return slices.EqualFunc(a, b, func(x, y *net.IPNet) bool { return x.String() == y.String() })
}

// cidrStrings is cidrs as spec.podCIDRs holds them.
func cidrStrings(cidrs []*net.IPNet) []string {
	out := make([]string, len(cidrs))
	for i, c := range cidrs {
		out[i] = c.String()
	}
	return out
}
