package resourcequota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// claimsGR are DRA's ResourceClaims: charged by object count and by the devices they may
// be allocated, per device class.
var claimsGR = schema.GroupResource{Group: resourcev1.GroupName, Resource: "resourceclaims"}

// deviceClassResource is the quota resource of the devices of a class:
// <class>.deviceclass.resource.k8s.io/devices.
func deviceClassResource(class string) corev1.ResourceName {
	return corev1.ResourceName(class + corev1.ResourceClaimsPerClass)
}

// isClaimResource reports whether a quota resource is charged for resource claims: their
// object count, and the devices of a class.
func isClaimResource(name corev1.ResourceName) bool {
	return name == countName(claimsGR) || strings.HasSuffix(string(name), corev1.ResourceClaimsPerClass)
}

// requestedDevices is how many devices of its class one exact request may be allocated:
// its count, or for allocation mode All the most any allocation can hold (the worst case,
// since the devices are not known before allocation). An unknown mode (written by a newer
// API server) is not charged, as upstream.
func requestedDevices(r *resourcev1.ExactDeviceRequest) (string, int64) {
	switch r.AllocationMode {
	case resourcev1.DeviceAllocationModeExactCount:
		return r.DeviceClassName, r.Count
	case resourcev1.DeviceAllocationModeAll:
		return r.DeviceClassName, resourcev1.AllocationResultsMaxSize
	}
	return r.DeviceClassName, 0
}

// claimUsage is what a claim is charged: itself, and per device class the devices its
// requests may be allocated. A request with alternatives (firstAvailable) is charged, for
// each class its alternatives name, the most devices any one of them asks of that class:
// whichever is allocated, the charge covers it. Admin access is charged like any request,
// as upstream. Request kinds this version does not know are not charged.
func claimUsage(claim *resourcev1.ResourceClaim) corev1.ResourceList {
	out := corev1.ResourceList{countName(claimsGR): *resource.NewQuantity(1, resource.DecimalSI)}
	charge := func(class string, n int64) {
		q := out[deviceClassResource(class)]
		q.Add(*resource.NewQuantity(n, resource.DecimalSI))
		out[deviceClassResource(class)] = q
	}
	for _, req := range claim.Spec.Devices.Requests {
		switch {
		case len(req.FirstAvailable) > 0:
			worst := map[string]int64{}
			for i := range req.FirstAvailable {
				sub := &req.FirstAvailable[i]
				class, n := requestedDevices(&resourcev1.ExactDeviceRequest{
					DeviceClassName: sub.DeviceClassName, AllocationMode: sub.AllocationMode, Count: sub.Count,
				})
				if n > worst[class] {
					worst[class] = n
				}
			}
			for class, n := range worst {
				charge(class, n)
			}
		case req.Exactly != nil:
			charge(requestedDevices(req.Exactly))
		}
	}
	return out
}
