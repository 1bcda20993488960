package endpointslicemirroring

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	endpointsliceutil "k8s.io/endpointslice/util"
	utilnet "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/controller/endpoints"
)

// ManagedBy is the endpointslice.kubernetes.io/managed-by value of mirrored slices.
const ManagedBy = "endpointslicemirroring-controller.k8s.io"

// leaderAnnotation marks the Endpoints old leader elections used as locks: never mirrored.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// ShouldMirror reports whether an Endpoints may be mirrored at all, whatever its Service:
// not labelled skip-mirror=true and not a leader-election lock.
func ShouldMirror(ep *corev1.Endpoints) bool {
	if ep == nil || ep.Labels[discoveryv1.LabelSkipMirror] == "true" {
		return false
	}
	_, leader := ep.Annotations[leaderAnnotation]
	return !leader
}

// Plan is what a sync writes: slices to create (with generateName), to update (whole, by
// name) and to delete, and what it could not mirror.
type Plan struct {
	Create, Update, Delete []*discoveryv1.EndpointSlice
	// Invalid counts addresses that are not IPs; Skipped counts every address not mirrored
	// (invalid or past the per-subset limit).
	Invalid, Skipped int
	// Added, Updated and Removed count the endpoints the plan adds to, changes in and
	// removes from the slices of the desired groups, as upstream's metrics count them.
	Added, Updated, Removed int
	// Groups are the desired groups' endpoints and slices once the plan is written, by
	// group key (upstream's efficiency figures).
	Groups map[string]GroupSize
}

// GroupSize is one group's desired endpoints and the slices it will have.
type GroupSize struct{ Endpoints, Slices int }

// group is the desired content of the slice for one address type and port list.
type group struct {
	addressType discoveryv1.AddressType
	ports       []discoveryv1.EndpointPort
	endpoints   endpointsliceutil.EndpointSet
}

// PlanSlices computes upstream's mirroring of an Endpoints into EndpointSlices, given the
// slices it mirrored before: one slice per address type and subset (after repacking), at
// most max addresses per subset (ready first); an existing slice is kept untouched when its
// endpoints, labels, annotations and owner already match, and reused by name otherwise.
func PlanSlices(ep *corev1.Endpoints, existing []*discoveryv1.EndpointSlice, max int) Plan {
	var plan Plan
	desired := map[string]*group{}
	var order []string
	for _, subset := range endpoints.RepackSubsets(ep.Subsets) {
		ports := convertPorts(subset.Ports)
		keys := map[discoveryv1.AddressType]string{}
		for _, t := range []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6} {
			k := groupKey(t, ports)
			keys[t] = k
			if _, ok := desired[k]; !ok {
				desired[k] = &group{addressType: t, ports: ports, endpoints: endpointsliceutil.EndpointSet{}}
				order = append(order, k)
			}
		}
		added := 0
		mirror := func(addrs []corev1.EndpointAddress, ready bool) {
			for _, a := range addrs {
				if added >= max {
					return
				}
				e, t, ok := AddressToEndpoint(a, ready)
				if !ok {
					plan.Invalid++
					continue
				}
				desired[keys[t]].endpoints.Insert(&e)
				added++
			}
		}
		mirror(subset.Addresses, true)
		mirror(subset.NotReadyAddresses, false)
		plan.Skipped += len(subset.Addresses) + len(subset.NotReadyAddresses) - added
	}

	existingByKey := map[string][]*discoveryv1.EndpointSlice{}
	for _, s := range existing {
		k := groupKey(s.AddressType, s.Ports)
		existingByKey[k] = append(existingByKey[k], s)
	}
	for k, have := range existingByKey {
		slices.SortFunc(have, func(a, b *discoveryv1.EndpointSlice) int { return strings.Compare(a.Name, b.Name) })
		if _, ok := desired[k]; !ok {
			plan.Delete = append(plan.Delete, have...)
		}
	}
	plan.Groups = map[string]GroupSize{}
	for _, k := range order {
		g, have := desired[k], existingByKey[k]
		size := GroupSize{Endpoints: len(g.endpoints), Slices: 1}
		switch {
		case len(g.endpoints) == 0:
			plan.Delete = append(plan.Delete, have...)
			for _, s := range have {
				plan.Removed += len(s.Endpoints)
			}
			size.Slices = 0
		case len(have) == 0:
			plan.Create = append(plan.Create, newSlice(ep, g, nil))
			plan.Added += len(g.endpoints)
		default:
			plan.Delete = append(plan.Delete, have[1:]...)
			plan.countChanges(have[0], g)
			if !upToDate(ep, have[0], g) {
				plan.Update = append(plan.Update, newSlice(ep, g, have[0]))
			}
		}
		plan.Groups[k] = size
	}
	recycle(&plan)
	return plan
}

// countChanges counts, as upstream, the endpoints of the group missing from the slice it
// keeps (added), the slice's endpoints the group no longer has (removed) and those that
// differ (updated); the endpoints of the slices deleted beside it are not counted.
func (plan *Plan) countChanges(kept *discoveryv1.EndpointSlice, g *group) {
	matches := 0
	for i := range kept.Endpoints {
		want := g.endpoints.Get(&kept.Endpoints[i])
		switch {
		case want == nil:
			plan.Removed++
		case !endpointsliceutil.EndpointsEqualBeyondHash(want, &kept.Endpoints[i]):
			matches++
			plan.Updated++
		default:
			matches++
		}
	}
	plan.Added += len(g.endpoints) - matches
}

// recycle turns a creation and a deletion of the same address type into an update of the
// slice that would have been deleted, as upstream does to save API calls.
func recycle(plan *Plan) {
	var create []*discoveryv1.EndpointSlice
	for _, c := range plan.Create {
		i := slices.IndexFunc(plan.Delete, func(d *discoveryv1.EndpointSlice) bool { return d.AddressType == c.AddressType })
		if i < 0 {
			create = append(create, c)
			continue
		}
		old := plan.Delete[i]
		plan.Delete = slices.Delete(plan.Delete, i, i+1)
		c.GenerateName, c.Name, c.ResourceVersion = "", old.Name, old.ResourceVersion
		plan.Update = append(plan.Update, c)
	}
	plan.Create = create
}

// upToDate reports whether the existing slice already mirrors the group: the same
// endpoints (ignoring targets' resourceVersions), the Endpoints' labels and annotations
// (less the trigger time and kubectl's last-applied configuration), and this Endpoints
// (not a namesake's) as owner.
func upToDate(ep *corev1.Endpoints, s *discoveryv1.EndpointSlice, g *group) bool {
	if len(s.Endpoints) != len(g.endpoints) {
		return false
	}
	for i := range s.Endpoints {
		want := g.endpoints.Get(&s.Endpoints[i])
		if want == nil || !endpointsliceutil.EndpointsEqualBeyondHash(want, &s.Endpoints[i]) {
			return false
		}
	}
	labels := maps.Clone(s.Labels)
	delete(labels, discoveryv1.LabelManagedBy)
	delete(labels, discoveryv1.LabelServiceName)
	if !maps.Equal(labels, ep.Labels) || !maps.Equal(mirroredAnnotations(ep), s.Annotations) {
		return false
	}
	for _, o := range s.OwnerReferences {
		if o.Kind == "Endpoints" && o.Name == ep.Name && o.UID != ep.UID {
			return false
		}
	}
	return true
}

func mirroredAnnotations(ep *corev1.Endpoints) map[string]string {
	a := maps.Clone(ep.Annotations)
	delete(a, corev1.EndpointsLastChangeTriggerTime)
	delete(a, corev1.LastAppliedConfigAnnotation)
	return a
}

// newSlice builds the slice for a group: a new one (generateName) or the whole new content
// of old.
func newSlice(ep *corev1.Endpoints, g *group, old *discoveryv1.EndpointSlice) *discoveryv1.EndpointSlice {
	s := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       ep.Namespace,
			Labels:          maps.Clone(ep.Labels),
			Annotations:     mirroredAnnotations(ep),
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(ep, corev1.SchemeGroupVersion.WithKind("Endpoints"))},
		},
		AddressType: g.addressType,
		Ports:       g.ports,
		Endpoints:   make([]discoveryv1.Endpoint, 0, len(g.endpoints)),
	}
	if s.Labels == nil {
		s.Labels = map[string]string{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	s.Labels[discoveryv1.LabelServiceName] = ep.Name
	s.Labels[discoveryv1.LabelManagedBy] = ManagedBy
	for _, e := range g.endpoints.UnsortedList() {
		s.Endpoints = append(s.Endpoints, *e)
	}
	// In a stable order, so that the same content makes the same object.
	slices.SortFunc(s.Endpoints, func(a, b discoveryv1.Endpoint) int {
		return strings.Compare(strings.Join(a.Addresses, ","), strings.Join(b.Addresses, ","))
	})
	if old != nil {
		s.Name, s.ResourceVersion = old.Name, old.ResourceVersion
	} else {
		s.GenerateName = SlicePrefix(ep.Name)
	}
	return s
}

// SlicePrefix is the generateName of a mirrored slice: "<name>-", or the name alone when
// the dash would make it invalid.
func SlicePrefix(name string) string {
	// As the API's generateName validation, judge the prefix with a letter for the suffix.
	if len(validation.IsDNS1123Subdomain(name+"a")) != 0 {
		return name
	}
	return name + "-"
}

// AddressToEndpoint converts an Endpoints address into a slice endpoint, with its address
// type; ok is false when the address is not an IP.
func AddressToEndpoint(a corev1.EndpointAddress, ready bool) (e discoveryv1.Endpoint, t discoveryv1.AddressType, ok bool) {
	ip := utilnet.ParseIPSloppy(a.IP)
	if ip == nil {
		return e, "", false
	}
	t = discoveryv1.AddressTypeIPv4
	if ip.To4() == nil {
		t = discoveryv1.AddressTypeIPv6
	}
	e = discoveryv1.Endpoint{
		Addresses:  []string{ip.String()},
		Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(ready)},
		TargetRef:  a.TargetRef.DeepCopy(),
	}
	if a.NodeName != nil {
		e.NodeName = ptr.To(*a.NodeName)
	}
	if a.Hostname != "" {
		e.Hostname = ptr.To(a.Hostname)
	}
	return e, t, true
}

func convertPorts(ports []corev1.EndpointPort) []discoveryv1.EndpointPort {
	out := make([]discoveryv1.EndpointPort, 0, len(ports))
	for _, p := range ports {
		out = append(out, discoveryv1.EndpointPort{
			Name:        ptr.To(p.Name),
			Port:        ptr.To(p.Port),
			Protocol:    ptr.To(p.Protocol),
			AppProtocol: p.DeepCopy().AppProtocol,
		})
	}
	return out
}

// groupKey names an address type and a port list, whatever the ports' order, as upstream.
func groupKey(t discoveryv1.AddressType, ports []discoveryv1.EndpointPort) string {
	return fmt.Sprintf("%s-%s", t, endpointsliceutil.NewPortMapKey(ports))
}

// ValidateFlags applies upstream's bounds to the controller's flags: 1 to 50 workers, 1 to
// 1000 addresses per subset, with upstream's messages.
func ValidateFlags(workers, maxPerSubset int) error {
	var errs []error
	switch {
	case workers < 1:
		errs = append(errs, fmt.Errorf("mirroring-concurrent-service-endpoint-syncs must not be less than 1, but got %d", workers))
	case workers > 50:
		errs = append(errs, fmt.Errorf("mirroring-concurrent-service-endpoint-syncs must not be more than 50, but got %d", workers))
	}
	switch {
	case maxPerSubset < 1:
		errs = append(errs, fmt.Errorf("mirroring-max-endpoints-per-subset must not be less than 1, but got %d", maxPerSubset))
	case maxPerSubset > 1000:
		errs = append(errs, fmt.Errorf("mirroring-max-endpoints-per-subset must not be more than 1000, but got %d", maxPerSubset))
	}
	return errors.Join(errs...)
}
