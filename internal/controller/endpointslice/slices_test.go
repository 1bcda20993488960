package endpointslice

import (
	"fmt"
	"sort"
	"testing"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

var testNodes = map[string]*corev1.Node{
	"n1": {ObjectMeta: metav1.ObjectMeta{Name: "n1", Labels: map[string]string{corev1.LabelTopologyZone: "z1"}}},
	"n2": {ObjectMeta: metav1.ObjectMeta{Name: "n2", Labels: map[string]string{corev1.LabelTopologyZone: "z2"}}},
}

func lookup(name string) (*corev1.Node, bool, error) {
	n, ok := testNodes[name]
	return n, ok, nil
}

// podsN makes n ready pods p000.. with IPs 10.0.x.y on n1.
func podsN(from, n int) []*corev1.Pod {
	var out []*corev1.Pod
	for i := from; i < from+n; i++ {
		out = append(out, testPod(fmt.Sprintf("p%03d", i), ips(fmt.Sprintf("10.0.%d.%d", i/250, i%250+1))))
	}
	return out
}

// persist plays the API server: the created slices get names and UIDs, and together with
// the updated ones replace the existing set.
func persist(existing []*discoveryv1.EndpointSlice, ch changes) []*discoveryv1.EndpointSlice {
	byName := map[string]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		byName[s.Name] = s
	}
	for _, s := range ch.delete {
		delete(byName, s.Name)
	}
	for _, s := range ch.update {
		byName[s.Name] = s
	}
	for i, s := range ch.create {
		s = s.DeepCopy()
		s.Name = fmt.Sprintf("%s%d-%d", s.GenerateName, len(byName), i)
		s.UID = types.UID(s.Name)
		byName[s.Name] = s
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range byName {
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func sizes(slices []*discoveryv1.EndpointSlice) []int {
	var out []int
	for _, s := range slices {
		out = append(out, len(s.Endpoints))
	}
	sort.Sort(sort.Reverse(sort.IntSlice(out)))
	return out
}

func plan(t *testing.T, svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice, max int) changes {
	t.Helper()
	ch, errs := planAddressType(svc, pods, existing, discoveryv1.AddressTypeIPv4, max, lookup)
	if len(errs) > 0 {
		t.Fatalf("plan errors: %v", errs)
	}
	return pairCreatesWithDeletes(svc, ch)
}

func counts(ch changes) [3]int { return [3]int{len(ch.create), len(ch.update), len(ch.delete)} }

func TestPlanSplitsAndRefills(t *testing.T) {
	svc := testService()
	ch := plan(t, svc, podsN(0, 250), nil, 100)
	if counts(ch) != [3]int{3, 0, 0} {
		t.Fatalf("250 endpoints: create/update/delete = %v, want 3 creations", counts(ch))
	}
	slices := persist(nil, ch)
	if got := sizes(slices); fmt.Sprint(got) != "[100 100 50]" {
		t.Fatalf("sizes = %v", got)
	}
	for _, s := range slices {
		if s.GenerateName != "web-" || !ownedBy(s, svc) || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy {
			t.Fatalf("slice meta = %+v", s.ObjectMeta)
		}
	}

	if ch := plan(t, svc, podsN(0, 250), slices, 100); counts(ch) != [3]int{} {
		t.Fatalf("nothing changed: create/update/delete = %v, want no writes", counts(ch))
	}

	// 30 more: they fit into the slice of 50 (closest to full), no new slice.
	ch = plan(t, svc, podsN(0, 280), slices, 100)
	if counts(ch) != [3]int{0, 1, 0} || len(ch.update[0].Endpoints) != 80 {
		t.Fatalf("30 more: create/update/delete = %v, want one update to 80", counts(ch))
	}
	slices = persist(slices, ch)

	// Scale down to 120: slices emptied go, the others shrink; nothing is repacked.
	ch = plan(t, svc, podsN(0, 120), slices, 100)
	slices = persist(slices, ch)
	if got := sizes(slices); fmt.Sprint(got) != "[100 20]" {
		t.Fatalf("after scale-down sizes = %v (changes %v)", got, counts(ch))
	}
}

func TestPlanFillsSlicesBeingUpdatedFirst(t *testing.T) {
	svc := testService()
	slices := persist(nil, plan(t, svc, podsN(0, 150), nil, 100)) // 100 + 50
	// Pod p000 becomes not ready (an update of its slice) and 10 pods come: they join the
	// slice being updated anyway, if it has room, else the half-full one.
	pods := podsN(0, 160)
	notReady(pods[0])
	ch := plan(t, svc, pods, slices, 100)
	if len(ch.create) != 0 || len(ch.delete) != 0 {
		t.Fatalf("create/update/delete = %v, want updates only", counts(ch))
	}
	total := 0
	for _, s := range persist(slices, ch) {
		total += len(s.Endpoints)
		if len(s.Endpoints) > 100 {
			t.Fatalf("slice of %d endpoints", len(s.Endpoints))
		}
	}
	if total != 160 {
		t.Fatalf("total endpoints %d, want 160", total)
	}
}

func TestPlanPlaceholder(t *testing.T) {
	svc := testService()
	ch := plan(t, svc, nil, nil, 100)
	if counts(ch) != [3]int{1, 0, 0} || len(ch.create[0].Endpoints) != 0 || len(ch.create[0].Ports) != 0 {
		t.Fatalf("no pods: %v, want one empty placeholder", counts(ch))
	}
	slices := persist(nil, ch)
	if ch := plan(t, svc, nil, slices, 100); counts(ch) != [3]int{} {
		t.Fatalf("placeholder kept: %v, want no writes", counts(ch))
	}

	// A pod comes: the placeholder is rewritten with it, not deleted and recreated.
	ch = plan(t, svc, podsN(0, 1), slices, 100)
	if counts(ch) != [3]int{0, 1, 0} || ch.update[0].Name != slices[0].Name || len(ch.update[0].Ports) != 1 {
		t.Fatalf("first pod: %v, want the placeholder updated", counts(ch))
	}
	slices = persist(slices, ch)

	// It goes: the same slice becomes the placeholder again.
	ch = plan(t, svc, nil, slices, 100)
	if counts(ch) != [3]int{0, 1, 0} || len(ch.update[0].Ports) != 0 || len(ch.update[0].Endpoints) != 0 {
		t.Fatalf("last pod gone: %v, want the slice updated to a placeholder", counts(ch))
	}
}

func TestPlanDualStack(t *testing.T) {
	svc := testService(func(s *corev1.Service) {
		s.Spec.ClusterIP = corev1.ClusterIPNone
		s.Spec.IPFamilies = []corev1.IPFamily{corev1.IPv4Protocol, corev1.IPv6Protocol}
	})
	pods := []*corev1.Pod{
		testPod("both", ips("10.0.0.1", "fd00::1")),
		testPod("v4", ips("10.0.0.2")),
		testPod("v6", ips("fd00::3")),
	}
	got := map[discoveryv1.AddressType][]string{}
	for _, at := range addressTypes(svc) {
		ch, errs := planAddressType(svc, pods, nil, at, 100, lookup)
		if len(errs) > 0 || len(ch.create) != 1 {
			t.Fatalf("%s: %v %v", at, counts(ch), errs)
		}
		s := ch.create[0]
		if s.AddressType != at || s.Labels[corev1.IsHeadlessService] != "" {
			t.Fatalf("%s slice: %+v", at, s)
		}
		for _, ep := range s.Endpoints {
			got[at] = append(got[at], ep.TargetRef.Name+"="+ep.Addresses[0])
		}
	}
	want := map[discoveryv1.AddressType][]string{
		discoveryv1.AddressTypeIPv4: {"both=10.0.0.1", "v4=10.0.0.2"},
		discoveryv1.AddressTypeIPv6: {"both=fd00::1", "v6=fd00::3"},
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("endpoints by address type = %v, want %v", got, want)
	}
}

func TestPlanNamedPortsAndOwnership(t *testing.T) {
	svc := testService(func(s *corev1.Service) { s.Spec.Ports[0].TargetPort = intstr.FromString("web") })
	withPort := func(port int32) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Spec.Containers[0].Ports = []corev1.ContainerPort{{Name: "web", ContainerPort: port, Protocol: corev1.ProtocolTCP}}
		}
	}
	pods := []*corev1.Pod{
		testPod("a", ips("10.0.0.1"), withPort(8080)),
		testPod("b", ips("10.0.0.2"), withPort(9090)),
		testPod("c", ips("10.0.0.3"), withPort(8080)),
	}
	// A slice labelled for the Service but owned by a previous Service of the same name.
	foreign := newSlice(testService(func(s *corev1.Service) { s.UID = "old" }), nil, discoveryv1.AddressTypeIPv4)
	foreign.Name, foreign.UID = "web-old", "old-slice"
	ch, errs := planAddressType(svc, pods, []*discoveryv1.EndpointSlice{foreign}, discoveryv1.AddressTypeIPv4, 100, lookup)
	if len(errs) > 0 {
		t.Fatal(errs)
	}
	ch = pairCreatesWithDeletes(svc, ch)
	if counts(ch) != [3]int{2, 0, 1} || ch.delete[0].Name != "web-old" {
		t.Fatalf("create/update/delete = %v, want two slices made and the foreign one deleted (never reused)", counts(ch))
	}
	byPort := map[int32]int{}
	for _, s := range ch.create {
		byPort[*s.Ports[0].Port] = len(s.Endpoints)
	}
	if byPort[8080] != 2 || byPort[9090] != 1 {
		t.Fatalf("endpoints by port = %v", byPort)
	}
}

func TestPlanMissingNode(t *testing.T) {
	pods := []*corev1.Pod{testPod("ok"), testPod("lost", ips("10.0.0.2"), func(p *corev1.Pod) { p.Spec.NodeName = "gone" })}
	ch, errs := planAddressType(testService(), pods, nil, discoveryv1.AddressTypeIPv4, 100, lookup)
	if len(errs) != 1 || errs[0].Error() != "skipping Pod lost for Service ns/web: Node gone Not Found" {
		t.Fatalf("errors = %v", errs)
	}
	if len(ch.create) != 1 || len(ch.create[0].Endpoints) != 1 {
		t.Fatalf("the other pod is still listed: %v", counts(ch))
	}
	publish := testService(func(s *corev1.Service) { s.Spec.PublishNotReadyAddresses = true })
	ch, errs = planAddressType(publish, pods, nil, discoveryv1.AddressTypeIPv4, 100, lookup)
	if len(errs) != 0 || len(ch.create[0].Endpoints) != 2 {
		t.Fatalf("publishNotReadyAddresses lists it anyway: %v %v", counts(ch), errs)
	}
}

func TestPlanLabelChangeOnly(t *testing.T) {
	svc := testService()
	slices := persist(nil, plan(t, svc, podsN(0, 3), nil, 100))
	svc.Labels = map[string]string{"team": "blue"}
	ch := plan(t, svc, podsN(0, 3), slices, 100)
	if counts(ch) != [3]int{0, 1, 0} || ch.update[0].Labels["team"] != "blue" {
		t.Fatalf("label change: %v", counts(ch))
	}
}
