package resourcequota

import (
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
)

// serviceUsage is what a service is charged: itself, its node ports, and a load balancer.
func serviceUsage(svc *corev1.Service) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{
		countName(servicesGR):                one,
		corev1.ResourceServices:              one,
		corev1.ResourceServicesLoadBalancers: {Format: resource.DecimalSI},
		corev1.ResourceServicesNodePorts:     {Format: resource.DecimalSI},
	}
	ports := int64(len(svc.Spec.Ports))
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort:
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
	case corev1.ServiceTypeLoadBalancer:
		if svc.Spec.AllocateLoadBalancerNodePorts != nil && !*svc.Spec.AllocateLoadBalancerNodePorts {
			// Only the ports given a node port explicitly have one.
			ports = 0
			for _, p := range svc.Spec.Ports {
				if p.NodePort != 0 {
					ports++
				}
			}
		}
		out[corev1.ResourceServicesNodePorts] = *resource.NewQuantity(ports, resource.DecimalSI)
		out[corev1.ResourceServicesLoadBalancers] = one
	}
	return out
}

// quotaServiceType is the service type as far as quota cares.
func quotaServiceType(svc *corev1.Service) corev1.ServiceType {
	switch svc.Spec.Type {
	case corev1.ServiceTypeNodePort, corev1.ServiceTypeLoadBalancer:
		return svc.Spec.Type
	}
	return ""
}

// serviceUpdateMatters reports whether a service's update changes what quota charges it
// beyond what admission charged: its type.
func serviceUpdateMatters(old, cur *corev1.Service) bool {
	return quotaServiceType(old) != quotaServiceType(cur)
}

// pvcStorage is the storage a claim is charged: its request rounded up to a whole byte,
// or what was allocated when an expansion allocated more.
func pvcStorage(pvc *corev1.PersistentVolumeClaim) *resource.Quantity {
	roundUp := func(q resource.Quantity) *resource.Quantity {
		q = q.DeepCopy()
		q.RoundUp(0)
		return &q
	}
	req, ok := pvc.Spec.Resources.Requests[corev1.ResourceStorage]
	if !ok {
		return nil
	}
	out := roundUp(req)
	if alloc, ok := pvc.Status.AllocatedResources[corev1.ResourceStorage]; ok && alloc.Cmp(*out) > 0 {
		out = roundUp(alloc)
	}
	return out
}

// pvcUsage is what a claim is charged, in total and for its storage class.
func pvcUsage(pvc *corev1.PersistentVolumeClaim) corev1.ResourceList {
	one := *resource.NewQuantity(1, resource.DecimalSI)
	out := corev1.ResourceList{
		countName(pvcsGR):                     one,
		corev1.ResourcePersistentVolumeClaims: one,
	}
	class := storagehelpers.GetPersistentVolumeClaimClass(pvc)
	if class != "" {
		out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims))] = one
	}
	if storage := pvcStorage(pvc); storage != nil {
		out[corev1.ResourceRequestsStorage] = *storage
		if class != "" {
			out[corev1.ResourceName(class+storageClassSuffix+string(corev1.ResourceRequestsStorage))] = *storage
		}
	}
	return out
}

// volumeAttributesClasses are the classes a claim refers to: asked for, current, and the
// target of a modification in progress.
func volumeAttributesClasses(pvc *corev1.PersistentVolumeClaim) []string {
	var out []string
	for _, n := range []string{
		ptr.Deref(pvc.Spec.VolumeAttributesClassName, ""),
		ptr.Deref(pvc.Status.CurrentVolumeAttributesClassName, ""),
	} {
		if n != "" {
			out = append(out, n)
		}
	}
	if m := pvc.Status.ModifyVolumeStatus; m != nil && m.TargetVolumeAttributesClassName != "" {
		out = append(out, m.TargetVolumeAttributesClassName)
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// pvcMatchesScope reports whether a claim is in a quota scope: only VolumeAttributesClass
// applies to claims; a claim matches when any of its classes does.
func pvcMatchesScope(sel corev1.ScopedResourceSelectorRequirement, pvc *corev1.PersistentVolumeClaim) (bool, error) {
	if sel.ScopeName != corev1.ResourceQuotaScopeVolumeAttributesClass {
		return false, nil
	}
	classes := volumeAttributesClasses(pvc)
	if sel.Operator == corev1.ScopeSelectorOpExists {
		return len(classes) > 0, nil
	}
	if len(classes) == 0 {
		return selectorMatches(sel, nil)
	}
	for _, c := range classes {
		ok, err := selectorMatches(sel, []string{c})
		if err != nil || ok {
			return ok, err
		}
	}
	return false, nil
}

// pvcUpdateMatters reports whether a claim's update changes what quota charges it beyond
// what admission charged: the storage allocated by an expansion, or its volume attributes
// classes.
func pvcUpdateMatters(old, cur *corev1.PersistentVolumeClaim) bool {
	oldAlloc, oldOK := old.Status.AllocatedResources[corev1.ResourceStorage]
	curAlloc, curOK := cur.Status.AllocatedResources[corev1.ResourceStorage]
	if oldOK != curOK || oldAlloc.Cmp(curAlloc) != 0 {
		return true
	}
	return !slices.Equal(volumeAttributesClasses(old), volumeAttributesClasses(cur))
}
