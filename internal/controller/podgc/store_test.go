package podgc

import (
	"fmt"
	"runtime"
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	toolscache "k8s.io/client-go/tools/cache"
)

// The pass reads the informer's own pods: the same pointers, and a few bytes a pod of garbage
// rather than the 1.2 KB copy of each Pod that a List into a PodList makes.
func TestPodsInHandsOutTheStoresPods(t *testing.T) {
	const n = 2000
	s := toolscache.NewStore(toolscache.MetaNamespaceKeyFunc)
	stored := map[*corev1.Pod]bool{}
	for i := range n {
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: fmt.Sprintf("p%d", i)}}
		if err := s.Add(p); err != nil {
			t.Fatal(err)
		}
		stored[p] = true
	}
	// Something that is not a pod is skipped, not a panic.
	if err := s.Add(&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n"}}); err != nil {
		t.Fatal(err)
	}

	got := podsIn(s)
	if len(got) != n {
		t.Fatalf("podsIn returned %d pods, want %d", len(got), n)
	}
	for _, p := range got {
		if !stored[p] {
			t.Fatalf("pod %s is a copy, not the store's own object", p.Name)
		}
	}

	const runs = 20
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		got = podsIn(s)
	}
	runtime.ReadMemStats(&after)
	perPod := float64(after.TotalAlloc-before.TotalAlloc) / runs / n
	// The store's []interface{} (16 B) and the result (8 B) per pod; a shallow copy of a
	// Pod struct alone is over 1,000 B.
	if perPod > 64 {
		t.Errorf("podsIn allocates %.0f B per pod, want at most 64 (a Pod struct is %d B)", perPod, unsafe.Sizeof(corev1.Pod{}))
	}
	_ = got
}
