package statefulset

import (
	"regexp"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apivalidation "k8s.io/apimachinery/pkg/api/validation"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	setGVK = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	podGVK = corev1.SchemeGroupVersion.WithKind("Pod")
)

// ordinalName splits "<parent>-<ordinal>" as upstream does.
var ordinalName = regexp.MustCompile("(.*)-([0-9]+)$")

// parentAndOrdinal returns the StatefulSet name and ordinal a pod name encodes (ordinal -1
// when it encodes none).
func parentAndOrdinal(name string) (string, int) {
	m := ordinalName.FindStringSubmatch(name)
	if len(m) < 3 {
		return "", -1
	}
	i, err := strconv.ParseInt(m[2], 10, 32)
	if err != nil {
		return m[1], -1
	}
	return m[1], int(i)
}

func ordinalOf(p *corev1.Pod) int {
	_, o := parentAndOrdinal(p.Name)
	return o
}

// isMember reports whether the pod's name makes it one of the set's ordinal pods.
func isMember(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	parent, o := parentAndOrdinal(p.Name)
	return o >= 0 && parent == set.Name
}

func podName(set *appsv1.StatefulSet, ordinal int) string {
	return set.Name + "-" + strconv.Itoa(ordinal)
}

func claimName(set *appsv1.StatefulSet, template string, ordinal int) string {
	return template + "-" + set.Name + "-" + strconv.Itoa(ordinal)
}

func startOrdinal(set *appsv1.StatefulSet) int {
	if set.Spec.Ordinals != nil {
		return int(set.Spec.Ordinals.Start)
	}
	return 0
}

func replicasOf(set *appsv1.StatefulSet) int {
	if set.Spec.Replicas == nil {
		return 1
	}
	return int(*set.Spec.Replicas)
}

// inRange reports whether ordinal is in [start, start+replicas).
func inRange(set *appsv1.StatefulSet, ordinal int) bool {
	return ordinal >= startOrdinal(set) && ordinal < startOrdinal(set)+replicasOf(set)
}

// identityMatches reports whether the pod carries the name, namespace and pod-name label its
// ordinal gives it.
func identityMatches(set *appsv1.StatefulSet, p *corev1.Pod) bool {
	parent, o := parentAndOrdinal(p.Name)
	return o >= 0 && parent == set.Name && p.Namespace == set.Namespace &&
		p.Labels[appsv1.StatefulSetPodNameLabel] == p.Name &&
		p.Labels[appsv1.PodIndexLabel] == strconv.Itoa(o)
}

// newPod is the pod for ordinal of set (whose template is the revision's), labelled with
// revision, with its identity, hostname, subdomain and claim volumes, controlled by owner.
func newPod(owner, set *appsv1.StatefulSet, ordinal int, revision string) *corev1.Pod {
	t := set.Spec.Template.DeepCopy()
	name := podName(set, ordinal)
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       set.Namespace,
			Name:            name,
			GenerateName:    generateName(owner),
			Labels:          map[string]string{},
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, setGVK)},
		},
		Spec: t.Spec,
	}
	for k, v := range t.Labels {
		p.Labels[k] = v
	}
	p.Labels[appsv1.StatefulSetPodNameLabel] = name
	p.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinal)
	p.Labels[appsv1.ControllerRevisionHashLabelKey] = revision
	p.Spec.Hostname = name
	p.Spec.Subdomain = set.Spec.ServiceName
	p.Spec.Volumes = withClaimVolumes(set, ordinal, p.Spec.Volumes)
	return p
}

// generateName is the generateName upstream's pods carry (its pod template helper sets it
// for every controller's pods, though a set's pods are created by name): "<set>-", or the
// set's name alone when the dash would make an invalid name prefix.
func generateName(set *appsv1.StatefulSet) string {
	if prefix := set.Name + "-"; len(apivalidation.NameIsDNSSubdomain(prefix, true)) == 0 {
		return prefix
	}
	return set.Name
}

// withClaimVolumes puts a volume per volumeClaimTemplate, referring to the ordinal's claim,
// in front of the template's other volumes (a template volume of the same name is replaced).
func withClaimVolumes(set *appsv1.StatefulSet, ordinal int, volumes []corev1.Volume) []corev1.Volume {
	out := make([]corev1.Volume, 0, len(volumes)+len(set.Spec.VolumeClaimTemplates))
	names := map[string]bool{}
	for _, c := range set.Spec.VolumeClaimTemplates {
		names[c.Name] = true
		out = append(out, corev1.Volume{Name: c.Name, VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claimName(set, c.Name, ordinal)},
		}})
	}
	for _, v := range volumes {
		if !names[v.Name] {
			out = append(out, v)
		}
	}
	return out
}

// newClaims are the claims of ordinal, from the volumeClaimTemplates, labelled with the
// set's selector labels as upstream does.
func newClaims(set *appsv1.StatefulSet, ordinal int) []*corev1.PersistentVolumeClaim {
	var out []*corev1.PersistentVolumeClaim
	for i := range set.Spec.VolumeClaimTemplates {
		c := set.Spec.VolumeClaimTemplates[i].DeepCopy()
		c.Name = claimName(set, set.Spec.VolumeClaimTemplates[i].Name, ordinal)
		c.Namespace = set.Namespace
		c.ResourceVersion = ""
		c.UID = ""
		if c.Labels == nil {
			c.Labels = map[string]string{}
		}
		if set.Spec.Selector != nil {
			for k, v := range set.Spec.Selector.MatchLabels {
				c.Labels[k] = v
			}
		}
		c.Status = corev1.PersistentVolumeClaimStatus{}
		out = append(out, c)
	}
	return out
}

func retentionPolicy(set *appsv1.StatefulSet) appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy {
	p := appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
		WhenDeleted: appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
		WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
	}
	if set.Spec.PersistentVolumeClaimRetentionPolicy != nil {
		p = *set.Spec.PersistentVolumeClaimRetentionPolicy
	}
	return p
}

func refersTo(ref metav1.OwnerReference, obj metav1.Object, gvk schema.GroupVersionKind) bool {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	return err == nil && gv.Group == gvk.Group && ref.Kind == gvk.Kind && ref.Name == obj.GetName()
}

// claimOwnerRefs returns the ownerReferences the claim should carry under the set's
// retention policy, as upstream: with WhenDeleted=Delete the set controls claims of pods in
// range; with WhenScaled=Delete the pod controls the claims of a scaled-down ordinal, so
// that they go with it. Claims controlled by anything else (or by an earlier set or pod of
// the same name) are left alone: ok is false.
func claimOwnerRefs(set *appsv1.StatefulSet, p *corev1.Pod, claim *corev1.PersistentVolumeClaim) (refs []metav1.OwnerReference, ok bool) {
	policy := retentionPolicy(set)
	const del = appsv1.DeletePersistentVolumeClaimRetentionPolicyType
	retainAll := policy.WhenScaled != del && policy.WhenDeleted != del
	for _, ref := range claim.OwnerReferences {
		switch {
		case refersTo(ref, set, setGVK):
			if ref.UID != set.UID && !retainAll {
				return nil, false
			}
		case refersTo(ref, p, podGVK):
			if ref.UID != p.UID && !retainAll {
				return nil, false
			}
		default:
			if ref.Controller != nil && *ref.Controller && !retainAll {
				return nil, false
			}
			refs = append(refs, ref)
		}
	}
	if retainAll {
		// Our references are scrubbed.
		return refs, true
	}
	scaledDown := !inRange(set, ordinalOf(p))
	if policy.WhenScaled == del && scaledDown {
		refs = append(refs, *metav1.NewControllerRef(p, podGVK))
	}
	if policy.WhenDeleted == del && (policy.WhenScaled != del || !scaledDown) {
		refs = append(refs, *metav1.NewControllerRef(set, setGVK))
	}
	return refs, true
}
