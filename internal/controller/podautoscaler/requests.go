package podautoscaler

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	resourcehelpers "k8s.io/component-helpers/resource"
)

// podRequests is each pod's request of resource (milli-units) that its
// utilization is measured against, as upstream's calculateRequests: the
// named container's, or the pod-level request when the pod sets one (and
// podLevelResources, the PodLevelResources gate, is on), or the sum of its
// containers' and restartable init containers' requests.
func podRequests(pods []corev1.Pod, container string, resource corev1.ResourceName, podLevelResources bool) (map[string]int64, error) {
	requests := make(map[string]int64, len(pods))
	for i := range pods {
		p := &pods[i]
		var (
			request int64
			err     error
		)
		// A container named in the HPA takes precedence over pod-level requests.
		if podLevelResources && container == "" && resourcehelpers.IsPodLevelRequestsSet(p) {
			request, err = podLevelRequest(p, resource)
		} else {
			request, err = containersRequest(p, container, resource)
		}
		if err != nil {
			return nil, err
		}
		requests[p.Name] = request
	}
	return requests, nil
}

// podLevelRequest is the pod's effective request of resource with pod-level
// resources set (overhead included, as upstream asks component-helpers).
func podLevelRequest(p *corev1.Pod, resource corev1.ResourceName) (int64, error) {
	q, ok := resourcehelpers.PodRequests(p, resourcehelpers.PodResourcesOptions{})[resource]
	if !ok {
		return 0, fmt.Errorf("missing pod-level request for %s in Pod %s", resource, p.Name)
	}
	return q.MilliValue(), nil
}

// containersRequest sums the containers' requests of resource (sidecars,
// the init containers that keep running, included), or takes the named
// container's alone. Every container counted must request resource: a
// utilization against part of the pod's requests would overstate it.
func containersRequest(p *corev1.Pod, container string, resource corev1.ResourceName) (int64, error) {
	containers := append([]corev1.Container{}, p.Spec.Containers...)
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			containers = append(containers, c)
		}
	}
	total := int64(0)
	for _, c := range containers {
		if container != "" && c.Name != container {
			continue
		}
		q, ok := c.Resources.Requests[resource]
		if !ok {
			return 0, fmt.Errorf("missing request for %s in container %s of Pod %s", resource, c.Name, p.Name)
		}
		if container != "" {
			return q.MilliValue(), nil
		}
		total += q.MilliValue()
	}
	if container != "" {
		return 0, fmt.Errorf("container %s not found in Pod %s", container, p.Name)
	}
	return total, nil
}
