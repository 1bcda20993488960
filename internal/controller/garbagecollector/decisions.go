package garbagecollector

import (
	"encoding/json"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
)

// ownerState is what a live read says of one owner of an item.
type ownerState int

const (
	// solid: the owner exists and is not waiting for its dependents' deletion.
	solid ownerState = iota
	// dangling: nothing with the referenced UID exists where the reference points.
	dangling
	// waitingForDependents: the owner is being deleted in the foreground.
	waitingForDependents
)

func (s ownerState) String() string {
	return [...]string{"solid", "dangling", "waitingForDependentsDeletion"}[s]
}

// ownerStateOf classifies a reference given the owner read live where it points (nil when
// not found): an object with another UID is a different object, and the owner is absent.
func ownerStateOf(ref metav1.OwnerReference, live *metav1.PartialObjectMetadata) ownerState {
	switch {
	case live == nil || live.UID != ref.UID:
		return dangling
	case live.DeletionTimestamp != nil && slices.Contains(live.Finalizers, metav1.FinalizerDeleteDependents):
		return waitingForDependents
	default:
		return solid
	}
}

// classifiedOwners are an item's owner references by state.
type classifiedOwners struct {
	solid, dangling, waiting []metav1.OwnerReference
}

func (c *classifiedOwners) add(ref metav1.OwnerReference, s ownerState) {
	switch s {
	case solid:
		c.solid = append(c.solid, ref)
	case dangling:
		c.dangling = append(c.dangling, ref)
	case waitingForDependents:
		c.waiting = append(c.waiting, ref)
	}
}

type action int

const (
	// keep the item as it is.
	keep action = iota
	// removeOwnerRefs drops the references in plan.Owners from the item.
	removeOwnerRefs
	// deleteItem deletes the item with plan.Policy.
	deleteItem
)

// plan is what to do with an item that has owners.
type plan struct {
	Action action
	Owners []types.UID
	Policy metav1.DeletionPropagation
	// Unblock: first turn blockOwnerDeletion off on the item's references, to break a
	// cycle of foreground deletions.
	Unblock bool
}

// itemFacts are what the decision needs of the item besides its owners.
type itemFacts struct {
	// HasDependents: the graph knows objects owned by the item.
	HasDependents bool
	// DependentDeletingDependents: one of those is itself deleting in the foreground.
	DependentDeletingDependents bool
	// Finalizers are the item's, read live.
	Finalizers []string
}

// decide is upstream's attemptToDeleteItem decision for an item with owners:
//   - an item with a solid owner stays; references to dangling owners, and to owners waiting
//     for their dependents' deletion, are removed (the latter would wait for it forever);
//   - an item whose owners are all gone or waiting, one of them waiting, and that has
//     dependents itself is deleted in the foreground, so that the wait covers the whole tree;
//   - otherwise the item is garbage: deleted with the propagation its own finalizers ask
//     for (orphan, foreground), else in the background.
func decide(owners classifiedOwners, item itemFacts) plan {
	switch {
	case len(owners.solid) > 0:
		if len(owners.dangling) == 0 && len(owners.waiting) == 0 {
			return plan{Action: keep}
		}
		var uids []types.UID
		for _, ref := range append(slices.Clone(owners.dangling), owners.waiting...) {
			uids = append(uids, ref.UID)
		}
		return plan{Action: removeOwnerRefs, Owners: uids}
	case len(owners.waiting) > 0 && item.HasDependents:
		return plan{Action: deleteItem, Policy: metav1.DeletePropagationForeground, Unblock: item.DependentDeletingDependents}
	default:
		return plan{Action: deleteItem, Policy: propagationFor(item.Finalizers)}
	}
}

// propagationFor honours a deletion already asked for by the item's finalizers.
func propagationFor(finalizers []string) metav1.DeletionPropagation {
	switch {
	case slices.Contains(finalizers, metav1.FinalizerOrphanDependents):
		return metav1.DeletePropagationOrphan
	case slices.Contains(finalizers, metav1.FinalizerDeleteDependents):
		return metav1.DeletePropagationForeground
	default:
		return metav1.DeletePropagationBackground
	}
}

// Patch bodies. Strategic merge patches name the dependent's UID, so that they fail on an
// object recreated under the same name; JSON merge patches (for resources without strategic
// merge, i.e. custom resources) replace the whole list and name the resourceVersion they
// were computed from.

type metaPatch struct {
	Metadata metaPatchFields `json:"metadata"`
}

type metaPatchFields struct {
	UID             types.UID `json:"uid,omitempty"`
	ResourceVersion string    `json:"resourceVersion,omitempty"`
	// Lists are never omitted: null removes the field in a JSON merge patch.
	OwnerReferences any `json:"ownerReferences,omitempty"`
	Finalizers      any `json:"finalizers,omitempty"`
}

// deleteOwnerRefsStrategicPatch removes the references to owners from the dependent.
func deleteOwnerRefsStrategicPatch(dependent types.UID, owners []types.UID) ([]byte, error) {
	refs := make([]map[string]string, 0, len(owners))
	for _, uid := range owners {
		refs = append(refs, map[string]string{"$patch": "delete", "uid": string(uid)})
	}
	return json.Marshal(metaPatch{Metadata: metaPatchFields{UID: dependent, OwnerReferences: refs}})
}

// deleteOwnerRefsMergePatch is the JSON merge patch doing the same on cur.
func deleteOwnerRefsMergePatch(cur *metav1.PartialObjectMetadata, owners []types.UID) ([]byte, error) {
	keep := []metav1.OwnerReference{}
	for _, ref := range cur.OwnerReferences {
		if !slices.Contains(owners, ref.UID) {
			keep = append(keep, ref)
		}
	}
	return mergePatchOwnerRefs(cur.ResourceVersion, keep)
}

// unblockOwnerRefsStrategicPatch turns blockOwnerDeletion off on the item's blocking
// references (owners are the item's references, read live).
func unblockOwnerRefsStrategicPatch(item types.UID, owners []metav1.OwnerReference) ([]byte, error) {
	var refs []metav1.OwnerReference
	for _, ref := range owners {
		if isBlocking(ref) {
			ref.BlockOwnerDeletion = ptr.To(false)
			refs = append(refs, ref)
		}
	}
	fields := metaPatchFields{UID: item}
	if len(refs) > 0 {
		// A null list would remove every reference.
		fields.OwnerReferences = refs
	}
	return json.Marshal(metaPatch{Metadata: fields})
}

// unblockOwnerRefsMergePatch is the JSON merge patch doing the same on cur.
func unblockOwnerRefsMergePatch(cur *metav1.PartialObjectMetadata) ([]byte, error) {
	refs := []metav1.OwnerReference{}
	for _, ref := range cur.OwnerReferences {
		ref.BlockOwnerDeletion = ptr.To(false)
		refs = append(refs, ref)
	}
	return mergePatchOwnerRefs(cur.ResourceVersion, refs)
}

func mergePatchOwnerRefs(resourceVersion string, refs []metav1.OwnerReference) ([]byte, error) {
	var list any = refs
	if len(refs) == 0 {
		list = json.RawMessage("null")
	}
	return json.Marshal(metaPatch{Metadata: metaPatchFields{ResourceVersion: resourceVersion, OwnerReferences: list}})
}

// removeFinalizerPatch removes finalizer from cur's finalizers; ok is false when cur does
// not have it.
func removeFinalizerPatch(cur *metav1.PartialObjectMetadata, finalizer string) (patch []byte, ok bool, err error) {
	next := cur.DeepCopy()
	if !controllerutil.RemoveFinalizer(next, finalizer) {
		return nil, false, nil
	}
	var list any = next.Finalizers
	if len(next.Finalizers) == 0 {
		list = json.RawMessage("null")
	}
	patch, err = json.Marshal(metaPatch{Metadata: metaPatchFields{ResourceVersion: cur.ResourceVersion, Finalizers: list}})
	return patch, true, err
}

// Waiting. Upstream requeues items it waits on (a virtual node not yet observed, a kind
// not yet known to discovery) with its queue's per-item exponential backoff.
const (
	retryBase = 5 * time.Millisecond
	retryMax  = 1000 * time.Second
)

// retryAfter is the wait before attempt n+1 of an item that waits (n ≥ 1).
func retryAfter(n int) time.Duration {
	if n < 1 {
		n = 1
	}
	if n > 40 {
		return retryMax
	}
	return min(retryBase<<(n-1), retryMax)
}

// watchState is one resource's watch as the finalizer gate sees it.
type watchState struct {
	Synced  bool
	Started time.Time
}

// watchesReady reports whether the graph can be trusted to list an owner's dependents:
// every watch has synced, or has had grace to (upstream waits for the initial sync for one
// discovery period, then proceeds anyway), and there is at least one.
func watchesReady(watches []watchState, now time.Time, grace time.Duration) bool {
	if len(watches) == 0 {
		return false
	}
	for _, w := range watches {
		if !w.Synced && now.Sub(w.Started) < grace {
			return false
		}
	}
	return true
}
