package resourceclaim

import (
	"maps"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// maxGenerateNameLen leaves room in a 63-character name for the API server's 5 random
// characters after generateName.
const maxGenerateNameLen = 57

// podNeedsClaims reports whether a pod may still run and so still needs its claims, with
// upstream's reason: a pod removed, terminated, or deleted before it was scheduled releases
// them.
func podNeedsClaims(p *corev1.Pod, deleted bool) (bool, string) {
	switch {
	case deleted:
		return false, "pod got removed"
	case isTerminal(p):
		return false, "pod has terminated"
	case p.DeletionTimestamp != nil && p.Spec.NodeName == "":
		return false, "pod got deleted before scheduling"
	}
	return true, "pod might run"
}

// isPodDone reports whether it is certain that none of a pod's containers runs or will run:
// its phase is terminal, or it was deleted before it was scheduled.
func isPodDone(p *corev1.Pod) bool {
	return isTerminal(p) || p.DeletionTimestamp != nil && p.Spec.NodeName == ""
}

func isTerminal(p *corev1.Pod) bool {
	return p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
}

// generateName is the generateName of the claim made for a pod's claim: "<pod>-<claim>-",
// or, when longer than 57 characters, both names cut in proportion to their lengths, as
// upstream does, so the claim's name keeps something of each (the API server would cut only
// the end).
func generateName(pod, podClaim string) string {
	name := pod + "-" + podClaim + "-"
	if len(name) <= maxGenerateNameLen {
		return name
	}
	return pod[:len(pod)*maxGenerateNameLen/len(name)] + "-" + podClaim[:len(podClaim)*maxGenerateNameLen/len(name)]
}

// claimFor is the ResourceClaim made from a template for one of a pod's claims: controlled
// by the pod (upstream sets no blockOwnerDeletion), annotated with the pod's claim name so
// that a retry finds it, with the template's labels, annotations and spec.
func claimFor(p *corev1.Pod, podClaim string, tmpl *resourceapi.ResourceClaimTemplate) *resourceapi.ResourceClaim {
	annotations := maps.Clone(tmpl.Spec.Annotations)
	if annotations == nil {
		annotations = map[string]string{}
	}
	annotations[resourceapi.PodResourceClaimAnnotation] = podClaim
	return &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:    p.Namespace,
			GenerateName: generateName(p.Name, podClaim),
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true),
			}},
			Annotations: annotations,
			Labels:      maps.Clone(tmpl.Spec.Labels),
		},
		Spec: *tmpl.Spec.Spec.DeepCopy(),
	}
}

// needsAdminAccess reports whether a template asks for admin access to a device.
func needsAdminAccess(tmpl *resourceapi.ResourceClaimTemplate) bool {
	return adminAccess(tmpl.Spec.Spec.Devices.Requests)
}

// hasPrioritizedList reports whether a template has a request with subrequests.
func hasPrioritizedList(tmpl *resourceapi.ResourceClaimTemplate) bool {
	return slices.ContainsFunc(tmpl.Spec.Spec.Devices.Requests, func(r resourceapi.DeviceRequest) bool {
		return len(r.FirstAvailable) > 0
	})
}

// adminAccess: one request (not a subrequest) asks for admin access.
func adminAccess(requests []resourceapi.DeviceRequest) bool {
	return slices.ContainsFunc(requests, func(r resourceapi.DeviceRequest) bool {
		return r.Exactly != nil && ptr.Deref(r.Exactly.AdminAccess, false)
	})
}

// owningPod is the pod controlling a claim ("" when none does).
func owningPod(claim *resourceapi.ResourceClaim) (string, types.UID) {
	for _, o := range claim.OwnerReferences {
		if ptr.Deref(o.Controller, false) && o.APIVersion == "v1" && o.Kind == "Pod" {
			return o.Name, o.UID
		}
	}
	return "", ""
}

// generatedFor reports whether a claim is the one generated for the pod's claim podClaim:
// controlled by the pod and annotated with the claim's name.
func generatedFor(claim *resourceapi.ResourceClaim, pod types.UID, podClaim string) bool {
	_, owner := owningPod(claim)
	name, ok := claim.Annotations[resourceapi.PodResourceClaimAnnotation]
	return owner == pod && ok && name == podClaim
}

// podKnowledge is what the controller knows of the pod a reservation names.
type podKnowledge int

const (
	// podSeenDeleted: the controller saw the pod's deletion.
	podSeenDeleted podKnowledge = iota
	// podCached: the pod read from the cache (or absent there and read live).
	podCached
	// podLive: absent from the cache, the pod read live (nil when not found): the cache may
	// lag behind a pod the scheduler is placing, so only its absence or replacement counts.
	podLive
)

// keepReservation decides whether a reservedFor entry naming a pod stays: a pod gone,
// replaced by another of the same name, or done frees it, as upstream. A pod only read live
// is not judged by its phase (the cache brings its update soon).
func keepReservation(ref resourceapi.ResourceClaimConsumerReference, known podKnowledge, p *corev1.Pod) bool {
	switch known {
	case podSeenDeleted:
		return false
	case podLive:
		return p != nil && p.UID == ref.UID
	default:
		return p.UID == ref.UID && !isPodDone(p)
	}
}

// isPodReservation: the entry names a pod (other consumers are kept untouched).
func isPodReservation(ref resourceapi.ResourceClaimConsumerReference) bool {
	return ref.APIGroup == "" && ref.Resource == "pods"
}

// release is what a claim becomes once reservations were removed: the remaining
// reservations, and no allocation when none remains and the scheduler allocated it (the
// built-in finalizer), so the devices are free for other claims, as upstream deallocates on
// the transition from used to unused.
func release(claim *resourceapi.ResourceClaim, remaining []resourceapi.ResourceClaimConsumerReference) *resourceapi.ResourceClaim {
	out := claim.DeepCopy()
	out.Status.ReservedFor = remaining
	if len(remaining) == 0 && slices.Contains(claim.Finalizers, resourceapi.Finalizer) {
		out.Status.Allocation = nil
	}
	return out
}

// withoutFinalizer is the claim without the built-in finalizer, or nil when it must stay:
// absent, or the claim still allocated.
func withoutFinalizer(claim *resourceapi.ResourceClaim) *resourceapi.ResourceClaim {
	i := slices.Index(claim.Finalizers, resourceapi.Finalizer)
	if i < 0 || claim.Status.Allocation != nil {
		return nil
	}
	out := claim.DeepCopy()
	out.Finalizers = slices.Delete(out.Finalizers, i, i+1)
	return out
}

// mergedStatuses is pod.status.resourceClaimStatuses with the newly generated claims, one
// entry per claim name, sorted by name, as upstream applies them.
func mergedStatuses(p *corev1.Pod, generated map[string]string) []corev1.PodResourceClaimStatus {
	merged := map[string]string{}
	for _, s := range p.Status.ResourceClaimStatuses {
		if s.ResourceClaimName != nil {
			merged[s.Name] = *s.ResourceClaimName
		}
	}
	maps.Copy(merged, generated)
	out := make([]corev1.PodResourceClaimStatus, 0, len(merged))
	for _, name := range slices.Sorted(maps.Keys(merged)) {
		out = append(out, corev1.PodResourceClaimStatus{Name: name, ResourceClaimName: ptr.To(merged[name])})
	}
	return out
}

// createLabels are the labels of dynamic_resource_allocation_resourceclaim_creates_total
// for a claim about to be created, with the create's status: admin access, and its
// controller's API group and kind.
func createLabels(claim *resourceapi.ResourceClaim, status string) []string {
	group, kind := ownerLabels(claim)
	return []string{status, adminAccessLabel(claim), group, kind}
}

// adminAccessLabel is "true" when one of the claim's requests asks for admin access.
func adminAccessLabel(claim *resourceapi.ResourceClaim) string {
	if claim != nil && adminAccess(claim.Spec.Devices.Requests) {
		return "true"
	}
	return "false"
}

// ownerLabels are the API group ("" for the core group) and kind of a claim's controller.
func ownerLabels(claim *resourceapi.ResourceClaim) (group, kind string) {
	ref := metav1.GetControllerOfNoCopy(claim)
	if ref == nil {
		return "", ""
	}
	group, _, found := strings.Cut(ref.APIVersion, "/")
	if !found {
		group = ""
	}
	return group, ref.Kind
}

// sourceLabel is the source of a claim in dynamic_resource_allocation_resource_claims:
// "extended_resource" for the scheduler's extended-resource claims,
// "resource_claim_template" for claims generated from a template, "" for a user's.
func sourceLabel(claim *resourceapi.ResourceClaim) string {
	if claim.Annotations[resourceapi.ExtendedResourceClaimAnnotation] == "true" {
		return "extended_resource"
	}
	if claim.Annotations[resourceapi.PodResourceClaimAnnotation] != "" {
		return "resource_claim_template"
	}
	return ""
}
