package job

import (
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/utils/ptr"
)

func TestDesiredActive(t *testing.T) {
	tests := []struct {
		completions       *int32
		parallelism       int32
		succeeded, active int32
		want              int32
		explanation       string
	}{
		{completions: ptr.To[int32](10), parallelism: 3, want: 3, explanation: "parallelism"},
		{completions: ptr.To[int32](10), parallelism: 3, succeeded: 8, want: 2, explanation: "no more than completions left"},
		{completions: ptr.To[int32](10), parallelism: 3, succeeded: 12, want: 0, explanation: "never negative"},
		{completions: ptr.To[int32](10), parallelism: 0, want: 0, explanation: "parallelism 0"},
		{parallelism: 4, active: 1, want: 4, explanation: "no completions, no success yet: parallelism"},
		{parallelism: 4, succeeded: 1, active: 2, want: 2, explanation: "no completions, a success: keep what runs, start none"},
	}
	for _, tt := range tests {
		if got := desiredActive(plainJob(tt.completions, tt.parallelism), tt.succeeded, tt.active); got != tt.want {
			t.Errorf("%s: %d, want %d", tt.explanation, got, tt.want)
		}
	}
}

func TestIsComplete(t *testing.T) {
	tests := []struct {
		completions       *int32
		succeeded, active int32
		want              bool
	}{
		{completions: ptr.To[int32](3), succeeded: 3, want: true},
		{completions: ptr.To[int32](3), succeeded: 3, active: 1},
		{completions: ptr.To[int32](3), succeeded: 2},
		{succeeded: 1, want: true},
		{succeeded: 1, active: 1},
		{},
	}
	for _, tt := range tests {
		if got := isComplete(plainJob(tt.completions, 1), tt.succeeded, tt.active); got != tt.want {
			t.Errorf("completions %v succeeded %d active %d: %v", ptr.Deref(tt.completions, -1), tt.succeeded, tt.active, got)
		}
	}
}

func TestEvaluate(t *testing.T) {
	cond := func(ct batchv1.JobConditionType, reason string) batchv1.JobCondition {
		return batchv1.JobCondition{Type: ct, Status: corev1.ConditionTrue, Reason: reason, Message: "earlier"}
	}
	failJobPolicy := &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
		{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}}},
		{Action: batchv1.PodFailurePolicyActionIgnore, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{9}}},
	}}
	tests := []struct {
		name          string
		job           func() *batchv1.Job
		pods          []*corev1.Pod
		wantType      batchv1.JobConditionType
		wantReason    string
		untilDeadline time.Duration
	}{
		{name: "running", job: func() *batchv1.Job { return plainJob(ptr.To[int32](2), 2) }, pods: []*corev1.Pod{newPod(corev1.PodRunning)}},
		{name: "backoff limit exceeded by a new failure", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.BackoffLimit = ptr.To[int32](1)
			j.Status.Failed = 1
			return j
		}, pods: []*corev1.Pod{exited(newPod(corev1.PodFailed), 1, t0)}, wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonBackoffLimitExceeded},
		{name: "at the backoff limit: not yet", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.BackoffLimit = ptr.To[int32](1)
			return j
		}, pods: []*corev1.Pod{exited(newPod(corev1.PodFailed), 1, t0)}},
		{name: "an ignored failure does not count", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.BackoffLimit = ptr.To[int32](0)
			j.Spec.PodFailurePolicy = failJobPolicy
			return j
		}, pods: []*corev1.Pod{exited(newPod(corev1.PodFailed), 9, t0)}},
		{name: "FailJob before the backoff limit", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.BackoffLimit = ptr.To[int32](0)
			j.Spec.PodFailurePolicy = failJobPolicy
			return j
		}, pods: []*corev1.Pod{exited(newPod(corev1.PodFailed), 42, t0)}, wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonPodFailurePolicy},
		{name: "a written FailureTarget becomes Failed", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobFailureTarget, batchv1.JobReasonDeadlineExceeded)}
			return j
		}, wantType: batchv1.JobFailed, wantReason: batchv1.JobReasonDeadlineExceeded},
		{name: "a written SuccessCriteriaMet wins over a later failure", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.BackoffLimit = ptr.To[int32](0)
			j.Status.Conditions = []batchv1.JobCondition{cond(batchv1.JobSuccessCriteriaMet, batchv1.JobReasonCompletionsReached)}
			return j
		}, pods: []*corev1.Pod{exited(newPod(corev1.PodFailed), 1, t0)}, wantType: batchv1.JobSuccessCriteriaMet, wantReason: batchv1.JobReasonCompletionsReached},
		{name: "past the deadline", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
			j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-10 * time.Second)))
			return j
		}, wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonDeadlineExceeded},
		{name: "before the deadline: when to look again", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
			j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-4 * time.Second)))
			return j
		}, untilDeadline: 6 * time.Second},
		{name: "suspended: no deadline", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.ActiveDeadlineSeconds = ptr.To[int64](10)
			j.Spec.Suspend = ptr.To(true)
			j.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-time.Hour)))
			return j
		}},
		{name: "restarts in place count against backoffLimit", job: func() *batchv1.Job {
			j := plainJob(ptr.To[int32](2), 2)
			j.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
			j.Spec.BackoffLimit = ptr.To[int32](2)
			return j
		}, pods: func() []*corev1.Pod {
			p := newPod(corev1.PodRunning)
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", RestartCount: 2}}
			return []*corev1.Pod{p}
		}(), wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonBackoffLimitExceeded},
		{name: "more failed indexes than allowed", job: func() *batchv1.Job {
			j := indexedJob(4)
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](0)
			j.Spec.MaxFailedIndexes = ptr.To[int32](1)
			j.Status.FailedIndexes = ptr.To("0")
			return j
		}, pods: []*corev1.Pod{exited(podAt(2, corev1.PodFailed), 1, t0), podAt(1, corev1.PodRunning)}, wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonMaxFailedIndexesExceeded},
		{name: "every index succeeded or failed", job: func() *batchv1.Job {
			j := indexedJob(3)
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			j.Status.CompletedIndexes = "0,1"
			return j
		}, pods: []*corev1.Pod{withAnnotation(exited(podAt(2, corev1.PodFailed), 1, t0), batchv1.JobIndexFailureCountAnnotation, "1")},
			wantType: batchv1.JobFailureTarget, wantReason: batchv1.JobReasonFailedIndexes},
		{name: "an index retried within its limit", job: func() *batchv1.Job {
			j := indexedJob(3)
			j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
			j.Status.CompletedIndexes = "0,1"
			return j
		}, pods: []*corev1.Pod{exited(podAt(2, corev1.PodFailed), 1, t0)}},
		{name: "success policy", job: func() *batchv1.Job {
			j := indexedJob(5)
			j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededCount: ptr.To[int32](2)}}}
			j.Status.CompletedIndexes = "3"
			return j
		}, pods: []*corev1.Pod{podAt(1, corev1.PodSucceeded), podAt(2, corev1.PodRunning)}, wantType: batchv1.JobSuccessCriteriaMet, wantReason: batchv1.JobReasonSuccessPolicy},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSyncState(tt.job(), tt.pods, nil, backoffRecord{}, t0)
			until := s.evaluate(t0)
			var gotType batchv1.JobConditionType
			var gotReason string
			if s.finished != nil {
				gotType, gotReason = s.finished.Type, s.finished.Reason
			}
			if gotType != tt.wantType || gotReason != tt.wantReason {
				t.Errorf("finished = %q %q, want %q %q", gotType, gotReason, tt.wantType, tt.wantReason)
			}
			if until != tt.untilDeadline {
				t.Errorf("until deadline = %v, want %v", until, tt.untilDeadline)
			}
		})
	}
}

func uids(pods []*corev1.Pod) []types.UID {
	var out []types.UID
	for _, p := range pods {
		out = append(out, p.UID)
	}
	slices.Sort(out)
	return out
}

func TestPlanTrackingCountsEachPodOnce(t *testing.T) {
	newSucceeded := newPod(corev1.PodSucceeded)
	listedWithFinalizer := newPod(corev1.PodSucceeded)             // crash before the finalizer went
	listedWithout := withoutFinalizer(newPod(corev1.PodSucceeded)) // crash after it went
	listedFailedWithout := withoutFinalizer(exited(newPod(corev1.PodFailed), 1, t0))
	alreadyRemoved := newPod(corev1.PodSucceeded) // removed by us, the cache still shows it
	counted := withoutFinalizer(newPod(corev1.PodFailed))
	running := newPod(corev1.PodRunning)
	failed := exited(newPod(corev1.PodFailed), 1, t0)
	deleted := deleting(newPod(corev1.PodRunning))

	job := plainJob(ptr.To[int32](10), 3)
	job.Status.Succeeded, job.Status.Failed = 4, 2
	job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{
		Succeeded: []types.UID{listedWithFinalizer.UID, listedWithout.UID},
		Failed:    []types.UID{listedFailedWithout.UID},
	}
	pods := []*corev1.Pod{newSucceeded, listedWithFinalizer, listedWithout, listedFailedWithout, alreadyRemoved, counted, running, failed, deleted}
	s := newSyncState(job, pods, sets.New(alreadyRemoved.UID), backoffRecord{}, t0)
	s.evaluate(t0)
	if s.succeeded != 4+1+2 || s.failed != 2+1+2 {
		t.Errorf("counts before tracking: succeeded %d failed %d, want 7 and 5", s.succeeded, s.failed)
	}
	plan := s.planTracking(t0)

	st := job.Status
	// What lost its finalizer moved to the counters.
	if st.Succeeded != 5 || st.Failed != 3 {
		t.Errorf("counters = %d/%d, want 5/3", st.Succeeded, st.Failed)
	}
	if got, want := st.UncountedTerminatedPods.Succeeded, []types.UID{listedWithFinalizer.UID, newSucceeded.UID}; !slices.Equal(got, want) {
		t.Errorf("uncounted succeeded = %v, want %v", got, want)
	}
	if got, want := st.UncountedTerminatedPods.Failed, []types.UID{failed.UID, deleted.UID}; !slices.Equal(got, want) {
		t.Errorf("uncounted failed = %v, want %v", got, want)
	}
	if got, want := uids(plan.removeFinalizer), uids([]*corev1.Pod{newSucceeded, listedWithFinalizer, failed, deleted}); !slices.Equal(got, want) {
		t.Errorf("finalizers to remove = %v, want %v", got, want)
	}
	if plan.withFinalizer.Has(alreadyRemoved.UID) || plan.withFinalizer.Has(counted.UID) || !plan.withFinalizer.Has(running.UID) {
		t.Errorf("withFinalizer = %v", sets.List(plan.withFinalizer))
	}

	// The finalizers go; the second step counts them and empties the lists.
	for _, p := range plan.removeFinalizer {
		plan.withFinalizer.Delete(p.UID)
	}
	if !countRemovedFinalizers(&job.Status, plan.withFinalizer) {
		t.Fatal("nothing counted")
	}
	if st := job.Status; st.Succeeded != 7 || st.Failed != 5 || len(st.UncountedTerminatedPods.Succeeded)+len(st.UncountedTerminatedPods.Failed) != 0 {
		t.Errorf("after removal: %d/%d, uncounted %v", st.Succeeded, st.Failed, st.UncountedTerminatedPods)
	}
}

func TestPlanTrackingWhenFinishing(t *testing.T) {
	t.Run("failing: pods that did not succeed count as failed, the interim condition is added", func(t *testing.T) {
		job := plainJob(ptr.To[int32](5), 2)
		job.Spec.BackoffLimit = ptr.To[int32](0)
		failed, running := exited(newPod(corev1.PodFailed), 1, t0), newPod(corev1.PodRunning)
		s := newSyncState(job, []*corev1.Pod{failed, running}, nil, backoffRecord{}, t0)
		s.evaluate(t0)
		plan := s.planTracking(t0)
		if got := job.Status.UncountedTerminatedPods.Failed; !slices.Equal(got, []types.UID{failed.UID, running.UID}) {
			t.Errorf("uncounted failed = %v", got)
		}
		if len(plan.removeFinalizer) != 2 {
			t.Errorf("finalizers to remove: %d", len(plan.removeFinalizer))
		}
		if got := conditionTypes(job); !slices.Equal(got, []batchv1.JobConditionType{batchv1.JobFailureTarget}) {
			t.Errorf("conditions = %v", got)
		}
		if s.finished.Type != batchv1.JobFailed || s.finished.Reason != batchv1.JobReasonBackoffLimitExceeded {
			t.Errorf("heading to %v", s.finished)
		}
		// Pods remain uncounted and terminating: not finished yet.
		if s.finish(t0) {
			t.Error("finished with uncounted pods")
		}
	})
	t.Run("succeeding: pods still running are released, not counted", func(t *testing.T) {
		job := indexedJob(3)
		job.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{{SucceededIndexes: ptr.To("0")}}}
		done, running := podAt(0, corev1.PodSucceeded), podAt(1, corev1.PodRunning)
		s := newSyncState(job, []*corev1.Pod{running, done}, nil, backoffRecord{}, t0)
		s.evaluate(t0)
		plan := s.planTracking(t0)
		if job.Status.CompletedIndexes != "0" || job.Status.Succeeded != 1 {
			t.Errorf("completed %q succeeded %d", job.Status.CompletedIndexes, job.Status.Succeeded)
		}
		// Indexed Jobs count successes by index, never by UID.
		if unc := job.Status.UncountedTerminatedPods; len(unc.Succeeded)+len(unc.Failed) != 0 {
			t.Errorf("uncounted = %v", unc)
		}
		if len(plan.removeFinalizer) != 2 {
			t.Errorf("finalizers to remove: %d", len(plan.removeFinalizer))
		}
		if got := conditionTypes(job); !slices.Equal(got, []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet}) {
			t.Errorf("conditions = %v", got)
		}
		s.terminating = 0
		if !s.finish(t0) {
			t.Fatal("not finished")
		}
		if got := conditionTypes(job); !slices.Equal(got, []batchv1.JobConditionType{batchv1.JobSuccessCriteriaMet, batchv1.JobComplete}) {
			t.Errorf("conditions = %v", got)
		}
		if c := findCondition(job.Status.Conditions, batchv1.JobComplete); c.Reason != batchv1.JobReasonSuccessPolicy || job.Status.CompletionTime == nil {
			t.Errorf("complete = %+v, completionTime %v", c, job.Status.CompletionTime)
		}
	})
	t.Run("at most MaxUncountedPods per sync", func(t *testing.T) {
		job := plainJob(ptr.To[int32](1000), 1000)
		var pods []*corev1.Pod
		for range MaxUncountedPods + 20 {
			pods = append(pods, newPod(corev1.PodSucceeded))
		}
		s := newSyncState(job, pods, nil, backoffRecord{}, t0)
		s.evaluate(t0)
		plan := s.planTracking(t0)
		if !plan.reachedMax || len(plan.removeFinalizer) != MaxUncountedPods || len(job.Status.UncountedTerminatedPods.Succeeded) != MaxUncountedPods {
			t.Errorf("reachedMax %v, %d removals, %d uncounted", plan.reachedMax, len(plan.removeFinalizer), len(job.Status.UncountedTerminatedPods.Succeeded))
		}
	})
}

func conditionTypes(job *batchv1.Job) []batchv1.JobConditionType {
	var out []batchv1.JobConditionType
	for _, c := range job.Status.Conditions {
		out = append(out, c.Type)
	}
	return out
}

func TestFinish(t *testing.T) {
	heading := func() *syncState {
		job := plainJob(ptr.To[int32](1), 1)
		job.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{}
		return &syncState{job: job, finished: newCondition(batchv1.JobFailed, corev1.ConditionTrue, "R", "M", t0)}
	}
	s := heading()
	s.job.Status.UncountedTerminatedPods.Failed = []types.UID{"x"}
	if s.finish(t0) {
		t.Error("finished with an uncounted pod")
	}
	s = heading()
	s.terminating = 1
	if s.finish(t0) {
		t.Error("finished with a terminating pod")
	}
	s = heading()
	if !s.finish(t0) || s.job.Status.CompletionTime != nil || findCondition(s.job.Status.Conditions, batchv1.JobFailed) == nil {
		t.Errorf("Failed: %+v", s.job.Status)
	}
	if (&syncState{job: plainJob(nil, 1)}).finish(t0) {
		t.Error("finished without a condition")
	}
}

func TestApplySuspension(t *testing.T) {
	job := plainJob(ptr.To[int32](1), 1)
	job.Status.StartTime = ptr.To(metav1.NewTime(t0.Add(-time.Hour)))
	// Never suspended: nothing to say.
	if r, _ := applySuspension(job, t0, true); r != "" || len(job.Status.Conditions) != 0 {
		t.Fatalf("running job: %q %v", r, job.Status.Conditions)
	}
	job.Spec.Suspend = ptr.To(true)
	if r, m := applySuspension(job, t0, true); r != "Suspended" || m != "Job suspended" || job.Status.StartTime != nil {
		t.Errorf("suspend: %q %q startTime %v", r, m, job.Status.StartTime)
	}
	if r, _ := applySuspension(job, t0, true); r != "" {
		t.Errorf("suspended twice: %q", r)
	}
	job.Spec.Suspend = ptr.To(false)
	later := t0.Add(time.Minute)
	if r, m := applySuspension(job, later, true); r != "Resumed" || m != "Job resumed" || !job.Status.StartTime.Time.Equal(later) {
		t.Errorf("resume: %q %q startTime %v", r, m, job.Status.StartTime)
	}
	c := findCondition(job.Status.Conditions, batchv1.JobSuspended)
	if c.Status != corev1.ConditionFalse || c.Reason != "JobResumed" || c.Message != "Job resumed" {
		t.Errorf("condition %+v", c)
	}
}

func TestActivePodsForRemoval(t *testing.T) {
	job := indexedJob(3)
	ready := func(p *corev1.Pod) *corev1.Pod {
		p.Spec.NodeName = "n"
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		return p
	}
	keep0 := ready(podAt(0, corev1.PodRunning))
	dup0 := podAt(0, corev1.PodPending)
	out := podAt(5, corev1.PodRunning)
	noIndex := newPod(corev1.PodRunning)
	one := podAt(1, corev1.PodRunning)
	got := activePodsForRemoval(job, []*corev1.Pod{keep0, one, dup0, out, noIndex}, 0)
	if want := uids([]*corev1.Pod{dup0, out, noIndex}); !slices.Equal(uids(got), want) {
		t.Errorf("indexed: %v, want %v", uids(got), want)
	}
	// Not indexed: the least valuable first.
	plain := plainJob(ptr.To[int32](3), 3)
	a, b, c := ready(newPod(corev1.PodRunning)), newPod(corev1.PodPending), ready(newPod(corev1.PodRunning))
	c.Spec.NodeName = ""
	got = activePodsForRemoval(plain, []*corev1.Pod{a, b, c}, 2)
	if want := []types.UID{b.UID, c.UID}; len(got) != 2 || !slices.Equal([]types.UID{got[0].UID, got[1].UID}, want) {
		t.Errorf("plain: %v, want the unscheduled ones, pending first", uids(got))
	}
	// Newer first; unlike ReplicaSets, the deletion cost does not matter.
	older := withAnnotation(newPod(corev1.PodRunning), "controller.kubernetes.io/pod-deletion-cost", "-100")
	older.CreationTimestamp = metav1.NewTime(t0.Add(-2 * time.Hour))
	newer := newPod(corev1.PodRunning)
	if got := activePodsForRemoval(plain, []*corev1.Pod{older, newer}, 1); len(got) != 1 || got[0] != newer {
		t.Errorf("removed %v, want the newer pod", uids(got))
	}
}

func TestPodForJob(t *testing.T) {
	job := indexedJob(3)
	job.Spec.BackoffLimitPerIndex = ptr.To[int32](2)
	job.Spec.Template.Finalizers = []string{"example.com/keep"}
	replaced := withAnnotation(podAt(1, corev1.PodFailed), batchv1.JobIndexFailureCountAnnotation, "1")
	p := podForJob(job, 1, replaced)
	if p.GenerateName != "job-1-" || p.Spec.Hostname != "job-1" {
		t.Errorf("names %q %q", p.GenerateName, p.Spec.Hostname)
	}
	if p.Labels[batchv1.JobCompletionIndexAnnotation] != "1" || p.Annotations[batchv1.JobCompletionIndexAnnotation] != "1" {
		t.Errorf("index label/annotation %v %v", p.Labels, p.Annotations)
	}
	if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "2" {
		t.Errorf("failure count %q, want 2", p.Annotations[batchv1.JobIndexFailureCountAnnotation])
	}
	if !slices.Equal(p.Finalizers, []string{"example.com/keep", batchv1.JobTrackingFinalizer}) {
		t.Errorf("finalizers %v", p.Finalizers)
	}
	if ref := metav1.GetControllerOf(p); ref == nil || ref.UID != job.UID || ref.Kind != "Job" || !ptr.Deref(ref.BlockOwnerDeletion, false) {
		t.Errorf("controller %+v", ref)
	}
	env := p.Spec.Containers[0].Env
	if len(env) != 1 || env[0].Name != "JOB_COMPLETION_INDEX" || env[0].ValueFrom.FieldRef.FieldPath != "metadata.labels['batch.kubernetes.io/job-completion-index']" {
		t.Errorf("env %+v", env)
	}
	if len(job.Spec.Template.Spec.Containers[0].Env) != 0 || job.Spec.Template.Labels[batchv1.JobCompletionIndexAnnotation] != "" {
		t.Error("the Job's template was modified")
	}
	// An ignored failure is tracked separately.
	job.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
		Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}},
	}}}
	p = podForJob(job, 1, withCondition(replaced, corev1.DisruptionTarget))
	if p.Annotations[batchv1.JobIndexFailureCountAnnotation] != "1" || p.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] != "1" {
		t.Errorf("ignored failure: %v", p.Annotations)
	}
	plain := podForJob(plainJob(ptr.To[int32](1), 1), unknownCompletionIndex, nil)
	if plain.GenerateName != "job-" || plain.Spec.Hostname != "" || len(plain.Annotations) != 0 {
		t.Errorf("plain pod %+v", plain.ObjectMeta)
	}
}

func TestGenerateNameWithIndex(t *testing.T) {
	long := "a-very-long-job-name-that-goes-on-and-on-and-on-and-on-x"
	got := generateNameWithIndex(long, 12345)
	if len(got) != maxGeneratedNameLength || got[len(got)-7:] != "-12345-" {
		t.Errorf("%q (%d)", got, len(got))
	}
	if got := generateNameWithIndex("short", 3); got != "short-3-" {
		t.Errorf("%q", got)
	}
}

func TestPodsWithDelayedDeletion(t *testing.T) {
	job := indexedJob(4)
	job.Spec.BackoffLimitPerIndex = ptr.To[int32](3)
	older := withAnnotation(exited(podAt(0, corev1.PodFailed), 1, t0.Add(-time.Minute)), batchv1.JobIndexFailureCountAnnotation, "0")
	latest := withAnnotation(exited(podAt(0, corev1.PodFailed), 1, t0), batchv1.JobIndexFailureCountAnnotation, "1")
	replaced := exited(podAt(1, corev1.PodFailed), 1, t0) // index 1 runs again
	running := podAt(1, corev1.PodRunning)
	succeededIx := exited(podAt(2, corev1.PodFailed), 1, t0)
	s := newSyncState(job, []*corev1.Pod{older, latest, replaced, running, succeededIx}, nil, backoffRecord{}, t0)
	s.job.Status.CompletedIndexes = "2"
	s.evaluate(t0)
	got := s.delayedDeletion
	if len(got) != 1 || got[0] != latest {
		t.Errorf("delayed = %v, want index 0's latest failure only", got)
	}
	if s.canRemoveFinalizer(latest, true) || !s.canRemoveFinalizer(older, true) || !s.canRemoveFinalizer(replaced, true) {
		t.Error("only the pod the replacement inherits from keeps its finalizer")
	}
}
