package staleness

import (
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics/legacyregistry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// TestForOwner is the guard every workload controller declares with ForOwner: one store per
// watched resource, read through its object's informer, and skips counted in the
// controller's own <subsystem>_stale_sync_skips_total, registered once.
func TestForOwner(t *testing.T) {
	claims := schema.GroupResource{Resource: "persistentvolumeclaims"}
	o := ForOwner("owner_test_controller", "Thing",
		Watched{Resource: Pods, Object: &corev1.Pod{}},
		Watched{Resource: claims, Object: &corev1.PersistentVolumeClaim{}})
	// The synced version of each informer, by the type of the object it was looked up with.
	synced := map[string]string{"*v1.Pod": "10", "*v1.PersistentVolumeClaim": "10"}
	g := o.guard(func(obj client.Object) func() string {
		typ := fmt.Sprintf("%T", obj)
		return func() string { return synced[typ] }
	})
	if o.Skips() != g.Skips || o.Skips() != o.Skips() {
		t.Fatal("the guard does not count in the owner's one skips metric")
	}

	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	g.WroteAt(owner, "u1", Pods, "20")
	g.WroteAt(owner, "u1", claims, "30")
	if stale, _ := g.Stale(owner); !stale {
		t.Fatal("both caches behind the writes: not stale")
	}
	synced["*v1.PersistentVolumeClaim"] = "30"
	if stale, _ := g.Stale(owner); !stale {
		t.Fatal("the pods cache behind its write: not stale")
	}
	synced["*v1.Pod"] = "20"
	if stale, _ := g.Stale(owner); stale {
		t.Fatal("both caches caught up: stale")
	}
	// Both behind is counted against the first in order (claims), then pods.
	for resource, want := range map[string]float64{"pods": 1, "persistentvolumeclaims": 1} {
		if got, err := Skipped("owner_test_controller", resource); err != nil || got != want {
			t.Errorf("owner_test_controller_stale_sync_skips_total{resource=%s} = %v (%v), want %v", resource, got, err, want)
		}
	}

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range families {
		if mf.GetName() == "owner_test_controller_stale_sync_skips_total" {
			if want := "Total number of Thing syncs skipped due to a stale watch cache."; !strings.HasSuffix(mf.GetHelp(), want) {
				t.Errorf("help %q, want it to end %q", mf.GetHelp(), want)
			}
			return
		}
	}
	t.Error("owner_test_controller_stale_sync_skips_total is not in the legacy registry")
}
