package resourcequota

import (
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	quota "k8s.io/apiserver/pkg/quota/v1"
	resourcehelper "k8s.io/component-helpers/resource"
)

// podCharged reports whether a pod's compute resources are charged to quota at now, and
// until when: pods in a terminal phase are not, nor are pods whose deletion grace period
// has passed (stuck terminating, e.g. on a lost node) so that they do not keep their owners
// from replacing them. until is zero when nothing but an event can change the answer.
func podCharged(pod *corev1.Pod, now time.Time) (charged bool, until time.Time) {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return false, time.Time{}
	}
	if pod.DeletionTimestamp != nil && pod.DeletionGracePeriodSeconds != nil {
		end := pod.DeletionTimestamp.Add(time.Duration(*pod.DeletionGracePeriodSeconds) * time.Second)
		if now.After(end) {
			return false, time.Time{}
		}
		return true, end
	}
	return true, time.Time{}
}

// podUsage is what a pod is charged: count/pods always (object counts track every stored
// object), and while the pod is charged, "pods" and its requests and limits.
func podUsage(pod *corev1.Pod, now time.Time) corev1.ResourceList {
	out := corev1.ResourceList{countName(podsGR): *resource.NewQuantity(1, resource.DecimalSI)}
	if charged, _ := podCharged(pod, now); !charged {
		return out
	}
	return quota.Add(out, computeUsage(resourcehelper.PodRequests(pod, podResourcesOptions), resourcehelper.PodLimits(pod, podResourcesOptions)))
}

// computeUsage turns a pod's requests and limits into quota resources.
func computeUsage(requests, limits corev1.ResourceList) corev1.ResourceList {
	out := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}
	for _, r := range []struct{ name, request, limit corev1.ResourceName }{
		{corev1.ResourceCPU, corev1.ResourceRequestsCPU, corev1.ResourceLimitsCPU},
		{corev1.ResourceMemory, corev1.ResourceRequestsMemory, corev1.ResourceLimitsMemory},
		{corev1.ResourceEphemeralStorage, corev1.ResourceRequestsEphemeralStorage, corev1.ResourceLimitsEphemeralStorage},
	} {
		if q, ok := requests[r.name]; ok {
			out[r.name] = q
			out[r.request] = q
		}
		if q, ok := limits[r.name]; ok {
			out[r.limit] = q
		}
	}
	for name, q := range requests {
		switch {
		case strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix):
			out[name] = q
			out[corev1.DefaultResourceRequestsPrefix+name] = q
		case isExtendedResource(name):
			// Extended resources cannot be overcommitted: only requests.<name> is quota'd.
			out[corev1.DefaultResourceRequestsPrefix+name] = q
		}
	}
	return out
}

// podResourcesOptions are upstream's options for a pod's effective requests and limits:
// resized resources count (InPlacePodVerticalScaling is GA), and pod-level resources
// override the containers' (PodLevelResources, beta and on by default). The overhead is
// included.
var podResourcesOptions = resourcehelper.PodResourcesOptions{UseStatusResources: true}

// bestEffort reports whether the pod is of the BestEffort QoS class: no container (nor the
// pod) requests or limits cpu or memory.
func bestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	if resourcehelper.IsPodLevelResourcesSet(pod) {
		return !setsCompute(pod.Spec.Resources)
	}
	for _, cs := range [][]corev1.Container{pod.Spec.InitContainers, pod.Spec.Containers} {
		for i := range cs {
			if setsCompute(&cs[i].Resources) {
				return false
			}
		}
	}
	return true
}

// setsCompute reports whether requirements request or limit a non-zero cpu or memory.
func setsCompute(r *corev1.ResourceRequirements) bool {
	for _, name := range []corev1.ResourceName{corev1.ResourceCPU, corev1.ResourceMemory} {
		req, lim := r.Requests[name], r.Limits[name]
		if !req.IsZero() || !lim.IsZero() {
			return true
		}
	}
	return false
}

// terminatingScope reports whether the pod is in the Terminating quota scope: it has an
// active deadline.
func terminatingScope(pod *corev1.Pod) bool {
	return pod.Spec.ActiveDeadlineSeconds != nil && *pod.Spec.ActiveDeadlineSeconds >= 0
}

// podMatchesScope reports whether a pod is in a quota scope.
func podMatchesScope(sel corev1.ScopedResourceSelectorRequirement, pod *corev1.Pod) (bool, error) {
	switch sel.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminatingScope(pod), nil
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminatingScope(pod), nil
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod), nil
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod), nil
	case corev1.ResourceQuotaScopePriorityClass:
		if sel.Operator == corev1.ScopeSelectorOpExists {
			return pod.Spec.PriorityClassName != "", nil
		}
		var values []string
		if pod.Spec.PriorityClassName != "" {
			values = []string{pod.Spec.PriorityClassName}
		}
		return selectorMatches(sel, values)
	case corev1.ResourceQuotaScopeCrossNamespacePodAffinity:
		return crossNamespaceAffinity(pod), nil
	}
	return false, nil
}

func crossNamespaceAffinity(pod *corev1.Pod) bool {
	a := pod.Spec.Affinity
	if a == nil {
		return false
	}
	cross := func(t *corev1.PodAffinityTerm) bool { return len(t.Namespaces) != 0 || t.NamespaceSelector != nil }
	var terms []*corev1.PodAffinityTerm
	if a.PodAffinity != nil {
		for i := range a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	if a.PodAntiAffinity != nil {
		for i := range a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.RequiredDuringSchedulingIgnoredDuringExecution[i])
		}
		for i := range a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution {
			terms = append(terms, &a.PodAntiAffinity.PreferredDuringSchedulingIgnoredDuringExecution[i].PodAffinityTerm)
		}
	}
	for _, t := range terms {
		if cross(t) {
			return true
		}
	}
	return false
}

// podUpdateMatters reports whether a pod's update can change what it is charged, as
// upstream's replenishment filter: its resized resources, its Terminating scope, or its
// leaving quota (terminal phase). Creations are charged by the API server's admission.
// Unlike upstream, the start of a graceful deletion matters too: the recount learns when
// the pod's charge ends and comes back then, where upstream waits for the periodic resync.
func podUpdateMatters(old, cur *corev1.Pod, now time.Time) bool {
	if resourcesResized(old, cur) || terminatingScope(old) != terminatingScope(cur) {
		return true
	}
	if old.DeletionTimestamp == nil && cur.DeletionTimestamp != nil {
		return true
	}
	wasCharged, _ := podCharged(old, now)
	isCharged, _ := podCharged(cur, now)
	return wasCharged && !isCharged
}

func resourcesResized(old, cur *corev1.Pod) bool {
	changed := func(olds, curs []corev1.ContainerStatus) bool {
		for i := range olds {
			j := slices.IndexFunc(curs, func(c corev1.ContainerStatus) bool { return c.Name == olds[i].Name })
			if j >= 0 && !equality.Semantic.DeepEqual(olds[i].Resources, curs[j].Resources) {
				return true
			}
		}
		return false
	}
	return changed(old.Status.ContainerStatuses, cur.Status.ContainerStatuses) ||
		changed(old.Status.InitContainerStatuses, cur.Status.InitContainerStatuses)
}
