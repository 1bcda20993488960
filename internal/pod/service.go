package pod

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// InEndpoints is upstream's ShouldPodBeInEndpoints, shared by the endpoints and
// endpointslice controllers: a pod is an endpoint once it has an IP and until it finishes; a
// terminating pod only when includeTerminating (EndpointSlices keep it, marked terminating;
// v1 Endpoints only for Services that publish not-ready addresses).
func InEndpoints(p *corev1.Pod, includeTerminating bool) bool {
	if IsTerminal(p) {
		return false
	}
	if p.Status.PodIP == "" && len(p.Status.PodIPs) == 0 {
		return false
	}
	return includeTerminating || p.DeletionTimestamp == nil
}

// FindPort is upstream's podutil.FindPort: a Service port's numeric targetPort as is, a
// named one from the ports of the pod's containers, then of its sidecars (init containers
// that always restart), matching the Service port's protocol.
func FindPort(p *corev1.Pod, svcPort *corev1.ServicePort) (int32, error) {
	target := svcPort.TargetPort
	if target.Type == intstr.Int {
		return int32(target.IntValue()), nil
	}
	for _, c := range p.Spec.Containers {
		if port, ok := namedPort(c, target.StrVal, svcPort.Protocol); ok {
			return port, nil
		}
	}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy == nil || *c.RestartPolicy != corev1.ContainerRestartPolicyAlways {
			continue
		}
		if port, ok := namedPort(c, target.StrVal, svcPort.Protocol); ok {
			return port, nil
		}
	}
	return 0, fmt.Errorf("no suitable port for manifest: %s", p.UID)
}

func namedPort(c corev1.Container, name string, protocol corev1.Protocol) (int32, bool) {
	for _, cp := range c.Ports {
		if cp.Name == name && cp.Protocol == protocol {
			return cp.ContainerPort, true
		}
	}
	return 0, false
}
