package resourcequota

import (
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/deviceclass/extendedresourcecache"
	"k8s.io/klog/v2"
)

// Extended resources backed by DRA (DRAExtendedResource, GA and locked on): a pod may ask
// for example.com/gpu, or deviceclass.resource.kubernetes.io/<class>, and get devices of
// the class that names it through a claim the scheduler creates for the pod. Quota charges
// requests.<name> both for pods (their container requests, pods.go) and for claims (the
// devices of the class that stands for the name), a pod's own extended-resource claim only
// for what its pod was not already charged.

// deviceClasses maps classes to the extended resources they stand for, with upstream's
// rules for two classes naming the same resource (the newer one wins).
func deviceClasses(classes []resourcev1.DeviceClass) *extendedresourcecache.ExtendedResourceCache {
	m := extendedresourcecache.NewExtendedResourceCache(klog.Background())
	for i := range classes {
		m.OnAdd(&classes[i], true)
	}
	return m
}

// isExtendedQuotaName reports whether a quota resource is requests.<extended resource>:
// an extended resource name, or a class's implicit deviceclass.resource.kubernetes.io/<class>.
func isExtendedQuotaName(name corev1.ResourceName) bool {
	s := string(name)
	if !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return !isNative(name) || strings.HasPrefix(s, corev1.ResourceImplicitExtendedClaimsPerClass)
}

// claimsChargeExtended reports whether claims are charged for an extended quota resource:
// some device class stands for it.
func claimsChargeExtended(name corev1.ResourceName, classes *extendedresourcecache.ExtendedResourceCache) bool {
	if class, ok := strings.CutPrefix(string(name), corev1.ResourceImplicitExtendedClaimsPerClass); ok && classes.GetExtendedResource(class) != "" {
		return true
	}
	if !isExtendedQuotaName(name) {
		return false
	}
	return classes.GetDeviceClass(corev1.ResourceName(strings.TrimPrefix(string(name), corev1.DefaultResourceRequestsPrefix))) != nil
}

// claimExtendedUsage is what a claim is charged for extended resources, from the devices
// it is charged per class (claimUsage): requests.deviceclass.resource.kubernetes.io/<class>,
// and requests.<name> when the class stands for an extended resource; less what podUsage
// (its pod's usage, for a pod's own extended-resource claim; else nil) already charges.
func claimExtendedUsage(devices corev1.ResourceList, classes *extendedresourcecache.ExtendedResourceCache, podUsage corev1.ResourceList) corev1.ResourceList {
	ext := corev1.ResourceList{}
	for name, q := range devices {
		class, ok := strings.CutSuffix(string(name), corev1.ResourceClaimsPerClass)
		if !ok || class == "" {
			continue
		}
		ext[corev1.ResourceName(corev1.ResourceImplicitExtendedClaimsPerClass+class)] = q
		if r := classes.GetExtendedResource(class); r != "" {
			ext[corev1.ResourceName(corev1.DefaultResourceRequestsPrefix+r)] = q
		}
	}
	out := corev1.ResourceList{}
	for name, q := range ext {
		q = q.DeepCopy()
		if charged, ok := podUsage[name]; ok {
			q.Sub(charged)
		}
		if q.Sign() > 0 {
			out[name] = q
		}
	}
	return out
}

// claimPods are what is needed to tell whether a claim is its pod's own
// extended-resource claim: the namespace's pods by name, and its extended-resource
// claims by owning pod.
type claimPods struct {
	pods  map[string]*corev1.Pod
	owned map[types.UID][]*resourcev1.ResourceClaim
}

func newClaimPods(pods []*corev1.Pod, claims []*resourcev1.ResourceClaim) claimPods {
	cp := claimPods{pods: map[string]*corev1.Pod{}, owned: map[types.UID][]*resourcev1.ResourceClaim{}}
	for _, p := range pods {
		cp.pods[p.Name] = p
	}
	for _, c := range claims {
		if ref := extendedClaimOwner(c); ref != nil {
			cp.owned[ref.UID] = append(cp.owned[ref.UID], c)
		}
	}
	return cp
}

// extendedClaimOwner is the pod owning an extended-resource claim (one the scheduler
// made, annotated so), nil for other claims.
func extendedClaimOwner(c *resourcev1.ResourceClaim) *metav1.OwnerReference {
	if c.Annotations[resourcev1.ExtendedResourceClaimAnnotation] != "true" {
		return nil
	}
	ref := metav1.GetControllerOfNoCopy(c)
	if ref == nil || ref.Kind != "Pod" || ref.APIVersion != "v1" {
		return nil
	}
	return ref
}

// podUsageOf is the usage of the pod whose own extended-resource claim c is, nil when it
// is not one: the owner must exist with the same UID, and name c in its status, or, while
// its status names none, c must be the first of its extended-resource claims (by creation,
// then name), so that one claim only is offset against the pod.
func (cp claimPods) podUsageOf(c *resourcev1.ResourceClaim, now time.Time) corev1.ResourceList {
	ref := extendedClaimOwner(c)
	if ref == nil {
		return nil
	}
	pod, ok := cp.pods[ref.Name]
	if !ok || pod.UID != ref.UID {
		return nil
	}
	if st := pod.Status.ExtendedResourceClaimStatus; st != nil {
		if st.ResourceClaimName != c.Name {
			return nil
		}
	} else {
		for _, other := range cp.owned[pod.UID] {
			switch other.CreationTimestamp.Time.Compare(c.CreationTimestamp.Time) {
			case -1:
				return nil
			case 0:
				if other.Name < c.Name {
					return nil
				}
			}
		}
	}
	return podUsage(pod, now)
}
