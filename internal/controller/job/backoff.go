package job

import (
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// backoffRecord is what the pod failure backoff of a Job depends on: the failures since
// its last success and when the last of them happened. Like upstream it lives in memory
// only; after a restart a Job's pods are recreated without delay once.
type backoffRecord struct {
	failuresAfterLastSuccess int32
	lastFailure              *time.Time
}

// nextBackoffRecord folds the pods that finished since the last sync into the record: a
// success resets the count to the failures that finished after it.
func nextBackoffRecord(old backoffRecord, newSucceeded, newFailed []*corev1.Pod) backoffRecord {
	if len(newSucceeded) == 0 && len(newFailed) == 0 {
		return old
	}
	failed := sortedByFinishTime(newFailed)
	if len(newSucceeded) == 0 {
		last := finishTime(failed[len(failed)-1])
		return backoffRecord{failuresAfterLastSuccess: old.failuresAfterLastSuccess + int32(len(failed)), lastFailure: &last}
	}
	succeeded := sortedByFinishTime(newSucceeded)
	lastSuccess := finishTime(succeeded[len(succeeded)-1])
	rec := backoffRecord{}
	for i := len(failed) - 1; i >= 0; i-- {
		t := finishTime(failed[i])
		if !t.After(lastSuccess) {
			break
		}
		if rec.lastFailure == nil {
			rec.lastFailure = &t
		}
		rec.failuresAfterLastSuccess++
	}
	return rec
}

func sortedByFinishTime(pods []*corev1.Pod) []*corev1.Pod {
	out := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(out, func(i, j int) bool { return finishTime(out[i]).Before(finishTime(out[j])) })
	return out
}

// finishTime estimates when a pod finished: when its last container (or sidecar)
// terminated, else when it became not ready, else when it was deleted (less the grace
// period), else its creation.
func finishTime(p *corev1.Pod) time.Time {
	if t := containersFinishTime(p); t != nil {
		return *t
	}
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionFalse && !c.LastTransitionTime.IsZero() {
			return c.LastTransitionTime.Time
		}
	}
	if p.DeletionTimestamp != nil {
		grace := int64(0)
		if p.DeletionGracePeriodSeconds != nil {
			grace = *p.DeletionGracePeriodSeconds
		}
		return p.DeletionTimestamp.Add(-time.Duration(grace) * time.Second)
	}
	return p.CreationTimestamp.Time
}

// containersFinishTime is the latest finish of the regular containers and sidecars, nil
// unless every one of them has terminated with a finish time.
func containersFinishTime(p *corev1.Pod) *time.Time {
	sidecars := map[string]bool{}
	for _, c := range p.Spec.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars[c.Name] = true
		}
	}
	var latest *time.Time
	consider := func(cs corev1.ContainerStatus) bool {
		t := cs.State.Terminated
		if t == nil || t.FinishedAt.IsZero() {
			return false
		}
		if latest == nil || latest.Before(t.FinishedAt.Time) {
			latest = &t.FinishedAt.Time
		}
		return true
	}
	for _, cs := range p.Status.ContainerStatuses {
		if !consider(cs) {
			return nil
		}
	}
	for _, cs := range p.Status.InitContainerStatuses {
		if sidecars[cs.Name] && !consider(cs) {
			return nil
		}
	}
	return latest
}

// backoffDelay is base doubled for each failure after the first, capped at max.
func backoffDelay(failures int32, base, maxDelay time.Duration) time.Duration {
	d := base
	for i := int32(1); i < failures; i++ {
		d *= 2
		if d >= maxDelay {
			return maxDelay
		}
	}
	return min(d, maxDelay)
}

// remainingBackoff is how long after now a pod may be created again, given failures
// consecutive failures, the last at lastFailure.
func remainingBackoff(failures int32, lastFailure *time.Time, now time.Time, base, maxDelay time.Duration) time.Duration {
	if failures == 0 || lastFailure == nil {
		return 0
	}
	elapsed := now.Sub(*lastFailure)
	d := backoffDelay(failures, base, maxDelay)
	if d < elapsed {
		return 0
	}
	return d - elapsed
}

// backoffStore keeps the backoff records of the Jobs in memory.
type backoffStore struct {
	mu      sync.Mutex
	records map[types.NamespacedName]backoffRecord
}

func newBackoffStore() *backoffStore {
	return &backoffStore{records: map[types.NamespacedName]backoffRecord{}}
}

func (s *backoffStore) get(key types.NamespacedName) backoffRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.records[key]
}

func (s *backoffStore) set(key types.NamespacedName, rec backoffRecord) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.records[key] = rec
}

func (s *backoffStore) forget(key types.NamespacedName) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.records, key)
}
