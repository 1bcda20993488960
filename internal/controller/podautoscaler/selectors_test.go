package podautoscaler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

func podLabeled(lbls map[string]string) corev1.Pod {
	return corev1.Pod{ObjectMeta: metav1.ObjectMeta{Labels: lbls}}
}

// An HPA selects nothing until its target's selector is known; HPAs of other namespaces and
// deleted ones never count; a selector unknown to the store is not set.
func TestSelectorStore(t *testing.T) {
	a := types.NamespacedName{Namespace: "ns", Name: "a"}
	b := types.NamespacedName{Namespace: "ns", Name: "b"}
	other := types.NamespacedName{Namespace: "other", Name: "c"}
	web := []corev1.Pod{podLabeled(map[string]string{"app": "web", "tier": "1"}), podLabeled(map[string]string{"app": "web", "tier": "2"})}
	s := newSelectorStore()

	if !s.Register(a) || s.Register(a) {
		t.Fatal("Register: new once, then known")
	}
	if got := s.Selecting("ns", web, 2); len(got) != 0 {
		t.Errorf("a registered HPA without a selector selects %v", got)
	}
	if s.Update(b, labels.Everything()) {
		t.Error("Update set the selector of an HPA never registered")
	}
	s.Update(a, labels.SelectorFromSet(labels.Set{"app": "web"}))
	s.Register(b)
	s.Update(b, labels.SelectorFromSet(labels.Set{"tier": "2"}))
	s.Register(other)
	s.Update(other, labels.Everything())

	cases := []struct {
		name  string
		pods  []corev1.Pod
		limit int
		want  []types.NamespacedName
	}{
		{name: "both match one pod", pods: web, limit: 0, want: []types.NamespacedName{a, b}},
		{name: "limit stops early", pods: web, limit: 1, want: nil}, // one of the two, either
		{name: "only a matches", pods: web[:1], limit: 2, want: []types.NamespacedName{a}},
		{name: "no pods", pods: nil, limit: 2, want: nil},
	}
	for _, tc := range cases {
		got := s.Selecting("ns", tc.pods, tc.limit)
		if tc.limit == 1 {
			if len(got) != 1 {
				t.Errorf("%s: %v", tc.name, got)
			}
			continue
		}
		if len(got) != len(tc.want) {
			t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: got %v, want %v", tc.name, got, tc.want)
			}
		}
	}
	if !s.Delete(b) || s.Delete(b) {
		t.Error("Delete: known once, then gone")
	}
	if got := s.Selecting("ns", web, 2); len(got) != 1 || got[0] != a {
		t.Errorf("after b's deletion: %v", got)
	}
	if s.Update(b, labels.Everything()) {
		t.Error("a deleted HPA's selector was set")
	}
}
