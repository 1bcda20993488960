package endpointslice

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// ep is a test endpoint: ready or not, in a zone on a node ("" for none).
func ep(name string, ready bool, zone, node string) discoveryv1.Endpoint {
	e := discoveryv1.Endpoint{
		Addresses:  []string{name},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
		TargetRef:  &corev1.ObjectReference{Name: name},
	}
	if zone != "" {
		e.Zone = ptr.To(zone)
	}
	if node != "" {
		e.NodeName = ptr.To(node)
	}
	return e
}

func zoneHint(z string) *discoveryv1.EndpointHints {
	return &discoveryv1.EndpointHints{ForZones: []discoveryv1.ForZone{{Name: z}}}
}

// renderHints shows every endpoint's hints as name:zones/nodes, sorted.
func renderHints(slices ...*discoveryv1.EndpointSlice) string {
	var out []string
	for _, s := range slices {
		for _, e := range s.Endpoints {
			h := "-"
			if e.Hints != nil {
				var parts []string
				for _, z := range e.Hints.ForZones {
					parts = append(parts, z.Name)
				}
				for _, n := range e.Hints.ForNodes {
					parts = append(parts, "node:"+n.Name)
				}
				h = strings.Join(parts, "+")
			}
			out = append(out, e.TargetRef.Name+":"+h)
		}
	}
	sort.Strings(out)
	return strings.Join(out, " ")
}

func TestTrafficDistributionUpdate(t *testing.T) {
	tests := map[string]struct {
		td          *string
		endpoints   []discoveryv1.Endpoint
		wantHints   string
		wantUpdated bool
	}{
		"PreferClose hints ready endpoints for their zone": {
			td:          ptr.To(corev1.ServiceTrafficDistributionPreferClose),
			endpoints:   []discoveryv1.Endpoint{ep("a", true, "z1", "n1"), ep("b", false, "z2", "n2"), ep("c", true, "", "n3")},
			wantHints:   "a:z1 b:- c:-",
			wantUpdated: true,
		},
		"PreferSameZone is PreferClose": {
			td:          ptr.To(corev1.ServiceTrafficDistributionPreferSameZone),
			endpoints:   []discoveryv1.Endpoint{ep("a", true, "z1", "n1")},
			wantHints:   "a:z1",
			wantUpdated: true,
		},
		"PreferSameNode adds the node": {
			td:          ptr.To(corev1.ServiceTrafficDistributionPreferSameNode),
			endpoints:   []discoveryv1.Endpoint{ep("a", true, "z1", "n1"), ep("c", true, "", "n3")},
			wantHints:   "a:z1+node:n1 c:node:n3",
			wantUpdated: true,
		},
		"already hinted: unchanged": {
			td: ptr.To(corev1.ServiceTrafficDistributionPreferClose),
			endpoints: func() []discoveryv1.Endpoint {
				a := ep("a", true, "z1", "n1")
				a.Hints = zoneHint("z1")
				return []discoveryv1.Endpoint{a, ep("b", false, "z2", "")}
			}(),
			wantHints: "a:z1 b:-",
		},
		"stale zone hint: rewritten": {
			td: ptr.To(corev1.ServiceTrafficDistributionPreferClose),
			endpoints: func() []discoveryv1.Endpoint {
				a := ep("a", true, "z1", "n1")
				a.Hints = zoneHint("z2")
				return []discoveryv1.Endpoint{a}
			}(),
			wantHints:   "a:z1",
			wantUpdated: true,
		},
		"no trafficDistribution clears hints": {
			endpoints: func() []discoveryv1.Endpoint {
				b := ep("b", false, "z2", "")
				b.Hints = zoneHint("z2")
				return []discoveryv1.Endpoint{ep("a", true, "z1", ""), b}
			}(),
			wantHints:   "a:- b:-",
			wantUpdated: true,
		},
		"no trafficDistribution, no hints: unchanged": {
			endpoints: []discoveryv1.Endpoint{ep("a", true, "z1", "")},
			wantHints: "a:-",
		},
	}
	for name, tt := range tests {
		s := &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Name: "s"}, Endpoints: tt.endpoints}
		ch := trafficDistributionUpdate(tt.td, changes{unchanged: []*discoveryv1.EndpointSlice{s}})
		updated := len(ch.update) == 1
		all := append(ch.update, ch.unchanged...)
		if updated != tt.wantUpdated || renderHints(all...) != tt.wantHints {
			t.Errorf("%s: updated %v, hints %q; want %v, %q", name, updated, renderHints(all...), tt.wantUpdated, tt.wantHints)
		}
		if updated && renderHints(s) != renderHints(&discoveryv1.EndpointSlice{Endpoints: tt.endpoints}) {
			t.Errorf("%s: the cached slice was modified", name)
		}
	}
}

func TestTrafficDistributionHints(t *testing.T) {
	svc := testService(func(s *corev1.Service) { s.Spec.TrafficDistribution = ptr.To("PreferClose") })
	if !trafficDistributionHints(svc) {
		t.Error("PreferClose: want hints")
	}
	svc.Annotations = map[string]string{corev1.AnnotationTopologyMode: "Auto"}
	if trafficDistributionHints(svc) {
		t.Error("topology-mode Auto takes precedence over trafficDistribution")
	}
	svc.Annotations = nil
	svc.Spec.TrafficDistribution = ptr.To("Elsewhere")
	if trafficDistributionHints(svc) {
		t.Error("an unknown value asks for no hints")
	}
	for annotations, want := range map[string]bool{
		"topology-mode=Auto": true, "topology-mode=auto": true, "topology-mode=Disabled": false,
		"topology-aware-hints=Auto": true, "topology-aware-hints=Disabled,topology-mode=Auto": false, "": false,
	} {
		a := map[string]string{}
		for _, kv := range strings.Split(annotations, ",") {
			if k, v, ok := strings.Cut(kv, "="); ok {
				a["service.kubernetes.io/"+k] = v
			}
		}
		if got := topologyModeAuto(a); got != want {
			t.Errorf("topologyModeAuto(%s) = %v, want %v", annotations, got, want)
		}
	}
}

func node(name, zone, cpu string, ready bool, labels ...string) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{}}}
	if zone != "" {
		n.Labels[corev1.LabelTopologyZone] = zone
	}
	for _, l := range labels {
		n.Labels[l] = ""
	}
	if cpu != "" {
		n.Status.Allocatable = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}
	}
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status}}
	return n
}

func TestZoneCPURatios(t *testing.T) {
	tests := map[string]struct {
		nodes []*corev1.Node
		want  map[string]float64
	}{
		"two zones 3:1": {
			nodes: []*corev1.Node{node("a", "z1", "2", true), node("b", "z1", "1", true), node("c", "z2", "1", true)},
			want:  map[string]float64{"z1": 0.75, "z2": 0.25},
		},
		"not ready and control-plane nodes do not count": {
			nodes: []*corev1.Node{node("a", "z1", "1", true), node("b", "z2", "1", true), node("c", "z1", "8", false),
				node("d", "z1", "8", true, "node-role.kubernetes.io/control-plane")},
			want: map[string]float64{"z1": 0.5, "z2": 0.5},
		},
		"a node without zone: nothing": {
			nodes: []*corev1.Node{node("a", "z1", "1", true), node("b", "z2", "1", true), node("c", "", "1", true)},
		},
		"a node without CPU: nothing": {
			nodes: []*corev1.Node{node("a", "z1", "1", true), node("b", "z2", "", true)},
		},
		"one zone: nothing": {
			nodes: []*corev1.Node{node("a", "z1", "1", true), node("b", "z1", "1", true)},
		},
	}
	for name, tt := range tests {
		if got := zoneCPURatios(tt.nodes); fmt.Sprint(got) != fmt.Sprint(tt.want) {
			t.Errorf("%s: ratios = %v, want %v", name, got, tt.want)
		}
	}
}

func TestAllocations(t *testing.T) {
	tests := map[string]struct {
		ratios  map[string]float64
		n       int
		want    string // zone:min-max/desired, sorted
		wantWhy string
	}{
		"even": {map[string]float64{"a": 0.5, "b": 0.5}, 10, "a:5-5/5.00 b:5-5/5.00", ""},
		"3:1 of 8": {map[string]float64{"a": 0.75, "b": 0.25}, 8,
			"a:5-6/6.00 b:2-3/2.00", ""},
		"no node info":      {nil, 10, "", msgInsufficientNodeInfo},
		"one zone":          {map[string]float64{"a": 1}, 10, "", msgNodesReadyInOneZoneOnly},
		"too few endpoints": {map[string]float64{"a": 0.5, "b": 0.3, "c": 0.2}, 2, "", "Insufficient number of endpoints (2 endpoints, 3 zones)"},
		"minimums exceed total": {map[string]float64{"a": 0.5, "b": 0.25, "c": 0.25}, 3, "",
			"Unable to allocate minimum required endpoints to each zone without exceeding overload threshold (3 endpoints, 3 zones)"},
	}
	for name, tt := range tests {
		got, why := allocations(tt.ratios, tt.n)
		var parts []string
		for z, a := range got {
			parts = append(parts, fmt.Sprintf("%s:%d-%d/%.2f", z, a.minimum, a.maximum, a.desired))
		}
		sort.Strings(parts)
		if strings.Join(parts, " ") != tt.want || why != tt.wantWhy {
			t.Errorf("%s: allocations = %q, %q; want %q, %q", name, strings.Join(parts, " "), why, tt.want, tt.wantWhy)
		}
	}
}

func TestGivingAndReceiving(t *testing.T) {
	allocs, _ := allocations(map[string]float64{"a": 0.5, "b": 0.5}, 4)
	giving, receiving := givingAndReceiving(allocs, map[string]int{"a": 3, "b": 1})
	if fmt.Sprint(giving, receiving) != "map[a:1] map[b:1]" {
		t.Errorf("3:1 for an even split: giving %v receiving %v", giving, receiving)
	}
	giving, receiving = givingAndReceiving(allocs, map[string]int{"a": 2, "b": 2})
	if len(giving)+len(receiving) != 0 {
		t.Errorf("balanced: giving %v receiving %v", giving, receiving)
	}
	// Half an endpoint either way is not worth moving one.
	allocs, _ = allocations(map[string]float64{"a": 0.5, "b": 0.5}, 3)
	giving, receiving = givingAndReceiving(allocs, map[string]int{"a": 2, "b": 1})
	if len(giving)+len(receiving) != 0 {
		t.Errorf("2:1 for 1.5 each: giving %v receiving %v", giving, receiving)
	}
}

func TestOverloaded(t *testing.T) {
	even := map[string]float64{"a": 0.5, "b": 0.5}
	tests := map[string]struct {
		hinted map[string]int
		ratios map[string]float64
		want   bool
	}{
		"no hints":         {nil, even, false},
		"balanced":         {map[string]int{"a": 5, "b": 5}, even, false},
		"within threshold": {map[string]int{"a": 6, "b": 5}, even, false},
		"zone short":       {map[string]int{"a": 8, "b": 2}, even, true},
		"zone missing":     {map[string]int{"a": 4}, even, true},
		"no node info":     {map[string]int{"a": 4, "b": 4}, nil, true},
	}
	for name, tt := range tests {
		if got := overloaded(tt.hinted, tt.ratios); got != tt.want {
			t.Errorf("%s: overloaded = %v, want %v", name, got, tt.want)
		}
	}
}

func TestTopologyCacheAddHints(t *testing.T) {
	tc := newTopologyCache()
	tc.setNodes([]*corev1.Node{node("n1", "z1", "4", true), node("n2", "z2", "4", true)})
	slice := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{
		ep("a1", true, "z1", "n1"), ep("a2", true, "z1", "n1"), ep("a3", true, "z1", "n1"), ep("b1", true, "z2", "n2"), ep("x", false, "z2", "n2"),
	}}
	ch, events := tc.addHints("ns/web", discoveryv1.AddressTypeIPv4, changes{create: []*discoveryv1.EndpointSlice{slice}})
	if got := renderHints(ch.create...); got != "a1:z2 a2:z1 a3:z1 b1:z2 x:-" {
		t.Errorf("hints = %q: one of zone z1's three endpoints should serve z2", got)
	}
	if len(events) != 1 || events[0].reason != reasonHintsEnabled || events[0].message != "Topology Aware Hints has been enabled, addressType: IPv4" {
		t.Errorf("events = %+v", events)
	}
	if !tc.hasHints("ns/web") || len(tc.overloadedServices()) != 0 {
		t.Errorf("hints recorded %v, overloaded %v", tc.hasHints("ns/web"), tc.overloadedServices())
	}

	// The same slice, unchanged, in the next sync: nothing to write, no Event.
	ch, events = tc.addHints("ns/web", discoveryv1.AddressTypeIPv4, changes{unchanged: []*discoveryv1.EndpointSlice{slice}})
	if len(ch.update) != 0 || len(events) != 0 {
		t.Errorf("steady state: %d updates, events %+v", len(ch.update), events)
	}

	// Zone z2's capacity grows fourfold: the hints overload it.
	tc.setNodes([]*corev1.Node{node("n1", "z1", "1", true), node("n2", "z2", "4", true)})
	if got := tc.overloadedServices(); fmt.Sprint(got) != "[ns/web]" {
		t.Errorf("overloaded after a node change = %v", got)
	}

	// An endpoint without a zone: hints removed, with upstream's Event.
	tc.setNodes([]*corev1.Node{node("n1", "z1", "4", true), node("n2", "z2", "4", true)})
	noZone := &discoveryv1.EndpointSlice{Endpoints: []discoveryv1.Endpoint{ep("a", true, "z1", ""), ep("b", true, "", ""), ep("c", true, "z2", ""), ep("d", true, "z2", "")}}
	ch, events = tc.addHints("ns/web", discoveryv1.AddressTypeIPv4, changes{update: []*discoveryv1.EndpointSlice{noZone}})
	if renderHints(ch.update...) != "a:- b:- c:- d:-" || len(events) != 1 ||
		events[0].message != "One or more endpoints do not have a zone specified, addressType: IPv4" || tc.hasHints("ns/web") {
		t.Errorf("no zone: hints %q, events %+v", renderHints(ch.update...), events)
	}

	// Not enough nodes information: hints removed.
	tc.setNodes([]*corev1.Node{node("n1", "z1", "1", true)})
	_, events = tc.addHints("ns/web", discoveryv1.AddressTypeIPv4, changes{create: []*discoveryv1.EndpointSlice{slice.DeepCopy()}})
	// Fewer than two zones leaves no CPU shares at all, so upstream's "Nodes only ready in
	// one zone" never shows.
	if len(events) != 1 || events[0].message != "Insufficient Node information: allocatable CPU or zone not specified on one or more nodes, addressType: IPv4" {
		t.Errorf("one zone: events %+v", events)
	}
}
