package endpointslice

import (
	"fmt"
	"math"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

// overloadThreshold is the most extra load topology-aware hints may put on a zone's
// endpoints relative to its share of CPU.
const overloadThreshold = 0.2

// Topology-aware hints Event messages, upstream's.
const (
	msgNoZoneSpecified            = "One or more endpoints do not have a zone specified"
	msgNoAllocatedHintsForZones   = "No hints allocated for zones"
	msgHintsEnabled               = "Topology Aware Hints has been enabled"
	msgHintsDisabled              = "Topology Aware Hints has been disabled"
	msgInsufficientNodeInfo       = "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes"
	msgNodesReadyInOneZoneOnly    = "Nodes only ready in one zone"
	msgInsufficientEndpoints      = "Insufficient number of endpoints"
	msgMinAllocationExceedsThresh = "Unable to allocate minimum required endpoints to each zone without exceeding overload threshold"

	reasonHintsEnabled  = "TopologyAwareHintsEnabled"
	reasonHintsDisabled = "TopologyAwareHintsDisabled"
)

// hintEvent is an Event about a Service's topology hints.
type hintEvent struct{ eventType, reason, message string }

func disabled(message string, addressType discoveryv1.AddressType) hintEvent {
	return hintEvent{corev1.EventTypeWarning, reasonHintsDisabled, withAddressType(message, addressType)}
}

func withAddressType(s string, addressType discoveryv1.AddressType) string {
	return fmt.Sprintf("%s, addressType: %s", s, addressType)
}

// allocation is how many endpoints a zone should get hints for.
type allocation struct {
	minimum, maximum int
	desired          float64
}

// zoneCPURatios is each zone's share of the allocatable CPU of the ready nodes (control-plane
// nodes aside). nil when a ready node lacks a zone or CPU, or fewer than two zones have CPU:
// hints cannot be allocated then.
func zoneCPURatios(nodes []*corev1.Node) map[string]float64 {
	cpuByZone := map[string]*resource.Quantity{}
	total := resource.Quantity{}
	for _, n := range nodes {
		if excludedFromTopology(n.Labels) || !nodeReady(n) {
			continue
		}
		cpu := n.Status.Allocatable.Cpu()
		zone := n.Labels[corev1.LabelTopologyZone]
		if zone == "" || cpu.IsZero() {
			return nil
		}
		total.Add(*cpu)
		if q, ok := cpuByZone[zone]; ok {
			q.Add(*cpu)
		} else {
			cpuByZone[zone] = cpu
		}
	}
	if total.IsZero() || len(cpuByZone) < 2 {
		return nil
	}
	ratios := map[string]float64{}
	for zone, cpu := range cpuByZone {
		ratios[zone] = float64(cpu.MilliValue()) / float64(total.MilliValue())
	}
	return ratios
}

func excludedFromTopology(labels map[string]string) bool {
	_, cp := labels["node-role.kubernetes.io/control-plane"]
	_, master := labels["node-role.kubernetes.io/master"]
	return cp || master
}

func nodeReady(n *corev1.Node) bool {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// allocations spreads n ready endpoints over the zones by CPU share: each zone at least its
// share less the overload threshold. The second result is why that is impossible ("" when
// it is not).
func allocations(ratios map[string]float64, n int) (map[string]allocation, string) {
	switch {
	case ratios == nil:
		return nil, msgInsufficientNodeInfo
	case len(ratios) < 2:
		return nil, msgNodesReadyInOneZoneOnly
	case len(ratios) > n:
		return nil, fmt.Sprintf("%s (%d endpoints, %d zones)", msgInsufficientEndpoints, n, len(ratios))
	}
	remaining, minTotal := n, 0
	out := map[string]allocation{}
	for zone, ratio := range ratios {
		desired := ratio * float64(n)
		minimum := int(math.Ceil(desired * (1 / (1 + overloadThreshold))))
		out[zone] = allocation{minimum: minimum, desired: math.Max(desired, float64(minimum))}
		minTotal += minimum
		remaining -= minimum
		if remaining < 0 {
			return nil, fmt.Sprintf("%s (%d endpoints, %d zones)", msgMinAllocationExceedsThresh, n, len(ratios))
		}
	}
	for zone, a := range out {
		a.maximum = a.minimum + n - minTotal
		out[zone] = a
	}
	return out, ""
}

// givingAndReceiving is how many endpoints each zone should hand to other zones and take
// from them, given the desired allocations and the hints allocated now. Fractions are
// traded while at least half an endpoint on both sides, and a whole one on one side, remains.
func givingAndReceiving(allocs map[string]allocation, allocated map[string]int) (giving, receiving map[string]int) {
	giveWant, takeWant := map[string]float64{}, map[string]float64{}
	for zone, a := range allocs {
		have := float64(allocated[zone])
		switch {
		case have > a.desired:
			giveWant[zone] = have - a.desired
		case have < a.desired:
			takeWant[zone] = a.desired - have
		}
	}
	giving, receiving = map[string]int{}, map[string]int{}
	for {
		gz, give := most(giveWant)
		rz, take := most(takeWant)
		if gz == "" || rz == "" || (give < 1 && take < 1) || give < 0.5 || take < 0.5 {
			return giving, receiving
		}
		giving[gz]++
		giveWant[gz]--
		receiving[rz]++
		takeWant[rz]--
	}
}

func most(zones map[string]float64) (string, float64) {
	zone, n := "", 0.0
	for z, v := range zones {
		if v > n || (v == n && v > 0 && z < zone) {
			zone, n = z, v
		}
	}
	return zone, n
}

// redistribute re-hints ready endpoints of giving zones for receiving zones, and returns the
// change in hints per zone.
func redistribute(slices []*discoveryv1.EndpointSlice, giving, receiving map[string]int) map[string]int {
	moved := map[string]int{}
	for _, s := range slices {
		for i, ep := range s.Endpoints {
			if !endpointReady(ep) || ep.Zone == nil || *ep.Zone == "" {
				continue
			}
			if len(giving) == 0 || len(receiving) == 0 {
				return moved
			}
			from := *ep.Zone
			if giving[from] == 0 {
				continue
			}
			to := firstZone(receiving)
			s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: to}}}
			decrement(giving, from)
			decrement(receiving, to)
			moved[to]++
			moved[from]--
		}
	}
	return moved
}

// firstZone is the alphabetically first zone with a positive count (deterministic where
// upstream takes any).
func firstZone(zones map[string]int) string {
	first := ""
	for z, n := range zones {
		if n > 0 && (first == "" || z < first) {
			first = z
		}
	}
	return first
}

func decrement(zones map[string]int, zone string) {
	if zones[zone] <= 1 {
		delete(zones, zone)
		return
	}
	zones[zone]--
}

// hintsByZone counts the zone hints of a slice's ready endpoints, nil when the slice must be
// re-hinted: a ready endpoint without hints, a hint for a zone not allocated, or more hints
// than a zone's maximum given those already counted.
func hintsByZone(s *discoveryv1.EndpointSlice, allocated map[string]int, allocs map[string]allocation) map[string]int {
	byZone := map[string]int{}
	for _, ep := range s.Endpoints {
		if !endpointReady(ep) {
			continue
		}
		if ep.Hints == nil || len(ep.Hints.ForZones) == 0 {
			return nil
		}
		for _, z := range ep.Hints.ForZones {
			if _, ok := allocs[z.Name]; !ok {
				return nil
			}
			byZone[z.Name]++
		}
	}
	for zone, n := range byZone {
		if n+allocated[zone] > allocs[zone].maximum {
			return nil
		}
	}
	return byZone
}

// overloaded reports whether a Service's hints leave a zone with fewer endpoints than its
// CPU share less the overload threshold (or no CPU information at all).
func overloaded(hinted map[string]int, ratios map[string]float64) bool {
	if len(hinted) == 0 {
		return false
	}
	if len(ratios) == 0 {
		return true
	}
	total := 0.0
	for _, n := range hinted {
		total += float64(n)
	}
	for zone, ratio := range ratios {
		n, ok := hinted[zone]
		if !ok || n < int(math.Ceil(total*ratio*(1/(1+overloadThreshold)))) {
			return true
		}
	}
	return false
}

func readyEndpoints(slices ...[]*discoveryv1.EndpointSlice) int {
	n := 0
	for _, ss := range slices {
		for _, s := range ss {
			for _, ep := range s.Endpoints {
				if endpointReady(ep) {
					n++
				}
			}
		}
	}
	return n
}

// topologyCache is the state behind topology-aware hints: the zones' CPU shares (set when
// nodes change) and, per Service and address type, the hints allocated to each zone, so
// that node changes can find the Services they overload.
type topologyCache struct {
	mu         sync.Mutex
	nodesKnown bool
	ratios     map[string]float64
	hinted     map[string]map[discoveryv1.AddressType]map[string]int
	// populated are the Services with hints, as upstream tracks them: removing the hints
	// of one address type forgets the Service.
	populated map[string]bool
}

func newTopologyCache() *topologyCache {
	return &topologyCache{hinted: map[string]map[discoveryv1.AddressType]map[string]int{}, populated: map[string]bool{}}
}

// setNodes recomputes the zones' CPU shares.
func (t *topologyCache) setNodes(nodes []*corev1.Node) {
	ratios := zoneCPURatios(nodes)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.ratios, t.nodesKnown = ratios, true
}

func (t *topologyCache) hasNodes() bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.nodesKnown
}

// overloadedServices are the keys of the Services whose hints the current CPU shares
// overload.
func (t *topologyCache) overloadedServices() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	var keys []string
	for key, byType := range t.hinted {
		for _, hinted := range byType {
			if overloaded(hinted, t.ratios) {
				keys = append(keys, key)
				break
			}
		}
	}
	return keys
}

func (t *topologyCache) hasHints(key string) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.populated[key]
}

func (t *topologyCache) removeHints(key string, addressType discoveryv1.AddressType) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.hinted[key], addressType)
	if len(t.hinted[key]) == 0 {
		delete(t.hinted, key)
	}
	delete(t.populated, key)
}

func (t *topologyCache) removeService(key string) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.hinted, key)
	delete(t.populated, key)
}

// addHints is upstream's TopologyCache.AddHints: every ready endpoint of the slices being
// written is hinted for its own zone, unchanged slices whose hints no longer fit are
// rewritten, then endpoints move from zones with more than their CPU share to zones with
// less. When hints cannot be allocated they are removed instead, with an Event saying why.
func (t *topologyCache) addHints(key string, addressType discoveryv1.AddressType, ch changes) (changes, []hintEvent) {
	t.mu.Lock()
	ratios := t.ratios
	t.mu.Unlock()
	allocs, why := allocations(ratios, readyEndpoints(ch.create, ch.update, ch.unchanged))
	if why != "" {
		t.removeHints(key, addressType)
		return removeHints(ch), []hintEvent{disabled(why, addressType)}
	}

	allocated := map[string]int{}
	var still []*discoveryv1.EndpointSlice
	for _, s := range ch.unchanged {
		byZone := hintsByZone(s, allocated, allocs)
		if byZone == nil {
			ch.update = append(ch.update, s.DeepCopy())
			continue
		}
		still = append(still, s)
		for z, n := range byZone {
			allocated[z] += n
		}
	}
	ch.unchanged = still

	writable := append(append([]*discoveryv1.EndpointSlice{}, ch.create...), ch.update...)
	for _, s := range writable {
		for i, ep := range s.Endpoints {
			if !endpointReady(ep) {
				continue
			}
			if ep.Zone == nil || *ep.Zone == "" {
				t.removeHints(key, addressType)
				return removeHints(ch), []hintEvent{disabled(msgNoZoneSpecified, addressType)}
			}
			allocated[*ep.Zone]++
			s.Endpoints[i].Hints = &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: *ep.Zone}}}
		}
	}
	giving, receiving := givingAndReceiving(allocs, allocated)
	for zone, diff := range redistribute(writable, giving, receiving) {
		allocated[zone] += diff
	}
	if len(allocated) == 0 {
		t.removeHints(key, addressType)
		return removeHints(ch), []hintEvent{disabled(msgNoAllocatedHintsForZones, addressType)}
	}

	t.mu.Lock()
	defer t.mu.Unlock()
	had := t.populated[key]
	if t.hinted[key] == nil {
		t.hinted[key] = map[discoveryv1.AddressType]map[string]int{}
	}
	t.hinted[key][addressType] = allocated
	t.populated[key] = true
	if had {
		return ch, nil
	}
	return ch, []hintEvent{{corev1.EventTypeNormal, reasonHintsEnabled, withAddressType(msgHintsEnabled, addressType)}}
}

// removeHints clears the hints of the slices being written and moves unchanged slices that
// carry hints to update.
func removeHints(ch changes) changes {
	return trafficDistributionUpdate(nil, ch)
}
