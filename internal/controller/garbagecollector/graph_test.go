package garbagecollector

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

var (
	cmGVK   = schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}
	rsGVK   = schema.GroupVersionKind{Group: "apps", Version: "v1", Kind: "ReplicaSet"}
	nodeGVK = schema.GroupVersionKind{Version: "v1", Kind: "Node"}
)

// obj is an object of the tests: its UID is its name.
func obj(ns, name string, owners ...metav1.OwnerReference) objectMeta {
	return objectMeta{UID: types.UID(name), Name: name, Namespace: ns, Owners: owners}
}

func deleting(m objectMeta, finalizers ...string) objectMeta {
	m.Deleting = true
	m.Finalizers = finalizers
	return m
}

// ref names the object uid with kind gvk; blocking sets blockOwnerDeletion.
func ref(gvk schema.GroupVersionKind, name string, blocking bool) metav1.OwnerReference {
	r := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: name, UID: types.UID(name)}
	if blocking {
		r.BlockOwnerDeletion = ptr.To(true)
	}
	return r
}

func add(gvk schema.GroupVersionKind, m objectMeta) change {
	return change{Type: added, GVK: gvk, Object: m}
}

func update(gvk schema.GroupVersionKind, old, cur objectMeta) change {
	return change{Type: updated, GVK: gvk, Object: cur, Old: &old}
}

func del(gvk schema.GroupVersionKind, m objectMeta) change {
	return change{Type: deleted, GVK: gvk, Object: m}
}

func virtualDel(gvk schema.GroupVersionKind, m objectMeta) change {
	return change{Type: deleted, Virtual: true, GVK: gvk, Object: m}
}

func uids(names ...string) []types.UID {
	out := make([]types.UID, len(names))
	for i, n := range names {
		out[i] = types.UID(n)
	}
	return out
}

func sorted(u []types.UID) []types.UID {
	u = slices.Clone(u)
	slices.Sort(u)
	return slices.Compact(u)
}

func TestGraphApply(t *testing.T) {
	owner := obj("ns", "owner")
	dep := obj("ns", "dep", ref(rsGVK, "owner", true))
	tests := []struct {
		name        string
		setup       []change
		change      change
		wantDelete  []types.UID
		wantOrphan  []types.UID
		wantInvalid []string // dependents reported
		check       func(t *testing.T, g *graph)
	}{
		{
			name:   "a dependent seen before its owner makes a virtual owner, looked up",
			change: add(cmGVK, dep),
			// The owner must be verified: it may not exist.
			wantDelete: uids("owner"),
			check: func(t *testing.T, g *graph) {
				v, ok := g.view("owner")
				if !ok || v.observed || len(v.dependents) != 1 || !v.dependents[0].blocking {
					t.Errorf("owner view = %+v, %v; want virtual with one blocking dependent", v, ok)
				}
				if v.identity != (objectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "owner", UID: "owner"}) {
					t.Errorf("virtual owner identity = %v", v.identity)
				}
			},
		},
		{
			name:   "the owner's watch makes the virtual node observed, with nothing to do",
			setup:  []change{add(cmGVK, dep)},
			change: add(rsGVK, owner),
			check: func(t *testing.T, g *graph) {
				if v, _ := g.view("owner"); !v.observed {
					t.Error("owner still virtual")
				}
			},
		},
		{
			name:   "an owner seen first, then its dependent: nothing to do",
			setup:  []change{add(rsGVK, owner)},
			change: add(cmGVK, dep),
		},
		{
			name:       "an owner's deletion puts its dependents up for deletion and remembers it absent",
			setup:      []change{add(rsGVK, owner), add(cmGVK, dep), add(cmGVK, obj("ns", "dep2", ref(rsGVK, "owner", false)))},
			change:     del(rsGVK, owner),
			wantDelete: uids("dep", "dep2"),
			check: func(t *testing.T, g *graph) {
				if g.has("owner") {
					t.Error("owner still in the graph")
				}
				if !g.isAbsent(objectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "ns", Name: "owner", UID: "owner"}) {
					t.Error("owner not remembered absent")
				}
			},
		},
		{
			name:       "foreground deletion starts: dependents and the owner itself",
			setup:      []change{add(rsGVK, owner), add(cmGVK, dep)},
			change:     update(rsGVK, owner, deleting(owner, metav1.FinalizerDeleteDependents)),
			wantDelete: uids("dep", "owner"),
			check: func(t *testing.T, g *graph) {
				if v, _ := g.view("owner"); !v.deletingDependents || !v.beingDeleted {
					t.Errorf("owner = %+v, want deleting dependents", v)
				}
			},
		},
		{
			name:   "foreground deletion already under way is not started again",
			setup:  []change{add(rsGVK, owner), add(cmGVK, dep), update(rsGVK, owner, deleting(owner, metav1.FinalizerDeleteDependents))},
			change: update(rsGVK, deleting(owner, metav1.FinalizerDeleteDependents), deleting(owner, metav1.FinalizerDeleteDependents, "other")),
		},
		{
			name:       "an object first seen deleting in the foreground (e.g. after a restart)",
			change:     add(rsGVK, deleting(owner, metav1.FinalizerDeleteDependents)),
			wantDelete: uids("owner"),
		},
		{
			name:       "orphan deletion starts",
			setup:      []change{add(rsGVK, owner), add(cmGVK, dep)},
			change:     update(rsGVK, owner, deleting(owner, metav1.FinalizerOrphanDependents)),
			wantOrphan: uids("owner"),
		},
		{
			name:       "deletion without a finalizer of the collector starts nothing",
			setup:      []change{add(rsGVK, owner), add(cmGVK, dep)},
			change:     update(rsGVK, owner, deleting(owner, "example.com/other")),
			wantDelete: nil,
		},
		{
			name:       "a dependent dropping its blocking reference unblocks the owner",
			setup:      []change{add(rsGVK, owner), add(cmGVK, dep)},
			change:     update(cmGVK, dep, obj("ns", "dep")),
			wantDelete: uids("owner"),
			check: func(t *testing.T, g *graph) {
				if v, _ := g.view("owner"); len(v.dependents) != 0 {
					t.Errorf("owner still has dependents %v", v.dependents)
				}
			},
		},
		{
			name:       "a dependent turning blockOwnerDeletion off unblocks the owner",
			setup:      []change{add(rsGVK, owner), add(cmGVK, dep)},
			change:     update(cmGVK, dep, obj("ns", "dep", ref(rsGVK, "owner", false))),
			wantDelete: uids("owner"),
		},
		{
			name:   "a dependent's non-blocking reference removed: nothing to do",
			setup:  []change{add(rsGVK, owner), add(cmGVK, obj("ns", "dep", ref(rsGVK, "owner", false)))},
			change: update(cmGVK, obj("ns", "dep", ref(rsGVK, "owner", false)), obj("ns", "dep")),
		},
		{
			name: "a blocking dependent's deletion wakes an owner deleting in the foreground",
			setup: []change{add(rsGVK, owner), add(cmGVK, dep),
				update(rsGVK, owner, deleting(owner, metav1.FinalizerDeleteDependents))},
			change:     del(cmGVK, dep),
			wantDelete: uids("owner"),
		},
		{
			name:        "a reference to an observed owner in another namespace is reported and re-examined",
			setup:       []change{add(rsGVK, owner)},
			change:      add(cmGVK, obj("other", "dep", ref(rsGVK, "owner", false))),
			wantDelete:  uids("dep"),
			wantInvalid: []string{"dep"},
		},
		{
			name:   "a namespaced dependent of an observed cluster-scoped owner is valid",
			setup:  []change{add(nodeGVK, obj("", "owner"))},
			change: add(cmGVK, obj("ns", "dep", ref(nodeGVK, "owner", false))),
		},
		{
			name:       "a reference with other coordinates than the observed owner's is re-examined",
			setup:      []change{add(rsGVK, owner)},
			change:     add(cmGVK, obj("ns", "dep", ref(cmGVK, "owner", false))),
			wantDelete: uids("dep"),
		},
		{
			name: "a virtual owner observed in another namespace: its dependents are re-examined and reported",
			setup: []change{
				add(cmGVK, obj("a", "dep", ref(rsGVK, "owner", false))),
			},
			change:      add(rsGVK, obj("b", "owner")),
			wantDelete:  uids("dep"),
			wantInvalid: []string{"dep"},
			check: func(t *testing.T, g *graph) {
				if v, _ := g.view("owner"); !v.observed || v.identity.Namespace != "b" {
					t.Errorf("owner = %+v, want observed in b", v)
				}
			},
		},
		{
			name:       "a virtual owner found absent goes, with its dependents put up for deletion",
			setup:      []change{add(cmGVK, dep)},
			change:     virtualDel(rsGVK, owner),
			wantDelete: uids("dep"),
			check: func(t *testing.T, g *graph) {
				if g.has("owner") {
					t.Error("virtual owner still in the graph")
				}
			},
		},
		{
			name: "a virtual owner found absent in one namespace stays for a dependent naming it elsewhere",
			setup: []change{
				add(cmGVK, obj("a", "dep-a", ref(rsGVK, "owner", false))),
				add(cmGVK, obj("b", "dep-b", ref(rsGVK, "owner", false))),
			},
			change:     virtualDel(rsGVK, obj("a", "owner")),
			wantDelete: uids("dep-a", "owner"),
			check: func(t *testing.T, g *graph) {
				v, ok := g.view("owner")
				if !ok || v.identity.Namespace != "b" {
					t.Errorf("owner = %+v, %v; want renamed into b", v, ok)
				}
			},
		},
		{
			name:   "a virtual delete of an observed object under other coordinates keeps it",
			setup:  []change{add(rsGVK, owner), add(cmGVK, obj("ns", "dep", ref(cmGVK, "owner", false)))},
			change: virtualDel(cmGVK, owner),
			// Only the dependent naming the absent coordinates is re-examined.
			wantDelete: uids("dep"),
			check: func(t *testing.T, g *graph) {
				if !g.has("owner") {
					t.Error("observed owner removed")
				}
			},
		},
		{
			name:   "a delete of an object the graph does not know does nothing",
			change: del(cmGVK, obj("ns", "ghost")),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			g := newGraph()
			for _, c := range tt.setup {
				g.apply(c)
			}
			eff := g.apply(tt.change)
			if got, want := sorted(eff.Delete), sorted(tt.wantDelete); !slices.Equal(got, want) {
				t.Errorf("delete = %v, want %v", got, want)
			}
			if got, want := sorted(eff.Orphan), sorted(tt.wantOrphan); !slices.Equal(got, want) {
				t.Errorf("orphan = %v, want %v", got, want)
			}
			var invalid []string
			for _, i := range eff.InvalidNamespace {
				invalid = append(invalid, i.Dependent.Name)
			}
			if !slices.Equal(invalid, tt.wantInvalid) {
				t.Errorf("invalid namespace reports = %v, want %v", invalid, tt.wantInvalid)
			}
			if tt.check != nil {
				tt.check(t, g)
			}
		})
	}
}

func TestInvalidOwnerRefMessage(t *testing.T) {
	i := invalidOwnerRef{
		Dependent: objectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "b", Name: "dep", UID: "d"},
		Owner:     objectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "b", Name: "owner", UID: "o"},
	}
	want := `ownerRef [v1/ConfigMap, namespace: b, name: owner, uid: o] does not exist in namespace "b"`
	if got := i.Message(); got != want {
		t.Errorf("message = %q, want %q", got, want)
	}
}

func TestReferencesDiffs(t *testing.T) {
	a, b, c := ref(cmGVK, "a", false), ref(cmGVK, "b", true), ref(cmGVK, "c", false)
	bUnblocked := ref(cmGVK, "b", false)
	added, removed, changed := referencesDiffs([]metav1.OwnerReference{a, b}, []metav1.OwnerReference{bUnblocked, c})
	if len(added) != 1 || added[0].UID != "c" {
		t.Errorf("added = %v", added)
	}
	if len(removed) != 1 || removed[0].UID != "a" {
		t.Errorf("removed = %v", removed)
	}
	if len(changed) != 1 || !isBlocking(changed[0].old) || isBlocking(changed[0].new) {
		t.Errorf("changed = %v", changed)
	}
	if a2, r2, c2 := referencesDiffs([]metav1.OwnerReference{a, b}, []metav1.OwnerReference{ref(cmGVK, "b", true), ref(cmGVK, "a", false)}); len(a2)+len(r2)+len(c2) != 0 {
		t.Errorf("same references reordered: %v %v %v", a2, r2, c2)
	}
}

func TestAlternateOwnerIdentity(t *testing.T) {
	g := newGraph()
	g.apply(add(cmGVK, obj("a", "dep-a", ref(rsGVK, "owner", false))))
	g.apply(add(cmGVK, obj("b", "dep-b", ref(rsGVK, "owner", false))))
	g.apply(add(cmGVK, obj("c", "dep-c", ref(rsGVK, "owner", false))))
	n := g.nodes["owner"]
	absentB := objectRef{APIVersion: "apps/v1", Kind: "ReplicaSet", Namespace: "b", Name: "owner", UID: "owner"}
	// The next one after b in order, then wrapping around to the first.
	if alt := alternateOwnerIdentity(n.dependentList(), absentB); alt == nil || alt.Namespace != "c" {
		t.Errorf("after b: %v, want c", alt)
	}
	absentC := absentB
	absentC.Namespace = "c"
	if alt := alternateOwnerIdentity(n.dependentList(), absentC); alt == nil || alt.Namespace != "a" {
		t.Errorf("after c: %v, want a (wrapped)", alt)
	}
}
