package pvbinder

import (
	"cmp"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/index"
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
// volumes; VolumeAttributesClass is GA), given the selected node of a WaitForFirstConsumer
// claim: kcm then binds an unbound volume whose node affinity admits the node, where
// upstream's PV controller passes no node and leaves that to the scheduler's volume binder.
func matchInGroup(claim *corev1.PersistentVolumeClaim, volumes []*corev1.PersistentVolume, delayBinding bool, node *corev1.Node) (*corev1.PersistentVolume, error) {
	return storagehelpers.FindMatchingVolume(claim, volumes, node, nil, delayBinding, true)
}

// CheckVolumeSatisfiesClaim says why a volume the claim names in spec.volumeName cannot be
// bound to it (nil when it can), with upstream's messages (its checkVolumeSatisfyClaim).
func CheckVolumeSatisfiesClaim(v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) error {
	requested := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := v.Spec.Capacity[corev1.ResourceStorage]
	switch {
	case v.DeletionTimestamp != nil:
		return fmt.Errorf("the volume is marked for deletion %q", v.Name)
	case capacity.Value() < requested.Value():
		return errors.New("requested PV is too small")
	case storagehelpers.GetPersistentVolumeClass(v) != storagehelpers.GetPersistentVolumeClaimClass(claim):
		return errors.New("storageClassName does not match")
	case ptr.Deref(claim.Spec.VolumeAttributesClassName, "") != ptr.Deref(v.Spec.VolumeAttributesClassName, ""):
		return errors.New("volumeAttributesClassName does not match")
	case storagehelpers.CheckVolumeModeMismatches(&claim.Spec, &v.Spec):
		return errors.New("incompatible volumeMode")
	case !storagehelpers.CheckAccessModes(claim, v):
		return errors.New("incompatible accessMode")
	}
	return nil
}

// unboundClaimClass indexes the claims that name no volume by their class: the claims an
// Available volume of that class may bind.
const unboundClaimClass = "pvbinder.unboundClaimClass"

// claimsWaitingByClass is the unboundClaimClass index.
var claimsWaitingByClass = index.Index{Object: &corev1.PersistentVolumeClaim{}, Field: unboundClaimClass, Extract: unboundClaimClassOf}

func unboundClaimClassOf(obj client.Object) []string {
	c := obj.(*corev1.PersistentVolumeClaim)
	if c.Spec.VolumeName != "" {
		return nil
	}
	return []string{storagehelpers.GetPersistentVolumeClaimClass(c)}
}

// fits reports whether a claim naming no volume could bind the volume, by the checks of
// FindBestMatch: its access modes, and FindMatchingVolume's (phase Available, capacity,
// class, volume mode, volumeAttributesClassName, selector; node affinity is the claim
// sync's, with the selected node).
func fits(v *corev1.PersistentVolume, claim *corev1.PersistentVolumeClaim) bool {
	if claim.Spec.VolumeName != "" || !containsAll(v.Spec.AccessModes, claim.Spec.AccessModes) {
		return false
	}
	match, err := storagehelpers.FindMatchingVolume(claim, []*corev1.PersistentVolume{v}, nil, nil, false, true)
	// An invalid selector is the claim sync's to report.
	return err != nil || match != nil
}

func containsAll(have, want []corev1.PersistentVolumeAccessMode) bool {
	for _, m := range want {
		if !slices.Contains(have, m) {
			return false
		}
	}
	return true
}
