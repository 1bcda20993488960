package resourcequota

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// The resources whose objects have an evaluator of their own; everything else is counted.
var (
	podsGR     = schema.GroupResource{Resource: "pods"}
	servicesGR = schema.GroupResource{Resource: "services"}
	pvcsGR     = schema.GroupResource{Resource: "persistentvolumeclaims"}
	// quotasGR is counted from the quotas' own cache, not the count cache.
	quotasGR = schema.GroupResource{Resource: "resourcequotas"}
)

// legacyCountNames are the object counts quota tracked before count/<resource>.<group>
// existed; they count the same objects as their count/ name.
var legacyCountNames = map[corev1.ResourceName]schema.GroupResource{
	corev1.ResourceConfigMaps:             {Resource: "configmaps"},
	corev1.ResourceSecrets:                {Resource: "secrets"},
	corev1.ResourceReplicationControllers: {Resource: "replicationcontrollers"},
	corev1.ResourceQuotas:                 {Resource: "resourcequotas"},
}

// ignoredResources are never counted by quota: virtual resources that are not stored, and
// events.
var ignoredResources = map[schema.GroupResource]bool{
	{Resource: "bindings"}:                                                 true,
	{Resource: "componentstatuses"}:                                        true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
	{Resource: "events"}:                         true,
	{Group: "events.k8s.io", Resource: "events"}: true,
}

const (
	countPrefix        = "count/"
	storageClassSuffix = ".storageclass.storage.k8s.io/"
	// deviceClassPrefix is the implicit extended resource of a DRA device class.
	deviceClassPrefix = "deviceclass.resource.kubernetes.io/"
)

// countName is the object count resource of a group resource: count/<resource>.<group>,
// or count/<resource> for the core group.
func countName(gr schema.GroupResource) corev1.ResourceName {
	if gr.Group == "" {
		return corev1.ResourceName(countPrefix + gr.Resource)
	}
	return corev1.ResourceName(countPrefix + gr.Resource + "." + gr.Group)
}

// podResourceNames are the quota resources charged for pods.
var podResourceNames = map[corev1.ResourceName]bool{
	countName(podsGR):                       true,
	corev1.ResourcePods:                     true,
	corev1.ResourceCPU:                      true,
	corev1.ResourceMemory:                   true,
	corev1.ResourceEphemeralStorage:         true,
	corev1.ResourceRequestsCPU:              true,
	corev1.ResourceRequestsMemory:           true,
	corev1.ResourceRequestsEphemeralStorage: true,
	corev1.ResourceLimitsCPU:                true,
	corev1.ResourceLimitsMemory:             true,
	corev1.ResourceLimitsEphemeralStorage:   true,
}

var serviceResourceNames = map[corev1.ResourceName]bool{
	countName(servicesGR):                true,
	corev1.ResourceServices:              true,
	corev1.ResourceServicesNodePorts:     true,
	corev1.ResourceServicesLoadBalancers: true,
}

// isNative reports whether a resource name is in the kubernetes.io domain (unprefixed
// names are).
func isNative(name corev1.ResourceName) bool {
	return !strings.Contains(string(name), "/") || strings.Contains(string(name), corev1.ResourceDefaultNamespacePrefix)
}

// isExtendedResource reports whether a container resource is an extended resource, which
// quota tracks as requests.<name>.
func isExtendedResource(name corev1.ResourceName) bool {
	if strings.HasPrefix(string(name), deviceClassPrefix) {
		return true
	}
	return !isNative(name) && !strings.HasPrefix(string(name), corev1.DefaultResourceRequestsPrefix)
}

// isPVCResource reports whether a quota resource is charged for persistent volume claims,
// storage-class specific ones included.
func isPVCResource(name corev1.ResourceName) bool {
	switch name {
	case countName(pvcsGR), corev1.ResourcePersistentVolumeClaims, corev1.ResourceRequestsStorage:
		return true
	}
	s := string(name)
	return strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourcePersistentVolumeClaims)) ||
		strings.HasSuffix(s, storageClassSuffix+string(corev1.ResourceRequestsStorage))
}

// isPodResource reports whether a quota resource is charged for pods: compute resources,
// huge pages, and extended resources requested as requests.<name>.
func isPodResource(name corev1.ResourceName) bool {
	if podResourceNames[name] {
		return true
	}
	s := string(name)
	if strings.HasPrefix(s, corev1.ResourceHugePagesPrefix) || strings.HasPrefix(s, corev1.ResourceRequestsHugePagesPrefix) {
		return true
	}
	if !strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix) {
		return false
	}
	return !isNative(name) || strings.HasPrefix(s, corev1.DefaultResourceRequestsPrefix+deviceClassPrefix)
}

// trackedResource returns the group resource whose objects a quota resource is charged
// for, and false for resources no object of a namespace is charged for (or that quota
// ignores).
func trackedResource(name corev1.ResourceName) (schema.GroupResource, bool) {
	switch {
	case isClaimResource(name):
		return claimsGR, true
	case isPVCResource(name):
		return pvcsGR, true
	case serviceResourceNames[name]:
		return servicesGR, true
	case isPodResource(name):
		return podsGR, true
	}
	if gr, ok := legacyCountNames[name]; ok {
		return gr, true
	}
	rest, ok := strings.CutPrefix(string(name), countPrefix)
	if !ok || rest == "" {
		return schema.GroupResource{}, false
	}
	resource, group, _ := strings.Cut(rest, ".")
	gr := schema.GroupResource{Group: group, Resource: resource}
	if resource == "" || ignoredResources[gr] {
		return schema.GroupResource{}, false
	}
	return gr, true
}

// trackedNames groups a quota's hard resources by the group resource they are charged
// for; resources nothing is charged for are left out.
func trackedNames(hard corev1.ResourceList) map[schema.GroupResource][]corev1.ResourceName {
	out := map[schema.GroupResource][]corev1.ResourceName{}
	for name := range hard {
		if gr, ok := trackedResource(name); ok {
			out[gr] = append(out[gr], name)
		}
	}
	return out
}

// tracks reports whether a quota with these hard resources is charged for objects of gr.
// Resource claims may also be charged for extended resources (claims_extended.go).
func tracks(hard corev1.ResourceList, gr schema.GroupResource) bool {
	for name := range hard {
		if t, ok := trackedResource(name); ok && t == gr {
			return true
		}
		if gr == claimsGR && isExtendedQuotaName(name) {
			return true
		}
	}
	return false
}
