package endpointslicemirroring

import (
	"testing"
	"time"

	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestGenerations(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "svc"}
	slice := func(uid types.UID, gen int64) *discoveryv1.EndpointSlice {
		return &discoveryv1.EndpointSlice{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", UID: uid, Generation: gen,
			Labels: map[string]string{discoveryv1.LabelServiceName: "svc"}}}
	}
	var g generations
	if g.stale(key, nil) {
		t.Fatal("nothing written: never stale")
	}
	g.wrote(key, "a", 2)
	tests := []struct {
		name   string
		cached []*discoveryv1.EndpointSlice
		want   bool
	}{
		{name: "written slice missing", cached: nil, want: true},
		{name: "written slice older", cached: []*discoveryv1.EndpointSlice{slice("a", 1)}, want: true},
		{name: "written slice seen", cached: []*discoveryv1.EndpointSlice{slice("a", 2)}, want: false},
		{name: "written slice newer", cached: []*discoveryv1.EndpointSlice{slice("a", 3)}, want: false},
	}
	for _, tt := range tests {
		if got := g.stale(key, tt.cached); got != tt.want {
			t.Errorf("%s: stale = %v, want %v", tt.name, got, tt.want)
		}
	}

	g.deleted(key, "b")
	if !g.stale(key, []*discoveryv1.EndpointSlice{slice("a", 2), slice("b", 1)}) {
		t.Error("a deleted slice still cached: stale")
	}
	g.gone(slice("b", 1))
	if g.stale(key, []*discoveryv1.EndpointSlice{slice("a", 2)}) {
		t.Error("deletion observed: not stale")
	}

	g.byKey[key].at = time.Now().Add(-staleTimeout - time.Second)
	if g.stale(key, nil) {
		t.Error("a memory past staleTimeout is dropped")
	}
}
