package endpointslice

import (
	"fmt"
	"slices"
	"sort"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apimachineryvalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcm/kcm/internal/pod"
)

// changes is what one sync writes for one address type. unchanged are the slices kept as
// they are; hints may still move some of them to update.
type changes struct {
	create, update, delete, unchanged []*discoveryv1.EndpointSlice
}

// nodeLookup finds a node by name; found is false when it does not exist.
type nodeLookup func(name string) (node *corev1.Node, found bool, err error)

// planAddressType compares the Service's desired endpoints of one address type with its
// existing slices of that type and decides, as upstream's reconciler, with the fewest writes:
// slices keep the endpoints they have, emptied slices go, slices already being written are
// filled first, leftovers fit into the unchanged slice that ends up fullest, and only then
// new slices are made. A Service without endpoints keeps one empty placeholder slice. Pods on
// a node that does not exist are left out and reported (unless the Service publishes
// not-ready addresses), so the sync is retried.
func planAddressType(svc *corev1.Service, pods []*corev1.Pod, existing []*discoveryv1.EndpointSlice,
	addressType discoveryv1.AddressType, maxPerSlice int, nodeOf nodeLookup) (changes, []error) {
	var ch changes
	var errs []error

	existingByPorts := map[string][]*discoveryv1.EndpointSlice{}
	var notOwned []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if ownedBy(s, svc) {
			k := portsKey(s.Ports)
			existingByPorts[k] = append(existingByPorts[k], s)
		} else {
			notOwned = append(notOwned, s)
		}
	}

	desiredPorts := map[string][]discoveryv1.EndpointPort{}
	desired := map[string]*endpointSet{}
	var portKeys []string // in first-seen order, for stable results
	for _, p := range pods {
		if !pod.InEndpoints(p, true) {
			continue
		}
		ports := endpointPorts(svc, p)
		k := portsKey(ports)
		if _, ok := desired[k]; !ok {
			desired[k] = newEndpointSet()
			desiredPorts[k] = ports
			portKeys = append(portKeys, k)
		}
		node, found, err := nodeOf(p.Spec.NodeName)
		if err != nil {
			return changes{}, []error{err}
		}
		if !found && !svc.Spec.PublishNotReadyAddresses {
			errs = append(errs, fmt.Errorf("skipping Pod %s for Service %s/%s: Node %s Not Found", p.Name, svc.Namespace, svc.Name, p.Spec.NodeName))
			continue
		}
		ep := podToEndpoint(p, node, svc, addressType)
		if len(ep.Addresses) > 0 {
			desired[k].insert(&ep)
		}
	}

	ch.delete = append(ch.delete, notOwned...)
	for _, k := range portKeys {
		c := fillSlices(svc, existingByPorts[k], desired[k], desiredPorts[k], addressType, maxPerSlice)
		ch.create = append(ch.create, c.create...)
		ch.update = append(ch.update, c.update...)
		ch.delete = append(ch.delete, c.delete...)
	}
	for k, ss := range existingByPorts {
		if _, ok := desired[k]; !ok {
			ch.delete = append(ch.delete, ss...)
		}
	}

	// Every slice would go and none is made: keep (or make) an empty placeholder.
	if len(existing) == len(ch.delete) && len(ch.create) == 0 {
		placeholder := newSlice(svc, []discoveryv1.EndpointPort{}, addressType)
		if len(ch.delete) == 1 && isPlaceholder(ch.delete[0], placeholder) {
			ch.delete = nil
		} else {
			ch.create = append(ch.create, placeholder)
		}
	}
	ch.unchanged = unchanged(existing, ch.update, ch.delete)
	return ch, errs
}

// fillSlices is upstream's reconcileByPortMapping for the slices of one set of ports.
func fillSlices(svc *corev1.Service, existing []*discoveryv1.EndpointSlice, desired *endpointSet,
	ports []discoveryv1.EndpointPort, addressType discoveryv1.AddressType, maxPerSlice int) changes {
	byName := map[string]*discoveryv1.EndpointSlice{}
	var unchangedNames, updateNames, deleteNames []string

	// 1. Keep the desired endpoints existing slices hold (in their desired form), drop the
	// others; a slice left empty goes.
	for _, s := range existing {
		byName[s.Name] = s
		kept := []discoveryv1.Endpoint{}
		changed := false
		for i := range s.Endpoints {
			want := desired.get(&s.Endpoints[i])
			if want == nil {
				continue
			}
			kept = append(kept, *want)
			if endpointChanged(want, &s.Endpoints[i]) {
				changed = true
			}
			desired.remove(want)
		}
		labels, labelsChanged := sliceLabels(s, svc)
		switch {
		case changed || len(kept) != len(s.Endpoints):
			if len(kept) == 0 {
				deleteNames = append(deleteNames, s.Name)
				continue
			}
			c := s.DeepCopy()
			c.Endpoints, c.Labels = kept, labels
			byName[s.Name] = c
			updateNames = append(updateNames, s.Name)
		case labelsChanged:
			c := s.DeepCopy()
			c.Labels = labels
			byName[s.Name] = c
			updateNames = append(updateNames, s.Name)
		default:
			unchangedNames = append(unchangedNames, s.Name)
		}
	}

	// 2. Fill the slices being written anyway, fullest first.
	if desired.len() > 0 && len(updateNames) > 0 {
		toFill := make([]*discoveryv1.EndpointSlice, 0, len(updateNames))
		for _, n := range updateNames {
			toFill = append(toFill, byName[n])
		}
		sort.SliceStable(toFill, func(i, j int) bool { return len(toFill[i].Endpoints) > len(toFill[j].Endpoints) })
		for _, s := range toFill {
			for desired.len() > 0 && len(s.Endpoints) < maxPerSlice {
				s.Endpoints = append(s.Endpoints, *desired.pop())
			}
		}
	}

	// 3. Put what is left in the unchanged slice it fills best, else in new slices.
	var create []*discoveryv1.EndpointSlice
	for desired.len() > 0 {
		var s *discoveryv1.EndpointSlice
		if desired.len() < maxPerSlice && len(unchangedNames) > 0 {
			candidates := make([]*discoveryv1.EndpointSlice, 0, len(unchangedNames))
			for _, n := range unchangedNames {
				candidates = append(candidates, byName[n])
			}
			if best := sliceToFill(candidates, desired.len(), maxPerSlice); best != nil {
				s = best.DeepCopy()
				byName[s.Name] = s
			}
		}
		if s == nil {
			s = newSlice(svc, ports, addressType)
		}
		for desired.len() > 0 && len(s.Endpoints) < maxPerSlice {
			s.Endpoints = append(s.Endpoints, *desired.pop())
		}
		if s.Name == "" {
			create = append(create, s)
			continue
		}
		updateNames = append(updateNames, s.Name)
		unchangedNames = slices.DeleteFunc(unchangedNames, func(n string) bool { return n == s.Name })
	}

	c := changes{create: create}
	for _, n := range updateNames {
		c.update = append(c.update, byName[n])
	}
	for _, n := range deleteNames {
		c.delete = append(c.delete, byName[n])
	}
	return c
}

// sliceToFill is the slice that would be closest to full after taking n more endpoints,
// nil when none has room.
func sliceToFill(candidates []*discoveryv1.EndpointSlice, n, maxPerSlice int) *discoveryv1.EndpointSlice {
	closest := maxPerSlice
	var best *discoveryv1.EndpointSlice
	for _, s := range candidates {
		diff := maxPerSlice - (n + len(s.Endpoints))
		if diff >= 0 && diff < closest {
			closest, best = diff, s
			if diff == 0 {
				return best
			}
		}
	}
	return best
}

// pairCreatesWithDeletes turns creations into updates of slices that would be deleted
// (same address type, owned by the Service): one write instead of two.
func pairCreatesWithDeletes(svc *corev1.Service, ch changes) changes {
	for i := 0; i < len(ch.delete) && len(ch.create) > 0; {
		old := ch.delete[i]
		s := ch.create[len(ch.create)-1]
		if old.AddressType != s.AddressType || !ownedBy(old, svc) {
			i++
			continue
		}
		s.Name = old.Name
		s.ResourceVersion = old.ResourceVersion
		ch.create = ch.create[:len(ch.create)-1]
		ch.update = append(ch.update, s)
		ch.delete = append(ch.delete[:i], ch.delete[i+1:]...)
	}
	return ch
}

// newSlice is an empty slice for the Service: generateName "<service>-", controlled by the
// Service, labelled as sliceLabels says.
func newSlice(svc *corev1.Service, ports []discoveryv1.EndpointPort, addressType discoveryv1.AddressType) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       svc.Namespace,
			GenerateName:    slicePrefix(svc.Name),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(svc, corev1.SchemeGroupVersion.WithKind("Service"))},
		},
		AddressType: addressType,
		Ports:       ports,
		Endpoints:   []discoveryv1.Endpoint{},
	}
	s.Labels, _ = sliceLabels(s, svc)
	return s
}

// slicePrefix is "<service>-", or the bare name when the dash would make it too long.
func slicePrefix(name string) string {
	prefix := name + "-"
	if len(apimachineryvalidation.NameIsDNSSubdomain(prefix, true)) != 0 {
		return name
	}
	return prefix
}

func ownedBy(s *discoveryv1.EndpointSlice, svc *corev1.Service) bool {
	for _, o := range s.OwnerReferences {
		if o.UID == svc.UID && o.Kind == "Service" && o.APIVersion == "v1" {
			return true
		}
	}
	return false
}

// isPlaceholder reports whether an existing slice is already the placeholder the Service
// needs: same namespace, labels and address type, no ports, no endpoints.
func isPlaceholder(s, placeholder *discoveryv1.EndpointSlice) bool {
	if s.Namespace != placeholder.Namespace || s.AddressType != placeholder.AddressType ||
		len(s.Ports) != 0 || len(s.Endpoints) != 0 || len(s.Labels) != len(placeholder.Labels) {
		return false
	}
	for k, v := range placeholder.Labels {
		if w, ok := s.Labels[k]; !ok || w != v {
			return false
		}
	}
	return true
}

func unchanged(existing, update, del []*discoveryv1.EndpointSlice) []*discoveryv1.EndpointSlice {
	changed := map[string]bool{}
	for _, s := range update {
		changed[s.Name] = true
	}
	for _, s := range del {
		changed[s.Name] = true
	}
	var out []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if !changed[s.Name] {
			out = append(out, s)
		}
	}
	return out
}

// endpointSet holds desired endpoints by identity, handing them out in a stable order.
type endpointSet struct {
	byKey map[string]*discoveryv1.Endpoint
	order []string
	next  int
}

func newEndpointSet() *endpointSet { return &endpointSet{byKey: map[string]*discoveryv1.Endpoint{}} }

func (s *endpointSet) insert(ep *discoveryv1.Endpoint) {
	k := endpointKey(ep)
	if _, ok := s.byKey[k]; !ok {
		s.order = append(s.order, k)
	}
	s.byKey[k] = ep
}

func (s *endpointSet) get(ep *discoveryv1.Endpoint) *discoveryv1.Endpoint {
	return s.byKey[endpointKey(ep)]
}

func (s *endpointSet) remove(ep *discoveryv1.Endpoint) { delete(s.byKey, endpointKey(ep)) }

func (s *endpointSet) len() int { return len(s.byKey) }

// pop hands out the earliest inserted endpoint still in the set; nil when empty.
func (s *endpointSet) pop() *discoveryv1.Endpoint {
	for ; s.next < len(s.order); s.next++ {
		if ep, ok := s.byKey[s.order[s.next]]; ok {
			delete(s.byKey, s.order[s.next])
			s.next++
			return ep
		}
	}
	return nil
}
