package endpoints

import (
	"maps"
	"math"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/conversion"
	"k8s.io/endpointslice"
	endpointsliceutil "k8s.io/endpointslice/util"
	utilnet "k8s.io/utils/net"

	"github.com/kcm/kcm/internal/pod"
)

const (
	// MaxCapacity is how many addresses an Endpoints holds at most; past it the controller
	// truncates and says so in the over-capacity annotation.
	MaxCapacity = 1000
	// Truncated is the over-capacity annotation's value on a truncated Endpoints.
	Truncated = "truncated"
	// LabelManagedBy marks the Endpoints this controller manages.
	LabelManagedBy = "endpoints.kubernetes.io/managed-by"
	// ManagedByValue is LabelManagedBy's value: upstream's client name.
	ManagedByValue = "endpoint-controller"
)

// podAddress is the pod's address for the Service: its IP of the Service's (first) family,
// or false when the pod has none.
func podAddress(svc *corev1.Service, p *corev1.Pod) (corev1.EndpointAddress, bool) {
	// IPFamilies is defaulted by the API server; fall back on the cluster IP, then the pod IP.
	wantIPv6 := false
	switch {
	case len(svc.Spec.IPFamilies) > 0:
		wantIPv6 = svc.Spec.IPFamilies[0] == corev1.IPv6Protocol
	case svc.Spec.ClusterIP != "" && svc.Spec.ClusterIP != corev1.ClusterIPNone:
		wantIPv6 = utilnet.IsIPv6String(svc.Spec.ClusterIP)
	default:
		wantIPv6 = utilnet.IsIPv6String(p.Status.PodIP)
	}
	for _, podIP := range p.Status.PodIPs {
		ip := utilnet.ParseIPSloppy(podIP.IP)
		if ip != nil && utilnet.IsIPv6(ip) == wantIPv6 {
			addr := corev1.EndpointAddress{
				IP:        ip.String(),
				TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
			}
			// Upstream always sets it; an empty node name would fail validation.
			if p.Spec.NodeName != "" {
				addr.NodeName = &p.Spec.NodeName
			}
			if endpointsliceutil.ShouldSetHostname(p, svc) {
				addr.Hostname = p.Spec.Hostname
			}
			return addr, true
		}
	}
	return corev1.EndpointAddress{}, false
}

// DesiredSubsets computes the Service's repacked subsets from its pods: every pod with an
// IP of the Service's family, ready or (not ready and not published) in notReadyAddresses,
// once per Service port its targetPort resolves on; a headless Service without ports gets
// port-less addresses.
func DesiredSubsets(svc *corev1.Service, pods []*corev1.Pod) []corev1.EndpointSubset {
	publish := svc.Spec.PublishNotReadyAddresses
	var subsets []corev1.EndpointSubset
	add := func(p *corev1.Pod, addr corev1.EndpointAddress, ports []corev1.EndpointPort) {
		if publish || pod.IsReady(p) {
			subsets = append(subsets, corev1.EndpointSubset{Addresses: []corev1.EndpointAddress{addr}, Ports: ports})
		} else {
			subsets = append(subsets, corev1.EndpointSubset{NotReadyAddresses: []corev1.EndpointAddress{addr}, Ports: ports})
		}
	}
	for _, p := range pods {
		if !endpointsliceutil.ShouldPodBeInEndpoints(p, publish) {
			continue
		}
		addr, ok := podAddress(svc, p)
		if !ok {
			continue
		}
		if len(svc.Spec.Ports) == 0 {
			if svc.Spec.ClusterIP == corev1.ClusterIPNone {
				add(p, addr, nil)
			}
			continue
		}
		for i := range svc.Spec.Ports {
			sp := &svc.Spec.Ports[i]
			num, err := endpointslice.FindPort(p, sp)
			if err != nil {
				continue
			}
			add(p, addr, []corev1.EndpointPort{{Name: sp.Name, Port: int32(num), Protocol: sp.Protocol, AppProtocol: sp.AppProtocol}})
		}
	}
	return RepackSubsets(subsets)
}

// Truncate caps subsets at max addresses in total, as upstream: ready addresses are kept
// before not-ready ones, and the addresses kept of the kind being cut are shared among the
// subsets in proportion to their sizes (rounded up, so the last subsets may get fewer). It
// returns the subsets left (a subset left without addresses is dropped: the API rejects it)
// and whether it cut anything. Subsets are changed in place.
func Truncate(subsets []corev1.EndpointSubset, max int) ([]corev1.EndpointSubset, bool) {
	ready, notReady := 0, 0
	for _, s := range subsets {
		ready += len(s.Addresses)
		notReady += len(s.NotReadyAddresses)
	}
	if ready+notReady <= max {
		return subsets, false
	}
	cutReady := ready > max
	room, total := max-ready, notReady
	if cutReady {
		room, total = max, ready
	}
	left := room
	for i := range subsets {
		s := &subsets[i]
		n := len(s.NotReadyAddresses)
		if cutReady {
			n = len(s.Addresses)
		}
		share := min(int(math.Ceil(float64(n)/float64(total)*float64(room))), left)
		if cutReady {
			s.Addresses = s.Addresses[:min(share, len(s.Addresses))]
			s.NotReadyAddresses = []corev1.EndpointAddress{}
			left -= len(s.Addresses)
		} else {
			s.NotReadyAddresses = s.NotReadyAddresses[:min(share, len(s.NotReadyAddresses))]
			left -= len(s.NotReadyAddresses)
		}
	}
	return slices.DeleteFunc(subsets, func(s corev1.EndpointSubset) bool {
		return len(s.Addresses) == 0 && len(s.NotReadyAddresses) == 0
	}), true
}

// DesiredLabels are the Service's labels, the headless label for a Service without a
// cluster IP, and the managed-by label.
func DesiredLabels(svc *corev1.Service) map[string]string {
	l := maps.Clone(svc.Labels)
	if l == nil {
		l = map[string]string{}
	}
	delete(l, corev1.IsHeadlessService)
	if svc.Spec.ClusterIP == corev1.ClusterIPNone || svc.Spec.ClusterIP == "" {
		l[corev1.IsHeadlessService] = ""
	}
	l[LabelManagedBy] = ManagedByValue
	return l
}

// Desired builds the Endpoints to write from the current one (nil when there is none): the
// subsets (truncated past MaxCapacity with the over-capacity annotation), the labels, and
// the trigger-time annotation (removed when triggerTime is zero); other annotations stay.
func Desired(current *corev1.Endpoints, svc *corev1.Service, subsets []corev1.EndpointSubset, triggerTime time.Time) *corev1.Endpoints {
	ep := &corev1.Endpoints{}
	if current != nil {
		ep = current.DeepCopy()
	}
	ep.Namespace, ep.Name = svc.Namespace, svc.Name
	ep.Subsets = subsets
	ep.Labels = DesiredLabels(svc)
	if ep.Annotations == nil {
		ep.Annotations = map[string]string{}
	}
	if triggerTime.IsZero() {
		delete(ep.Annotations, corev1.EndpointsLastChangeTriggerTime)
	} else {
		ep.Annotations[corev1.EndpointsLastChangeTriggerTime] = triggerTime.UTC().Format(time.RFC3339Nano)
	}
	var truncated bool
	if ep.Subsets, truncated = Truncate(ep.Subsets, MaxCapacity); truncated {
		ep.Annotations[corev1.EndpointsOverCapacity] = Truncated
	} else {
		delete(ep.Annotations, corev1.EndpointsOverCapacity)
	}
	return ep
}

// UpToDate reports whether current already says what desired says: the same subsets (in
// any packing, ignoring the targets' resourceVersions), labels and over-capacity
// annotation. The trigger time alone never causes a write, as upstream.
func UpToDate(current, desired *corev1.Endpoints) bool {
	sameSubsets := subsetsEqual(current.Subsets, desired.Subsets) ||
		subsetsEqual(RepackSubsets(current.Subsets), desired.Subsets)
	return sameSubsets &&
		maps.Equal(current.Labels, desired.Labels) &&
		current.Annotations[corev1.EndpointsOverCapacity] == desired.Annotations[corev1.EndpointsOverCapacity]
}

// semanticIgnoringResourceVersion compares object references without their
// resourceVersion, which changes with every pod update that moves nothing.
var semanticIgnoringResourceVersion = conversion.EqualitiesOrDie(
	func(a, b corev1.ObjectReference) bool {
		a.ResourceVersion, b.ResourceVersion = "", ""
		return a == b
	},
)

func subsetsEqual(a, b []corev1.EndpointSubset) bool {
	return semanticIgnoringResourceVersion.DeepEqual(a, b)
}
