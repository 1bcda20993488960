package pvbinder

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/selection"
	"k8s.io/utils/ptr"
)

// accessModeOrder is the order of upstream's stringified access modes ("RWO,ROX,RWX,RWOP").
var accessModeOrder = []corev1.PersistentVolumeAccessMode{
	corev1.ReadWriteOnce, corev1.ReadOnlyMany, corev1.ReadWriteMany, corev1.ReadWriteOncePod,
}

// modeSet is a volume's access modes as a set: the key upstream indexes volumes by.
func modeSet(modes []corev1.PersistentVolumeAccessMode) []corev1.PersistentVolumeAccessMode {
	var out []corev1.PersistentVolumeAccessMode
	for _, m := range accessModeOrder {
		if slices.Contains(modes, m) {
			out = append(out, m)
		}
	}
	return out
}

func modeKey(modes []corev1.PersistentVolumeAccessMode) string {
	s := make([]string, len(modes))
	for i, m := range modes {
		s[i] = string(m)
	}
	return strings.Join(s, ",")
}

// FindBestMatch picks the volume a claim without spec.volumeName binds to, or nil, as
// upstream's findBestMatchForClaim: volumes are grouped by their set of access modes, groups
// holding every mode the claim asks for are searched fewest modes first, and the first group
// with a match decides. Within a group a volume pre-bound to the claim (claimRef naming it)
// wins whatever its phase; otherwise the smallest Available volume whose capacity, class,
// volume mode, volumeAttributesClassName and labels (the claim's selector) fit.
//
// delayBinding is a WaitForFirstConsumer claim: only pre-bound volumes match. node is the
// node the scheduler selected for such a claim: unbound volumes may then match too, when
// their required node affinity admits the node.
func FindBestMatch(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayBinding bool, node *corev1.Node) (*corev1.PersistentVolume, error) {
	groups := map[string][]*corev1.PersistentVolume{}
	sets := map[string][]corev1.PersistentVolumeAccessMode{}
	for _, v := range volumes {
		set := modeSet(v.Spec.AccessModes)
		key := modeKey(set)
		groups[key] = append(groups[key], v)
		sets[key] = set
	}
	var keys []string
	for key, set := range sets {
		if containsAll(set, claim.Spec.AccessModes) {
			keys = append(keys, key)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		return cmp.Or(cmp.Compare(len(sets[a]), len(sets[b])), cmp.Compare(a, b))
	})
	for _, key := range keys {
		v, err := matchInGroup(claim, groups[key], delayBinding, node)
		if err != nil || v != nil {
			return v, err
		}
	}
	return nil, nil
}

// matchInGroup is upstream's FindMatchingVolume on the PV controller's path (no excluded
// volumes), extended by the selected node's affinity check.
func matchInGroup(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayBinding bool, node *corev1.Node) (*corev1.PersistentVolume, error) {
	requested := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	class := ClaimClass(claim)
	var selector labels.Selector
	if claim.Spec.Selector != nil {
		s, err := metav1.LabelSelectorAsSelector(claim.Spec.Selector)
		if err != nil {
			return nil, fmt.Errorf("error creating internal label selector for claim: %s/%s: %w", claim.Namespace, claim.Name, err)
		}
		selector = s
	}
	var best *corev1.PersistentVolume
	for _, v := range volumes {
		if v.Spec.ClaimRef != nil && !IsVolumeBoundToClaim(v, claim) {
			continue
		}
		capacity := v.Spec.Capacity[corev1.ResourceStorage]
		if capacity.Cmp(requested) < 0 ||
			volumeModeMismatch(claim, v) ||
			ptr.Deref(claim.Spec.VolumeAttributesClassName, "") != ptr.Deref(v.Spec.VolumeAttributesClassName, "") ||
			v.DeletionTimestamp != nil {
			continue
		}
		if IsVolumeBoundToClaim(v, claim) {
			return v, nil
		}
		if delayBinding && node == nil {
			// The scheduler binds unbound volumes of a claim waiting for its first consumer.
			continue
		}
		if v.Status.Phase != corev1.VolumeAvailable ||
			(selector != nil && !selector.Matches(labels.Set(v.Labels))) ||
			VolumeClass(v) != class {
			continue
		}
		if node != nil {
			if ok, _ := NodeAffinityAdmits(v, node); !ok {
				continue
			}
		}
		if best == nil || best.Spec.Capacity.Storage().Cmp(capacity) > 0 {
			best = v
		}
	}
	return best, nil
}

// CheckVolumeSatisfiesClaim says why a volume the claim names in spec.volumeName cannot be
// bound to it (nil when it can), with upstream's messages.
func CheckVolumeSatisfiesClaim(v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	requested := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := v.Spec.Capacity[corev1.ResourceStorage]
	switch {
	case v.DeletionTimestamp != nil:
		return fmt.Errorf("the volume is marked for deletion %q", v.Name)
	case capacity.Value() < requested.Value():
		return errors.New("requested PV is too small")
	case VolumeClass(v) != ClaimClass(claim):
		return errors.New("storageClassName does not match")
	case ptr.Deref(claim.Spec.VolumeAttributesClassName, "") != ptr.Deref(v.Spec.VolumeAttributesClassName, ""):
		return errors.New("volumeAttributesClassName does not match")
	case volumeModeMismatch(claim, v):
		return errors.New("incompatible volumeMode")
	case !containsAll(v.Spec.AccessModes, claim.Spec.AccessModes):
		return errors.New("incompatible accessMode")
	}
	return nil
}

// IsVolumeBoundToClaim reports whether the volume's claimRef names the claim: namespace and
// name, and the UID when the claimRef has one (a volume pre-bound by name has none).
func IsVolumeBoundToClaim(v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	ref := v.Spec.ClaimRef
	if ref == nil || ref.Name != claim.Name || ref.Namespace != claim.Namespace {
		return false
	}
	return ref.UID == "" || ref.UID == claim.UID
}

// ClaimClass is the class a claim asks for: the beta annotation wins over
// spec.storageClassName; "" when neither is set.
func ClaimClass(claim *corev1.PersistentVolumeClaim) string {
	if class, ok := claim.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return ptr.Deref(claim.Spec.StorageClassName, "")
}

// claimHasClass tells a claim that chose a class, "" included, from one that left it unset
// (nil), which the default StorageClass may fill in.
func claimHasClass(claim *corev1.PersistentVolumeClaim) bool {
	_, ok := claim.Annotations[corev1.BetaStorageClassAnnotation]
	return ok || claim.Spec.StorageClassName != nil
}

// VolumeClass is a volume's class, the beta annotation winning over spec.storageClassName.
func VolumeClass(v *corev1.PersistentVolume) string {
	if class, ok := v.Annotations[corev1.BetaStorageClassAnnotation]; ok {
		return class
	}
	return v.Spec.StorageClassName
}

// volumeModeMismatch compares volume modes, an unset one meaning Filesystem.
func volumeModeMismatch(claim *corev1.PersistentVolumeClaim, v *corev1.PersistentVolume) bool {
	return ptr.Deref(claim.Spec.VolumeMode, corev1.PersistentVolumeFilesystem) !=
		ptr.Deref(v.Spec.VolumeMode, corev1.PersistentVolumeFilesystem)
}

func containsAll(have, want []corev1.PersistentVolumeAccessMode) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}

// NodeAffinityAdmits reports whether the volume's required node affinity admits the node:
// its terms are ORed, a term's expressions and fields ANDed, and an empty term matches
// nothing, as the scheduler's MatchNodeSelectorTerms.
func NodeAffinityAdmits(v *corev1.PersistentVolume, node *corev1.Node) (bool, error) {
	if v.Spec.NodeAffinity == nil || v.Spec.NodeAffinity.Required == nil {
		return true, nil
	}
	var errs []error
	for _, term := range v.Spec.NodeAffinity.Required.NodeSelectorTerms {
		if len(term.MatchExpressions) == 0 && len(term.MatchFields) == 0 {
			continue
		}
		ok, err := termMatches(term, node)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if ok {
			return true, nil
		}
	}
	return false, errors.Join(errs...)
}

func termMatches(term corev1.NodeSelectorTerm, node *corev1.Node) (bool, error) {
	if len(term.MatchExpressions) > 0 {
		sel, err := requirementsSelector(term.MatchExpressions)
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set(node.Labels)) {
			return false, nil
		}
	}
	if len(term.MatchFields) > 0 {
		for _, f := range term.MatchFields {
			if f.Key != metav1.ObjectNameField {
				return false, fmt.Errorf("unsupported field key %q in node selector", f.Key)
			}
		}
		sel, err := requirementsSelector(term.MatchFields)
		if err != nil {
			return false, err
		}
		if !sel.Matches(labels.Set{metav1.ObjectNameField: node.Name}) {
			return false, nil
		}
	}
	return true, nil
}

var selectorOps = map[corev1.NodeSelectorOperator]selection.Operator{
	corev1.NodeSelectorOpIn:           selection.In,
	corev1.NodeSelectorOpNotIn:        selection.NotIn,
	corev1.NodeSelectorOpExists:       selection.Exists,
	corev1.NodeSelectorOpDoesNotExist: selection.DoesNotExist,
	corev1.NodeSelectorOpGt:           selection.GreaterThan,
	corev1.NodeSelectorOpLt:           selection.LessThan,
}

func requirementsSelector(reqs []corev1.NodeSelectorRequirement) (labels.Selector, error) {
	sel := labels.NewSelector()
	for _, r := range reqs {
		op, ok := selectorOps[r.Operator]
		if !ok {
			return nil, fmt.Errorf("%q is not a valid node selector operator", r.Operator)
		}
		req, err := labels.NewRequirement(r.Key, op, r.Values)
		if err != nil {
			return nil, err
		}
		sel = sel.Add(*req)
	}
	return sel, nil
}
