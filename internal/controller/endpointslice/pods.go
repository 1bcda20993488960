package endpointslice

import (
	"reflect"

	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/pod"
)

// podChanged is upstream's podEndpointsChanged: endpoint reports a change to the pod's
// endpoint (deletion, readiness, IPs); membership a change to which Services select it or
// how (labels, hostname, subdomain).
func podChanged(oldPod, newPod *corev1.Pod) (endpoint, membership bool) {
	membership = !reflect.DeepEqual(oldPod.Labels, newPod.Labels) ||
		oldPod.Spec.Hostname != newPod.Spec.Hostname || oldPod.Spec.Subdomain != newPod.Spec.Subdomain
	// Upstream compares the deletionTimestamp pointers of two decoded objects: any update
	// of a pod being deleted counts.
	if oldPod.DeletionTimestamp != nil || newPod.DeletionTimestamp != nil {
		return true, membership
	}
	if pod.IsReady(oldPod) != pod.IsReady(newPod) {
		return true, membership
	}
	if len(oldPod.Status.PodIPs) != len(newPod.Status.PodIPs) {
		return true, membership
	}
	for i := range oldPod.Status.PodIPs {
		if oldPod.Status.PodIPs[i].IP != newPod.Status.PodIPs[i].IP {
			return true, membership
		}
	}
	return false, membership
}

// servicesToSync are the Services a pod whose labels changed affects: all those selecting it
// before or after when its endpoint changed too, else those it joined or left.
func servicesToSync(before, after map[string]bool, endpointChanged bool) map[string]bool {
	out := map[string]bool{}
	for name := range after {
		if endpointChanged || !before[name] {
			out[name] = true
		}
	}
	for name := range before {
		if endpointChanged || !after[name] {
			out[name] = true
		}
	}
	return out
}
