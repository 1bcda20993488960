package job

import (
	"slices"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

func TestIntervalsParseAndString(t *testing.T) {
	tests := []struct {
		in          string
		completions int
		want        string
		total       int
	}{
		{in: "", completions: 5, want: "", total: 0},
		{in: "0", completions: 5, want: "0", total: 1},
		{in: "0,1", completions: 5, want: "0,1", total: 2},
		{in: "0-2", completions: 5, want: "0-2", total: 3},
		{in: "0,2-5", completions: 10, want: "0,2-5", total: 5},
		// Adjacent ranges merge; a range of two is written as two indexes.
		{in: "1,2,3,7,8", completions: 10, want: "1-3,7,8", total: 5},
		// Indexes at or above completions (completions lowered) are dropped.
		{in: "0,2-5,8", completions: 4, want: "0,2,3", total: 3},
		// Garbage is skipped, as upstream.
		{in: "x,1,3-y,5-4,-2,6", completions: 10, want: "1,6", total: 2},
		// Out of order input still yields a proper set.
		{in: "5,1-3,2", completions: 10, want: "1-3,5", total: 4},
	}
	for _, tt := range tests {
		got := parseIntervals(tt.in, tt.completions)
		if got.String() != tt.want || got.total() != tt.total {
			t.Errorf("parseIntervals(%q, %d) = %q (total %d), want %q (total %d)", tt.in, tt.completions, got, got.total(), tt.want, tt.total)
		}
	}
}

func TestIntervalsWithHasOverlap(t *testing.T) {
	s := parseIntervals("0,2-5,9", 20)
	if got := s.with(1, 6, 11).String(); got != "0-6,9,11" {
		t.Errorf("with = %q", got)
	}
	if got := s.union(parseIntervals("6,8,10-12", 20)).String(); got != "0,2-6,8-12" {
		t.Errorf("union = %q", got)
	}
	for ix, want := range map[int]bool{0: true, 1: false, 2: true, 5: true, 6: false, 9: true, 10: false, -1: false} {
		if s.has(ix) != want {
			t.Errorf("has(%d) = %v", ix, !want)
		}
	}
	if got := s.overlap(parseIntervals("1-3,8-9", 20)); got != 3 {
		t.Errorf("overlap = %d, want 3 (2, 3, 9)", got)
	}
	var empty intervals
	if empty.has(0) || empty.total() != 0 || empty.String() != "" {
		t.Error("the empty set is not empty")
	}
}

func pendingState(job *batchv1.Job, succeeded string, failed *string, pods ...*corev1.Pod) *syncState {
	s := &syncState{job: job, pods: pods}
	for _, p := range pods {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			s.active = append(s.active, p)
		}
	}
	s.succeededIndexes = parseIntervals(succeeded, int(*job.Spec.Completions))
	if failed != nil {
		f := parseIntervals(*failed, int(*job.Spec.Completions))
		s.failedIndexes = &f
	}
	return s
}

func TestFirstPendingIndexes(t *testing.T) {
	job := indexedJob(6)
	terminating := podAt(2, corev1.PodRunning)
	terminating.DeletionTimestamp = ptr.To(now())
	tests := []struct {
		name      string
		state     *syncState
		count     int
		want      []int
		replaceOn batchv1.PodReplacementPolicy
	}{
		{name: "nothing ran", state: pendingState(job, "", nil), count: 3, want: []int{0, 1, 2}},
		{name: "count caps", state: pendingState(job, "", nil), count: 10, want: []int{0, 1, 2, 3, 4, 5}},
		{name: "skips succeeded and active", state: pendingState(job, "0,3", nil, podAt(1, corev1.PodRunning)), count: 10, want: []int{2, 4, 5}},
		{name: "skips failed indexes", state: pendingState(job, "0", ptr.To("4,5"), podAt(1, corev1.PodPending)), count: 10, want: []int{2, 3}},
		{name: "a terminating pod's index is pending", state: pendingState(job, "0,1", nil, terminating), count: 10, want: []int{2, 3, 4, 5}},
		{name: "zero", state: pendingState(job, "", nil), count: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := firstPendingIndexes(tt.state, tt.count, 6); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
	// With podReplacementPolicy Failed, a terminating pod still holds its index.
	failedOnly := indexedJob(6)
	failedOnly.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
	s := pendingState(failedOnly, "0,1", nil, terminating)
	if got := firstPendingIndexes(s, 10, 6); !slices.Equal(got, []int{3, 4, 5}) {
		t.Errorf("podReplacementPolicy Failed: got %v", got)
	}
}
