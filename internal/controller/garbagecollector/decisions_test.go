package garbagecollector

import (
	"slices"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func live(uid string, deleting bool, finalizers ...string) *metav1.PartialObjectMetadata {
	m := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{UID: types.UID(uid), Finalizers: finalizers}}
	if deleting {
		m.DeletionTimestamp = ptr.To(metav1.Now())
	}
	return m
}

func TestOwnerStateOf(t *testing.T) {
	r := ref(rsGVK, "owner", true)
	tests := []struct {
		name string
		live *metav1.PartialObjectMetadata
		want ownerState
	}{
		{"not found", nil, dangling},
		{"another object under the name (recreated)", live("other", false), dangling},
		{"exists", live("owner", false), solid},
		{"being deleted in the background", live("owner", true), solid},
		{"being deleted with the orphan finalizer", live("owner", true, metav1.FinalizerOrphanDependents), solid},
		{"being deleted in the foreground", live("owner", true, metav1.FinalizerDeleteDependents), waitingForDependents},
		{"foreground finalizer but not deleting yet", live("owner", false, metav1.FinalizerDeleteDependents), solid},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := ownerStateOf(r, tt.live); got != tt.want {
				t.Errorf("state = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	a, b, c := ref(rsGVK, "a", true), ref(rsGVK, "b", true), ref(rsGVK, "c", false)
	refs := func(r ...metav1.OwnerReference) []metav1.OwnerReference { return r }
	tests := []struct {
		name   string
		owners classifiedOwners
		item   itemFacts
		want   plan
	}{
		{
			name:   "one solid owner: keep",
			owners: classifiedOwners{solid: refs(a)},
			want:   plan{Action: keep},
		},
		{
			name:   "all owners gone: delete in the background",
			owners: classifiedOwners{dangling: refs(a, b)},
			want:   plan{Action: deleteItem, Policy: metav1.DeletePropagationBackground},
		},
		{
			name:   "several owners, one left: only the dangling reference goes",
			owners: classifiedOwners{solid: refs(a), dangling: refs(b)},
			want:   plan{Action: removeOwnerRefs, Owners: uids("b")},
		},
		{
			name:   "a solid owner and one waiting for dependents: the waiting reference goes too",
			owners: classifiedOwners{solid: refs(a), dangling: refs(c), waiting: refs(b)},
			want:   plan{Action: removeOwnerRefs, Owners: uids("c", "b")},
		},
		{
			name:   "owner waiting, item without dependents: deleted in the background",
			owners: classifiedOwners{waiting: refs(a)},
			want:   plan{Action: deleteItem, Policy: metav1.DeletePropagationBackground},
		},
		{
			name:   "owner waiting, item with dependents: deleted in the foreground",
			owners: classifiedOwners{waiting: refs(a), dangling: refs(b)},
			item:   itemFacts{HasDependents: true},
			want:   plan{Action: deleteItem, Policy: metav1.DeletePropagationForeground},
		},
		{
			name:   "owner waiting, a dependent waiting too: unblock first",
			owners: classifiedOwners{waiting: refs(a)},
			item:   itemFacts{HasDependents: true, DependentDeletingDependents: true},
			want:   plan{Action: deleteItem, Policy: metav1.DeletePropagationForeground, Unblock: true},
		},
		{
			name:   "garbage with the orphan finalizer already: orphan its dependents",
			owners: classifiedOwners{dangling: refs(a)},
			item:   itemFacts{HasDependents: true, Finalizers: []string{metav1.FinalizerOrphanDependents}},
			want:   plan{Action: deleteItem, Policy: metav1.DeletePropagationOrphan},
		},
		{
			name:   "garbage with the foreground finalizer already: foreground",
			owners: classifiedOwners{dangling: refs(a)},
			item:   itemFacts{Finalizers: []string{"x", metav1.FinalizerDeleteDependents}},
			want:   plan{Action: deleteItem, Policy: metav1.DeletePropagationForeground},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := decide(tt.owners, tt.item)
			if got.Action != tt.want.Action || got.Policy != tt.want.Policy || got.Unblock != tt.want.Unblock || !slices.Equal(got.Owners, tt.want.Owners) {
				t.Errorf("decide = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestPatchBodies(t *testing.T) {
	a, b := ref(rsGVK, "a", true), ref(rsGVK, "b", false)
	cur := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		UID: "dep", ResourceVersion: "42", OwnerReferences: []metav1.OwnerReference{a, b},
		Finalizers: []string{metav1.FinalizerOrphanDependents, "x"},
	}}
	only := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{
		UID: "dep", ResourceVersion: "7", OwnerReferences: []metav1.OwnerReference{a},
		Finalizers: []string{metav1.FinalizerDeleteDependents},
	}}
	must := func(b []byte, err error) string {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
		return string(b)
	}
	tests := []struct {
		name, got, want string
	}{
		{
			name: "strategic: delete references by UID, pinned to the dependent's UID",
			got:  must(deleteOwnerRefsStrategicPatch("dep", uids("a", "b"))),
			want: `{"metadata":{"uid":"dep","ownerReferences":[{"$patch":"delete","uid":"a"},{"$patch":"delete","uid":"b"}]}}`,
		},
		{
			name: "merge: the remaining references, pinned to the resourceVersion",
			got:  must(deleteOwnerRefsMergePatch(cur, uids("a"))),
			want: `{"metadata":{"resourceVersion":"42","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"b","uid":"b"}]}}`,
		},
		{
			name: "merge: removing the last reference removes the list",
			got:  must(deleteOwnerRefsMergePatch(only, uids("a"))),
			want: `{"metadata":{"resourceVersion":"7","ownerReferences":null}}`,
		},
		{
			name: "strategic unblock: only the blocking references, turned off",
			got:  must(unblockOwnerRefsStrategicPatch("dep", cur.OwnerReferences)),
			want: `{"metadata":{"uid":"dep","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"a","blockOwnerDeletion":false}]}}`,
		},
		{
			name: "strategic unblock without blocking references leaves the references alone",
			got:  must(unblockOwnerRefsStrategicPatch("dep", []metav1.OwnerReference{b})),
			want: `{"metadata":{"uid":"dep"}}`,
		},
		{
			name: "merge unblock: every reference, turned off",
			got:  must(unblockOwnerRefsMergePatch(cur)),
			want: `{"metadata":{"resourceVersion":"42","ownerReferences":[{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"a","uid":"a","blockOwnerDeletion":false},{"apiVersion":"apps/v1","kind":"ReplicaSet","name":"b","uid":"b","blockOwnerDeletion":false}]}}`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.got != tt.want {
				t.Errorf("patch =\n %s\nwant\n %s", tt.got, tt.want)
			}
		})
	}
}

func TestRemoveFinalizerPatch(t *testing.T) {
	tests := []struct {
		name       string
		finalizers []string
		remove     string
		want       string
		wantOK     bool
	}{
		{"keeps the others", []string{"x", metav1.FinalizerOrphanDependents, "y"}, metav1.FinalizerOrphanDependents,
			`{"metadata":{"resourceVersion":"5","finalizers":["x","y"]}}`, true},
		{"the last one removes the list", []string{metav1.FinalizerDeleteDependents}, metav1.FinalizerDeleteDependents,
			`{"metadata":{"resourceVersion":"5","finalizers":null}}`, true},
		{"already removed", []string{"x"}, metav1.FinalizerDeleteDependents, "", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cur := &metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{ResourceVersion: "5", Finalizers: tt.finalizers}}
			got, ok, err := removeFinalizerPatch(cur, tt.remove)
			if err != nil || ok != tt.wantOK || string(got) != tt.want {
				t.Errorf("patch = %s, %v, %v; want %s, %v", got, ok, err, tt.want, tt.wantOK)
			}
		})
	}
}

func TestRetryAfter(t *testing.T) {
	tests := map[int]time.Duration{
		0:    5 * time.Millisecond,
		1:    5 * time.Millisecond,
		2:    10 * time.Millisecond,
		11:   5120 * time.Millisecond,
		18:   655360 * time.Millisecond,
		19:   1000 * time.Second, // capped as upstream's queue
		1000: 1000 * time.Second,
	}
	for n, want := range tests {
		if got := retryAfter(n); got != want {
			t.Errorf("retryAfter(%d) = %v, want %v", n, got, want)
		}
	}
}

func TestWatchesReady(t *testing.T) {
	now := time.Unix(1000, 0)
	grace := 30 * time.Second
	tests := []struct {
		name    string
		watches []watchState
		want    bool
	}{
		{"no watch yet (before the first discovery)", nil, false},
		{"all synced", []watchState{{Synced: true, Started: now}, {Synced: true, Started: now.Add(-time.Hour)}}, true},
		{"one syncing, recently started", []watchState{{Synced: true}, {Synced: false, Started: now.Add(-time.Second)}}, false},
		{"one never synced after the grace: proceed, as upstream", []watchState{{Synced: true}, {Synced: false, Started: now.Add(-grace)}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := watchesReady(tt.watches, now, grace); got != tt.want {
				t.Errorf("ready = %v, want %v", got, tt.want)
			}
		})
	}
}
