package resourcequota

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
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
	return addResources(out, computeUsage(podRequests(pod), podLimits(pod)))
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

// podLevelResources are the resources a pod may set for the whole pod.
func isPodLevelResource(name corev1.ResourceName) bool {
	return name == corev1.ResourceCPU || name == corev1.ResourceMemory || strings.HasPrefix(string(name), corev1.ResourceHugePagesPrefix)
}

func hasPodLevel(list corev1.ResourceList) bool {
	for name := range list {
		if isPodLevelResource(name) {
			return true
		}
	}
	return false
}

// podRequests is the pod's effective request: containers and sidecars summed, the largest
// init container step if more, resized resources (the most of spec, allocated and actual)
// counted, pod-level requests overriding, and the pod overhead added.
func podRequests(pod *corev1.Pod) corev1.ResourceList {
	infeasible := resizeInfeasible(pod)
	spec := aggregate(pod, func(c *corev1.Container, _ *corev1.ContainerStatus) corev1.ResourceList { return c.Resources.Requests })
	allocated := aggregate(pod, func(c *corev1.Container, cs *corev1.ContainerStatus) corev1.ResourceList {
		if cs != nil && cs.AllocatedResources != nil {
			return cs.AllocatedResources
		}
		if infeasible {
			return nil
		}
		return c.Resources.Requests
	})
	actual := aggregate(pod, func(c *corev1.Container, cs *corev1.ContainerStatus) corev1.ResourceList {
		switch {
		case cs != nil && cs.Resources != nil && cs.Resources.Requests != nil:
			return cs.Resources.Requests
		case cs != nil && cs.AllocatedResources != nil:
			return cs.AllocatedResources
		case infeasible:
			return nil
		}
		return c.Resources.Requests
	})
	var out corev1.ResourceList
	if infeasible {
		out = maxResources(actual, allocated)
	} else {
		out = maxResources(spec, actual, allocated)
	}
	if pod.Spec.Resources != nil && hasPodLevel(pod.Spec.Resources.Requests) {
		for name, q := range pod.Spec.Resources.Requests {
			if isPodLevelResource(name) {
				out[name] = q
			}
		}
	}
	return addResources(out, pod.Spec.Overhead)
}

// podLimits is the pod's effective limit, as podRequests; the overhead is only added to
// limits that are set.
func podLimits(pod *corev1.Pod) corev1.ResourceList {
	infeasible := resizeInfeasible(pod)
	spec := aggregate(pod, func(c *corev1.Container, _ *corev1.ContainerStatus) corev1.ResourceList { return c.Resources.Limits })
	actual := aggregate(pod, func(c *corev1.Container, cs *corev1.ContainerStatus) corev1.ResourceList {
		if cs != nil && cs.Resources != nil && cs.Resources.Limits != nil {
			return cs.Resources.Limits
		}
		if infeasible {
			return nil
		}
		return c.Resources.Limits
	})
	out := actual
	if !infeasible {
		out = maxResources(spec, actual)
	}
	if pod.Spec.Resources != nil && (hasPodLevel(pod.Spec.Resources.Requests) || hasPodLevel(pod.Spec.Resources.Limits)) {
		for name, q := range pod.Spec.Resources.Limits {
			if isPodLevelResource(name) {
				out[name] = q
			}
		}
	}
	for name, q := range pod.Spec.Overhead {
		if v, ok := out[name]; ok && !v.IsZero() {
			v.Add(q)
			out[name] = v
		}
	}
	return out
}

// aggregate sums what of returns for the pod's containers and sidecars (restartable init
// containers), and takes the larger of that and each init container's step (the init
// container with the sidecars started before it).
func aggregate(pod *corev1.Pod, of func(*corev1.Container, *corev1.ContainerStatus) corev1.ResourceList) corev1.ResourceList {
	sum := corev1.ResourceList{}
	for i := range pod.Spec.Containers {
		c := &pod.Spec.Containers[i]
		sum = addResources(sum, of(c, containerStatus(pod.Status.ContainerStatuses, c.Name)))
	}
	sidecars, initMax := corev1.ResourceList{}, corev1.ResourceList{}
	for i := range pod.Spec.InitContainers {
		c := &pod.Spec.InitContainers[i]
		r := of(c, containerStatus(pod.Status.InitContainerStatuses, c.Name))
		var step corev1.ResourceList
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sum = addResources(sum, r)
			sidecars = addResources(sidecars, r)
			step = sidecars
		} else {
			step = addResources(addResources(corev1.ResourceList{}, r), sidecars)
		}
		initMax = maxResources(initMax, step)
	}
	return maxResources(sum, initMax)
}

func containerStatus(statuses []corev1.ContainerStatus, name string) *corev1.ContainerStatus {
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}

// resizeInfeasible reports whether the kubelet found the pod's pending resize infeasible:
// then the spec does not count, only what was allocated.
func resizeInfeasible(pod *corev1.Pod) bool {
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodResizePending {
			return c.Reason == corev1.PodReasonInfeasible
		}
	}
	return false
}

// bestEffort reports whether the pod is of the BestEffort QoS class: no container (nor the
// pod) requests or limits cpu or memory.
func bestEffort(pod *corev1.Pod) bool {
	if pod.Status.QOSClass != "" {
		return pod.Status.QOSClass == corev1.PodQOSBestEffort
	}
	if r := pod.Spec.Resources; r != nil && (hasPodLevel(r.Requests) || hasPodLevel(r.Limits)) {
		return !setsCompute(r)
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
			if c := containerStatus(curs, olds[i].Name); c != nil && !equality.Semantic.DeepEqual(olds[i].Resources, c.Resources) {
				return true
			}
		}
		return false
	}
	return changed(old.Status.ContainerStatuses, cur.Status.ContainerStatuses) ||
		changed(old.Status.InitContainerStatuses, cur.Status.InitContainerStatuses)
}
