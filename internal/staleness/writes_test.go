package staleness

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestDecide(t *testing.T) {
	for _, tc := range []struct {
		name       string
		cachedUID  types.UID
		cachedRV   string
		writtenUID types.UID
		replaced   string
		want       Decision
	}{
		{"the cache shows the version the write replaced", "u", "10", "u", "10", UseWritten},
		{"the cache shows the write", "u", "11", "u", "10", UseCached},
		{"the cache shows a later version", "u", "12", "u", "10", UseCached},
		{"the cache shows an earlier version (relisted after an etcd restore): never waited on", "u", "5", "u", "10", UseCached},
		{"a version that does not parse", "u", "x", "u", "10", UseCached},
		{"another object of the same name", "v", "10", "u", "10", UseCached},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.cachedUID, tc.cachedRV, tc.writtenUID, tc.replaced); got != tc.want {
				t.Errorf("Decide = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestWritesCurrent(t *testing.T) {
	cm := func(uid, rv, v string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: types.UID(uid), ResourceVersion: rv}, Data: map[string]string{"v": v}}
	}
	w := &Writes[*corev1.ConfigMap]{}
	if got := w.Current(cm("u", "10", "old")); got.ResourceVersion != "10" {
		t.Fatalf("nothing written: got rv %s, want the cached 10", got.ResourceVersion)
	}
	stored := cm("u", "11", "new")
	w.Wrote("10", stored)
	stored.Data["v"] = "changed by the caller"
	got := w.Current(cm("u", "10", "old"))
	if got.ResourceVersion != "11" || got.Data["v"] != "new" {
		t.Fatalf("stale cache: got rv %s %q, want the stored copy 11 \"new\"", got.ResourceVersion, got.Data["v"])
	}
	got.Data["v"] = "mutated by a sync"
	if again := w.Current(cm("u", "10", "old")); again.Data["v"] != "new" {
		t.Fatalf("the stored copy was shared with a sync: %q", again.Data["v"])
	}
	if got := w.Current(cm("u", "11", "new")); got.ResourceVersion != "11" {
		t.Fatalf("caught up: got rv %s, want 11", got.ResourceVersion)
	}
	// Once the cache was seen past the write, the memory is gone.
	if got := w.Current(cm("u", "10", "old")); got.ResourceVersion != "10" {
		t.Fatalf("after catching up: got rv %s, want the cached 10", got.ResourceVersion)
	}
	w.Wrote("11", cm("u", "12", "newer"))
	w.Forget(types.NamespacedName{Namespace: "ns", Name: "c"})
	if got := w.Current(cm("u", "11", "new")); got.ResourceVersion != "11" {
		t.Fatalf("forgotten: got rv %s, want the cached 11", got.ResourceVersion)
	}
}

// TestWritesCreated: a creation the cache has not shown yet is synced from the stored copy
// (not created again), until the cache shows it or it is deleted.
func TestWritesCreated(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "c"}
	cm := func(uid, rv string) *corev1.ConfigMap {
		return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: types.UID(uid), ResourceVersion: rv}}
	}
	w := &Writes[*corev1.ConfigMap]{}
	if _, ok := w.Created(key); ok {
		t.Fatal("nothing written: created")
	}
	w.Wrote("", cm("u", "5"))
	if got, ok := w.Created(key); !ok || got.ResourceVersion != "5" {
		t.Fatalf("created, not in the cache yet: got %v %v, want the stored copy at 5", got, ok)
	}
	if got := w.Current(cm("u", "5")); got.ResourceVersion != "5" {
		t.Fatalf("the cache shows the creation: got rv %s", got.ResourceVersion)
	}
	if _, ok := w.Created(key); ok {
		t.Fatal("once the cache showed the creation, it is forgotten")
	}

	w.Wrote("", cm("u", "5"))
	w.Forget(key)
	if _, ok := w.Created(key); ok {
		t.Fatal("deleted (forgotten): created")
	}

	// An update whose object the cache no longer has: gone, the memory dropped.
	w.Wrote("5", cm("u", "6"))
	if _, ok := w.Created(key); ok {
		t.Fatal("an update is not a creation")
	}
	if got := w.Current(cm("u", "5")); got.ResourceVersion != "5" {
		t.Fatalf("the update's memory outlived the object: got rv %s", got.ResourceVersion)
	}
}
