package endpointslice

import (
	"net"
	"reflect"
	"slices"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	utilnet "k8s.io/utils/net"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/pod"
)

// podToEndpoint is the endpoint a pod makes for one address type. Ready follows the pod's
// Ready condition but is never true while the pod terminates, unless the Service publishes
// not-ready addresses; serving is the bare Ready condition.
func podToEndpoint(p *corev1.Pod, node *corev1.Node, svc *corev1.Service, addressType discoveryv1.AddressType) discoveryv1.Endpoint {
	serving := pod.IsReady(p)
	terminating := p.DeletionTimestamp != nil
	ready := svc.Spec.PublishNotReadyAddresses || (serving && !terminating)
	ep := discoveryv1.Endpoint{
		Addresses: podAddresses(p.Status, addressType),
		Conditions: discoveryv1.EndpointConditions{
			Ready:       &ready,
			Serving:     &serving,
			Terminating: &terminating,
		},
		TargetRef: &corev1.ObjectReference{Kind: "Pod", Namespace: p.Namespace, Name: p.Name, UID: p.UID},
	}
	if p.Spec.NodeName != "" {
		ep.NodeName = ptr.To(p.Spec.NodeName)
	}
	if node != nil && node.Labels[corev1.LabelTopologyZone] != "" {
		ep.Zone = ptr.To(node.Labels[corev1.LabelTopologyZone])
	}
	if p.Spec.Hostname != "" && p.Spec.Subdomain == svc.Name && p.Namespace == svc.Namespace {
		ep.Hostname = ptr.To(p.Spec.Hostname)
	}
	return ep
}

// podAddresses are the pod's IPs of one family, in canonical form.
func podAddresses(status corev1.PodStatus, addressType discoveryv1.AddressType) []string {
	addresses := []string{}
	for _, podIP := range status.PodIPs {
		ip := utilnet.ParseIPSloppy(podIP.IP)
		if ip == nil {
			continue
		}
		if AddressTypeOf(ip) == addressType {
			addresses = append(addresses, ip.String())
		}
	}
	return addresses
}

// AddressTypeOf is the EndpointSlice address type of an IP.
func AddressTypeOf(ip net.IP) discoveryv1.AddressType {
	if utilnet.IsIPv6(ip) {
		return discoveryv1.AddressTypeIPv6
	}
	return discoveryv1.AddressTypeIPv4
}

// endpointPorts resolves the Service's ports against one pod: a named targetPort is looked
// up in the pod's containers (and sidecars), so pods may resolve it differently; a port the
// pod does not have is left out. A headless Service may have no ports at all.
func endpointPorts(svc *corev1.Service, p *corev1.Pod) []discoveryv1.EndpointPort {
	ports := []discoveryv1.EndpointPort{}
	if len(svc.Spec.Ports) == 0 && svc.Spec.ClusterIP == corev1.ClusterIPNone {
		return ports
	}
	for i := range svc.Spec.Ports {
		sp := &svc.Spec.Ports[i]
		num, err := pod.FindPort(p, sp)
		if err != nil {
			continue
		}
		ports = append(ports, discoveryv1.EndpointPort{
			Name:        ptr.To(sp.Name),
			Port:        ptr.To(num),
			Protocol:    ptr.To(sp.Protocol),
			AppProtocol: sp.AppProtocol,
		})
	}
	return ports
}

// portsKey identifies a set of endpoint ports whatever their order: endpoints with the same
// ports share slices.
func portsKey(ports []discoveryv1.EndpointPort) string {
	parts := make([]string, 0, len(ports))
	for _, p := range ports {
		parts = append(parts, strings.Join([]string{
			strPtr(p.Name), strPtr((*string)(p.Protocol)), int32Ptr(p.Port), strPtr(p.AppProtocol),
		}, "\x00"))
	}
	slices.Sort(parts)
	return strings.Join(parts, "\x01")
}

// endpointKey is an endpoint's identity (upstream's endpoint hash): addresses, hostname and
// target pod. Any other difference is a change to the same endpoint.
func endpointKey(ep *discoveryv1.Endpoint) string {
	addrs := slices.Clone(ep.Addresses)
	slices.Sort(addrs)
	var ns, name string
	if ep.TargetRef != nil {
		ns, name = ep.TargetRef.Namespace, ep.TargetRef.Name
	}
	return strings.Join(addrs, ",") + "\x00" + strPtr(ep.Hostname) + "\x00" + ns + "\x00" + name
}

// endpointChanged compares what endpointKey leaves out and the controller writes: node,
// zone, conditions and target (its resourceVersion aside). Hints are reconciled separately.
func endpointChanged(a, b *discoveryv1.Endpoint) bool {
	if !reflect.DeepEqual(a.NodeName, b.NodeName) || !reflect.DeepEqual(a.Zone, b.Zone) ||
		!reflect.DeepEqual(a.Conditions, b.Conditions) {
		return true
	}
	if (a.TargetRef == nil) != (b.TargetRef == nil) {
		return true
	}
	if a.TargetRef == nil {
		return false
	}
	ra, rb := *a.TargetRef, *b.TargetRef
	ra.ResourceVersion, rb.ResourceVersion = "", ""
	return ra != rb
}

func strPtr(s *string) string {
	if s == nil {
		return "<nil>"
	}
	return *s
}

func int32Ptr(i *int32) string {
	if i == nil {
		return "<nil>"
	}
	return strconv.Itoa(int(*i))
}

// addressTypes are the address types the Service's slices carry: its ipFamilies. Without
// them (an API server too old to default them), the family of the cluster IP, or both
// families for a headless Service, as upstream.
func addressTypes(svc *corev1.Service) []discoveryv1.AddressType {
	var types []discoveryv1.AddressType
	for _, f := range svc.Spec.IPFamilies {
		switch f {
		case corev1.IPv4Protocol:
			types = appendOnce(types, discoveryv1.AddressTypeIPv4)
		case corev1.IPv6Protocol:
			types = appendOnce(types, discoveryv1.AddressTypeIPv6)
		}
	}
	if len(types) > 0 {
		return types
	}
	if serviceIPSet(svc) {
		if utilnet.IsIPv6String(svc.Spec.ClusterIP) {
			return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv6}
		}
		return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4}
	}
	return []discoveryv1.AddressType{discoveryv1.AddressTypeIPv4, discoveryv1.AddressTypeIPv6}
}

func appendOnce(types []discoveryv1.AddressType, t discoveryv1.AddressType) []discoveryv1.AddressType {
	if slices.Contains(types, t) {
		return types
	}
	return append(types, t)
}

func serviceIPSet(svc *corev1.Service) bool {
	return svc.Spec.ClusterIP != corev1.ClusterIPNone && svc.Spec.ClusterIP != ""
}

// reservedLabel reports the labels the controller owns on a slice, never copied from the
// Service.
func reservedLabel(key string) bool {
	return key == discoveryv1.LabelServiceName || key == discoveryv1.LabelManagedBy || key == corev1.IsHeadlessService
}

// sliceLabels are the labels a slice of the Service should carry: the Service's own labels
// (reserved keys aside), the headless marker when it has no cluster IP, the service name and
// managed-by. changed reports whether the copied Service labels differ from the slice's; as
// upstream, a change of the reserved labels alone does not make a slice worth rewriting.
func sliceLabels(slice *discoveryv1.EndpointSlice, svc *corev1.Service) (labels map[string]string, changed bool) {
	have, want := map[string]string{}, map[string]string{}
	for k, v := range slice.Labels {
		if !reservedLabel(k) {
			have[k] = v
		}
	}
	for k, v := range svc.Labels {
		if !reservedLabel(k) {
			want[k] = v
		}
	}
	changed = !reflect.DeepEqual(have, want)
	if !serviceIPSet(svc) {
		want[corev1.IsHeadlessService] = ""
	}
	want[discoveryv1.LabelServiceName] = svc.Name
	want[discoveryv1.LabelManagedBy] = ManagedBy
	return want, changed
}
