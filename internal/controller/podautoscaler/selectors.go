package podautoscaler

import (
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
)

// selectorStore is upstream's HPA selector store: every known HPA with the selector of its
// target's scale, so that an HPA whose pods another HPA also selects is refused
// (AmbiguousSelector). An HPA enters with a selector matching nothing the first time it is
// synced and gets its real one once its target's scale is read; it leaves when deleted.
// (Upstream's HPAOptimizedSelectorStore gate chooses between two implementations of the same
// answers; this is the per-namespace one the gate, on by default, selects.)
type selectorStore struct {
	mu         sync.RWMutex
	namespaces map[string]map[types.NamespacedName]labels.Selector
}

func newSelectorStore() *selectorStore {
	return &selectorStore{namespaces: map[string]map[types.NamespacedName]labels.Selector{}}
}

// Register adds the HPA with a selector matching nothing; it reports whether it was new.
func (s *selectorStore) Register(hpa types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.namespaces[hpa.Namespace]
	if ns == nil {
		ns = map[types.NamespacedName]labels.Selector{}
		s.namespaces[hpa.Namespace] = ns
	}
	if _, ok := ns[hpa]; ok {
		return false
	}
	ns[hpa] = labels.Nothing()
	return true
}

// Update sets a registered HPA's selector; false if it is no longer registered (deleted
// meanwhile).
func (s *selectorStore) Update(hpa types.NamespacedName, sel labels.Selector) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.namespaces[hpa.Namespace]
	if _, ok := ns[hpa]; !ok {
		return false
	}
	ns[hpa] = sel
	return true
}

// Delete forgets the HPA; it reports whether it was registered.
func (s *selectorStore) Delete(hpa types.NamespacedName) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	ns := s.namespaces[hpa.Namespace]
	if _, ok := ns[hpa]; !ok {
		return false
	}
	delete(ns, hpa)
	if len(ns) == 0 {
		delete(s.namespaces, hpa.Namespace)
	}
	return true
}

// Selecting lists, sorted, the HPAs of the namespace whose selectors match any of the pods,
// stopping at limit (> 0) HPAs.
func (s *selectorStore) Selecting(namespace string, pods []corev1.Pod, limit int) []types.NamespacedName {
	s.mu.RLock()
	defer s.mu.RUnlock()
	ns := s.namespaces[namespace]
	if len(ns) == 0 {
		return nil
	}
	// Pods of one workload share their labels: match each distinct set once.
	sets := map[string]labels.Set{}
	for i := range pods {
		set := labels.Set(pods[i].Labels)
		sets[set.String()] = set
	}
	found := map[types.NamespacedName]bool{}
	var out []types.NamespacedName
	for _, set := range sets {
		for key, sel := range ns {
			if found[key] || !sel.Matches(set) {
				continue
			}
			found[key] = true
			out = append(out, key)
			if limit > 0 && len(out) >= limit {
				return sortKeys(out)
			}
		}
	}
	return sortKeys(out)
}

func sortKeys(keys []types.NamespacedName) []types.NamespacedName {
	sort.Slice(keys, func(i, j int) bool { return keys[i].String() < keys[j].String() })
	return keys
}
