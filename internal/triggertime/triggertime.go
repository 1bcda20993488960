// Package triggertime computes the endpoints.kubernetes.io/last-change-trigger-time
// annotation the endpoints and endpointslice controllers write, as upstream's
// TriggerTimeTracker, which the two share.
package triggertime

import (
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/pod"
)

// Tracker remembers, per Service, the trigger times its previous sync saw. The zero value
// is ready to use.
type Tracker struct {
	mu     sync.Mutex
	states map[types.NamespacedName]state
}

type state struct {
	service time.Time
	pods    map[string]time.Time
}

// Observe records the Service's creation and its pods' Ready transitions and returns the
// time to report: the earliest of them newer than what the previous sync saw, the Service's
// creation on its first sync, or zero when nothing changed (the annotation is then cleared).
func (t *Tracker) Observe(svc *corev1.Service, pods []*corev1.Pod) time.Time {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.states == nil {
		t.states = map[types.NamespacedName]state{}
	}
	prev, known := t.states[key]
	var earliest time.Time
	note := func(at time.Time) {
		if earliest.IsZero() || at.Before(earliest) {
			earliest = at
		}
	}
	next := state{service: svc.CreationTimestamp.Time, pods: map[string]time.Time{}}
	for _, p := range pods {
		c := pod.ReadyCondition(p)
		if c == nil || c.LastTransitionTime.IsZero() {
			continue
		}
		at := c.LastTransitionTime.Time
		next.pods[p.Name] = at
		if at.After(prev.pods[p.Name]) {
			note(at)
		}
	}
	if next.service.After(prev.service) {
		note(next.service)
	}
	t.states[key] = next
	if !known {
		return svc.CreationTimestamp.Time
	}
	return earliest
}

// Forget drops what the tracker knows of a deleted Service.
func (t *Tracker) Forget(key types.NamespacedName) {
	t.mu.Lock()
	defer t.mu.Unlock()
	delete(t.states, key)
}
