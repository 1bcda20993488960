package garbagecollector

import (
	"fmt"
	"slices"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"
)

// absentOwnerCacheSize is upstream's size of the cache of owners known to be absent.
const absentOwnerCacheSize = 500

// objectRef is an object's identity as the graph knows it: the coordinates of an owner
// reference, and a namespace.
type objectRef struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
	UID        types.UID
}

// String is upstream's rendering, which ends up in Events.
func (r objectRef) String() string {
	return fmt.Sprintf("[%s/%s, namespace: %s, name: %s, uid: %s]", r.APIVersion, r.Kind, r.Namespace, r.Name, r.UID)
}

// GVK is the group, version and kind of the object.
func (r objectRef) GVK() schema.GroupVersionKind {
	return schema.FromAPIVersionAndKind(r.APIVersion, r.Kind)
}

// matches reports whether ref names exactly this object: same UID, name, kind and apiVersion.
func (r objectRef) matches(ref metav1.OwnerReference) bool {
	return r.UID == ref.UID && r.Name == ref.Name && r.Kind == ref.Kind && r.APIVersion == ref.APIVersion
}

// ownerIdentity is the object an owner reference names, assumed in namespace.
func ownerIdentity(ref metav1.OwnerReference, namespace string) objectRef {
	return objectRef{APIVersion: ref.APIVersion, Kind: ref.Kind, Namespace: namespace, Name: ref.Name, UID: ref.UID}
}

// node is one object of the graph. Its fields are guarded by the graph's lock.
type node struct {
	identity objectRef
	// dependents are the nodes whose ownerReferences name this node's UID.
	dependents map[*node]struct{}
	owners     []metav1.OwnerReference
	// virtual: only known from a dependent's reference, not yet seen by a watch.
	virtual      bool
	beingDeleted bool
	// deletingDependents: being deleted with the foregroundDeletion finalizer.
	deletingDependents bool
	// retries counts the attempts that ended waiting (for the node to be observed, for a
	// kind to be known), to space them out.
	retries int
}

func newNode(id objectRef) *node {
	return &node{identity: id, dependents: map[*node]struct{}{}}
}

func (n *node) dependentList() []*node {
	out := make([]*node, 0, len(n.dependents))
	for d := range n.dependents {
		out = append(out, d)
	}
	return out
}

// changeType is the kind of a watch event.
type changeType int

const (
	added changeType = iota
	updated
	deleted
)

func (t changeType) String() string {
	return [...]string{"add", "update", "delete"}[t]
}

// objectMeta is what the graph needs of an object.
type objectMeta struct {
	UID        types.UID
	Name       string
	Namespace  string
	Owners     []metav1.OwnerReference
	Deleting   bool
	Finalizers []string
}

func metaOf(obj metav1.Object) objectMeta {
	return objectMeta{
		UID:        obj.GetUID(),
		Name:       obj.GetName(),
		Namespace:  obj.GetNamespace(),
		Owners:     slices.Clone(obj.GetOwnerReferences()),
		Deleting:   obj.GetDeletionTimestamp() != nil,
		Finalizers: slices.Clone(obj.GetFinalizers()),
	}
}

// change is one event for the graph: a watch event, or a "virtual" delete when a worker
// found an object gone that no watch reported (e.g. an owner that never existed).
type change struct {
	Type    changeType
	Virtual bool
	GVK     schema.GroupVersionKind
	Object  objectMeta
	// Old is the previous state of an updated object.
	Old *objectMeta
}

func (c change) identity() objectRef {
	return objectRef{
		APIVersion: c.GVK.GroupVersion().String(),
		Kind:       c.GVK.Kind,
		Namespace:  c.Object.Namespace,
		Name:       c.Object.Name,
		UID:        c.Object.UID,
	}
}

// effects are what a change asks for: items to attempt to delete, owners whose dependents
// to orphan, and references to an owner in another namespace to report.
type effects struct {
	Delete           []types.UID
	Orphan           []types.UID
	InvalidNamespace []invalidOwnerRef
}

// invalidOwnerRef is a dependent whose owner reference names an object of another namespace.
type invalidOwnerRef struct {
	Dependent objectRef
	// Owner is the reference as written, in the dependent's namespace.
	Owner objectRef
}

// Message is upstream's OwnerRefInvalidNamespace Event message.
func (i invalidOwnerRef) Message() string {
	return fmt.Sprintf("ownerRef %s does not exist in namespace %q", i.Owner, i.Dependent.Namespace)
}

func (e *effects) deleteItem(n *node) { e.Delete = append(e.Delete, n.identity.UID) }

// reportInvalidNamespace records that dep's reference to ownerUID points out of its namespace.
func (e *effects) reportInvalidNamespace(dep *node, ownerUID types.UID) {
	for _, ref := range dep.owners {
		if ref.UID == ownerUID {
			e.InvalidNamespace = append(e.InvalidNamespace, invalidOwnerRef{
				Dependent: dep.identity,
				Owner:     ownerIdentity(ref, dep.identity.Namespace),
			})
			return
		}
	}
}

// graph is upstream's dependency graph (uidToNode) with its cache of absent owners.
type graph struct {
	mu    sync.RWMutex
	nodes map[types.UID]*node
	// absent holds owners verified absent (cluster-scoped, or per namespace); it is safe for
	// concurrent use on its own.
	absent *lru.Cache
}

func newGraph() *graph {
	return &graph{nodes: map[types.UID]*node{}, absent: lru.New(absentOwnerCacheSize)}
}

func (g *graph) isAbsent(ref objectRef) bool {
	_, ok := g.absent.Get(ref)
	return ok
}

func (g *graph) markAbsent(ref objectRef) { g.absent.Add(ref, nil) }

// apply updates the graph with one change and returns what it asks for, as upstream's
// processGraphChanges.
func (g *graph) apply(c change) effects {
	g.mu.Lock()
	defer g.mu.Unlock()
	var eff effects
	obj := c.Object
	observed := c.identity()
	existing, found := g.nodes[obj.UID]
	if found && !c.Virtual && existing.virtual {
		// A watch shows an object only known from references so far. The references may
		// have named it with other coordinates (another kind, namespace...): those
		// dependents need another look.
		if observed != existing.identity {
			_, mismatched := partitionDependents(existing.dependentList(), observed)
			for _, dep := range mismatched {
				if observed.Namespace != "" && dep.identity.Namespace != observed.Namespace {
					eff.reportInvalidNamespace(dep, observed.UID)
				}
				eff.deleteItem(dep)
			}
			existing.identity = observed
		}
		existing.virtual = false
	}

	switch {
	case (c.Type == added || c.Type == updated) && !found:
		n := newNode(observed)
		n.owners = obj.Owners
		n.beingDeleted = obj.Deleting
		n.deletingDependents = obj.Deleting && slices.Contains(obj.Finalizers, metav1.FinalizerDeleteDependents)
		g.nodes[obj.UID] = n
		g.addDependentToOwners(n, n.owners, &eff)
		g.processTransitions(c.Old, obj, n, &eff)
	case c.Type == added || c.Type == updated:
		add, remove, changed := referencesDiffs(existing.owners, obj.Owners)
		if len(add)+len(remove)+len(changed) > 0 {
			// Owners no longer blocked by this dependent may be waiting for it.
			g.addUnblockedOwners(remove, changed, &eff)
			existing.owners = obj.Owners
			g.addDependentToOwners(existing, add, &eff)
			g.removeDependentFromOwners(existing, remove)
		}
		if obj.Deleting {
			existing.beingDeleted = true
		}
		g.processTransitions(c.Old, obj, existing, &eff)
	case c.Type == deleted:
		if !found {
			return eff
		}
		if c.Virtual && !g.virtualDeleteRemoves(existing, observed, &eff) {
			return eff
		}
		g.removeNode(existing)
		if len(existing.dependents) > 0 {
			g.markAbsent(observed)
		}
		for dep := range existing.dependents {
			eff.deleteItem(dep)
		}
		// Owners deleting in the foreground may have been waiting for this one.
		for _, ref := range existing.owners {
			if owner, ok := g.nodes[ref.UID]; ok && owner.deletingDependents {
				eff.deleteItem(owner)
			}
		}
	}
	return eff
}

// virtualDeleteRemoves handles a worker's finding that deleted (an identity) does not exist,
// and reports whether the node should go. Dependents may name the UID with other
// coordinates (e.g. another namespace): then only the dependents naming deleted are
// re-examined, and the node stays for the others, renamed after one of their references if
// it was itself named deleted.
func (g *graph) virtualDeleteRemoves(existing *node, deleted objectRef, eff *effects) bool {
	if existing.virtual {
		matching, mismatched := partitionDependents(existing.dependentList(), deleted)
		if len(mismatched) == 0 {
			return true
		}
		if len(matching) > 0 {
			g.markAbsent(deleted)
			for _, dep := range matching {
				eff.deleteItem(dep)
			}
		}
		if existing.identity == deleted {
			if alt := alternateOwnerIdentity(mismatched, deleted); alt != nil {
				existing.identity = *alt
				eff.deleteItem(existing)
			}
		}
		return false
	}
	if existing.identity == deleted {
		return true
	}
	// The object exists under other coordinates: only references to deleted are dangling.
	matching, _ := partitionDependents(existing.dependentList(), deleted)
	if len(matching) > 0 {
		g.markAbsent(deleted)
		for _, dep := range matching {
			eff.deleteItem(dep)
		}
	}
	return false
}

// addDependentToOwners links n to the owners its references name, creating virtual nodes
// for owners not seen yet (and asking for them to be looked up). A reference that may not
// name the owner correctly (another namespace, other coordinates) gets n re-examined.
func (g *graph) addDependentToOwners(n *node, owners []metav1.OwnerReference, eff *effects) {
	potentiallyInvalid := false
	for _, ref := range owners {
		owner, ok := g.nodes[ref.UID]
		if !ok {
			owner = newNode(ownerIdentity(ref, n.identity.Namespace))
			owner.virtual = true
			g.nodes[ref.UID] = owner
		}
		owner.dependents[n] = struct{}{}
		if !ok {
			eff.deleteItem(owner)
			continue
		}
		if potentiallyInvalid {
			continue
		}
		ownerNamespaced := owner.identity.Namespace != ""
		switch {
		case ownerNamespaced && owner.identity.Namespace != n.identity.Namespace:
			if !owner.virtual {
				eff.reportInvalidNamespace(n, ref.UID)
			}
			potentiallyInvalid = true
		case !owner.identity.matches(ref):
			potentiallyInvalid = true
		case !ownerNamespaced && owner.identity.Namespace != n.identity.Namespace && owner.virtual:
			potentiallyInvalid = true
		}
	}
	if potentiallyInvalid {
		eff.deleteItem(n)
	}
}

func (g *graph) removeDependentFromOwners(n *node, owners []metav1.OwnerReference) {
	for _, ref := range owners {
		if owner, ok := g.nodes[ref.UID]; ok {
			delete(owner.dependents, n)
		}
	}
}

func (g *graph) removeNode(n *node) {
	delete(g.nodes, n.identity.UID)
	g.removeDependentFromOwners(n, n.owners)
}

// addUnblockedOwners asks for the owners a dependent stopped blocking (reference removed,
// or blockOwnerDeletion turned off) to be looked at again.
func (g *graph) addUnblockedOwners(removed []metav1.OwnerReference, changed []ownerRefPair, eff *effects) {
	for _, ref := range removed {
		if isBlocking(ref) {
			if owner, ok := g.nodes[ref.UID]; ok {
				eff.deleteItem(owner)
			}
		}
	}
	for _, c := range changed {
		if isBlocking(c.old) && !isBlocking(c.new) {
			if owner, ok := g.nodes[c.new.UID]; ok {
				eff.deleteItem(owner)
			}
		}
	}
}

// processTransitions starts the orphaning or the foreground deletion of dependents when an
// object's deletion with the matching finalizer begins.
func (g *graph) processTransitions(old *objectMeta, cur objectMeta, n *node, eff *effects) {
	if deletionStartsWithFinalizer(old, cur, metav1.FinalizerOrphanDependents) {
		eff.Orphan = append(eff.Orphan, n.identity.UID)
		return
	}
	if deletionStartsWithFinalizer(old, cur, metav1.FinalizerDeleteDependents) {
		n.deletingDependents = true
		for dep := range n.dependents {
			eff.deleteItem(dep)
		}
		eff.deleteItem(n)
	}
}

func deletionStartsWithFinalizer(old *objectMeta, cur objectMeta, finalizer string) bool {
	if !cur.Deleting || !slices.Contains(cur.Finalizers, finalizer) {
		return false
	}
	return old == nil || !old.Deleting || !slices.Contains(old.Finalizers, finalizer)
}

func isBlocking(ref metav1.OwnerReference) bool {
	return ref.BlockOwnerDeletion != nil && *ref.BlockOwnerDeletion
}

type ownerRefPair struct{ old, new metav1.OwnerReference }

// referencesDiffs compares two ownerReferences lists by UID.
func referencesDiffs(old, cur []metav1.OwnerReference) (added, removed []metav1.OwnerReference, changed []ownerRefPair) {
	oldByUID := make(map[types.UID]metav1.OwnerReference, len(old))
	for _, ref := range old {
		oldByUID[ref.UID] = ref
	}
	seen := map[types.UID]bool{}
	for _, ref := range cur {
		prev, ok := oldByUID[ref.UID]
		switch {
		case !ok:
			added = append(added, ref)
		case !ownerRefsEqual(prev, ref):
			changed = append(changed, ownerRefPair{old: prev, new: ref})
		}
		seen[ref.UID] = true
	}
	for _, ref := range old {
		if !seen[ref.UID] {
			removed = append(removed, ref)
		}
	}
	return added, removed, changed
}

func ownerRefsEqual(a, b metav1.OwnerReference) bool {
	boolEq := func(x, y *bool) bool { return (x == nil) == (y == nil) && (x == nil || *x == *y) }
	return a.APIVersion == b.APIVersion && a.Kind == b.Kind && a.Name == b.Name && a.UID == b.UID &&
		boolEq(a.Controller, b.Controller) && boolEq(a.BlockOwnerDeletion, b.BlockOwnerDeletion)
}

// partitionDependents splits dependents into those whose reference to owner's UID matches
// owner's coordinates (and namespace), and those that reference it otherwise. A dependent
// with both kinds of references is in both.
func partitionDependents(dependents []*node, owner objectRef) (matching, mismatched []*node) {
	ownerNamespaced := owner.Namespace != ""
	for _, dep := range dependents {
		match, mismatch := false, false
		if ownerNamespaced && owner.Namespace != dep.identity.Namespace {
			mismatch = true
		} else {
			for _, ref := range dep.owners {
				if ref.UID != owner.UID {
					continue
				}
				if owner.matches(ref) {
					match = true
				} else {
					mismatch = true
				}
			}
		}
		if match {
			matching = append(matching, dep)
		}
		if mismatch {
			mismatched = append(mismatched, dep)
		}
	}
	return matching, mismatched
}

func refLess(a, b objectRef) bool {
	if a.Kind != b.Kind {
		return a.Kind < b.Kind
	}
	if a.APIVersion != b.APIVersion {
		return a.APIVersion < b.APIVersion
	}
	if a.Namespace != b.Namespace {
		return a.Namespace < b.Namespace
	}
	if a.Name != b.Name {
		return a.Name < b.Name
	}
	return a.UID < b.UID
}

// alternateOwnerIdentity picks another identity the dependents give the owner's UID than the
// one verified absent: the next one in a fixed order after it, or the first, so that
// successive attempts cycle through all of them.
func alternateOwnerIdentity(deps []*node, absent objectRef) *objectRef {
	absentClusterScoped := absent.Namespace == ""
	seen := map[objectRef]bool{absent: true}
	var first, firstFollowing *objectRef
	for _, dep := range deps {
		for _, ref := range dep.owners {
			if ref.UID != absent.UID {
				continue
			}
			if absent.matches(ref) && (absentClusterScoped || absent.Namespace == dep.identity.Namespace) {
				continue
			}
			alt := ownerIdentity(ref, dep.identity.Namespace)
			if absentClusterScoped && alt.APIVersion == absent.APIVersion && alt.Kind == absent.Kind {
				alt.Namespace = ""
			}
			if seen[alt] {
				continue
			}
			seen[alt] = true
			if first == nil || refLess(alt, *first) {
				first = &alt
			}
			if refLess(absent, alt) && (firstFollowing == nil || refLess(alt, *firstFollowing)) {
				firstFollowing = &alt
			}
		}
	}
	if firstFollowing != nil {
		return firstFollowing
	}
	return first
}

// itemView is a copy of what a worker needs of a node, taken under the graph's lock.
type itemView struct {
	identity           objectRef
	observed           bool
	beingDeleted       bool
	deletingDependents bool
	dependents         []dependentView
}

type dependentView struct {
	identity           objectRef
	deletingDependents bool
	// blocking: the dependent's reference to the item has blockOwnerDeletion.
	blocking bool
}

func (v itemView) blockingDependents() []dependentView {
	var out []dependentView
	for _, d := range v.dependents {
		if d.blocking {
			out = append(out, d)
		}
	}
	return out
}

// view returns a copy of the node with the given UID.
func (g *graph) view(uid types.UID) (itemView, bool) {
	g.mu.RLock()
	defer g.mu.RUnlock()
	n, ok := g.nodes[uid]
	if !ok {
		return itemView{}, false
	}
	v := itemView{
		identity:           n.identity,
		observed:           !n.virtual,
		beingDeleted:       n.beingDeleted,
		deletingDependents: n.deletingDependents,
	}
	for dep := range n.dependents {
		d := dependentView{identity: dep.identity, deletingDependents: dep.deletingDependents}
		for _, ref := range dep.owners {
			if ref.UID == uid && isBlocking(ref) {
				d.blocking = true
			}
		}
		v.dependents = append(v.dependents, d)
	}
	return v, true
}

// retried counts one more waiting attempt for the node and returns the count.
func (g *graph) retried(uid types.UID) int {
	g.mu.Lock()
	defer g.mu.Unlock()
	n, ok := g.nodes[uid]
	if !ok {
		return 0
	}
	n.retries++
	return n.retries
}

// has reports whether the graph knows the UID (tests and debugging).
func (g *graph) has(uid types.UID) bool {
	g.mu.RLock()
	defer g.mu.RUnlock()
	_, ok := g.nodes[uid]
	return ok
}
