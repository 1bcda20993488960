package job_test

import (
	"context"
	"slices"
	"sort"
	"time"

	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var ctx = context.Background()

// newJob is a Job running "c" pods that never restart in place.
func newJob(ns, name string, completions *int32, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.JobSpec{
			Completions: completions,
			Parallelism: ptr.To(parallelism),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
}

func indexed(j *batchv1.Job) *batchv1.Job {
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return j
}

func create(j *batchv1.Job) *batchv1.Job {
	Expect(env.Client.Create(ctx, j)).To(Succeed())
	return j
}

func getJob(g Gomega, j *batchv1.Job) *batchv1.Job {
	cur := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur)).To(Succeed())
	return cur
}

// updateJob changes the Job's spec, retrying on conflicts.
func updateJob(j *batchv1.Job, change func(*batchv1.Job)) {
	Eventually(func() error {
		cur := &batchv1.Job{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur); err != nil {
			return err
		}
		change(cur)
		return env.Client.Update(ctx, cur)
	}).Should(Succeed())
}

// allPods lists the Job's pods, including terminated and deleted ones still readable.
func allPods(g Gomega, j *batchv1.Job) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(j.Namespace), client.MatchingLabels{batchv1.JobNameLabel: j.Name})).To(Succeed())
	sort.Slice(list.Items, func(a, b int) bool {
		return list.Items[a].CreationTimestamp.Before(&list.Items[b].CreationTimestamp) ||
			list.Items[a].CreationTimestamp.Equal(&list.Items[b].CreationTimestamp) && list.Items[a].Name < list.Items[b].Name
	})
	return list.Items
}

// activePods are the Job's pods neither finished nor being deleted.
func activePods(g Gomega, j *batchv1.Job) []corev1.Pod {
	var out []corev1.Pod
	for _, p := range allPods(g, j) {
		if p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
			out = append(out, p)
		}
	}
	return out
}

// waitActive waits until the Job has exactly n active pods and returns them.
func waitActive(j *batchv1.Job, n int) []corev1.Pod {
	var pods []corev1.Pod
	Eventually(func(g Gomega) {
		pods = activePods(g, j)
		g.Expect(pods).To(HaveLen(n))
	}).Should(Succeed())
	return pods
}

// finishPod plays the kubelet: container "c" terminated with exitCode, the pod in phase,
// extra conditions added. The finish time is the next whole second, so that a backoff
// counted from it (times are stored in seconds) is never shorter than intended.
func finishPod(p *corev1.Pod, phase corev1.PodPhase, exitCode int32, conds ...corev1.PodCondition) time.Time {
	now := time.Now()
	finished := metav1.NewTime(now.Truncate(time.Second).Add(time.Second))
	Eventually(func() error {
		cur := &corev1.Pod{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(p), cur); err != nil {
			return err
		}
		cur.Status.Phase = phase
		cur.Status.ContainerStatuses = []corev1.ContainerStatus{{
			Name: "c", Image: "registry.k8s.io/pause:3.10",
			State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
				ExitCode: exitCode, StartedAt: metav1.NewTime(now.Add(-time.Second)), FinishedAt: finished,
			}},
		}}
		cur.Status.Conditions = append([]corev1.PodCondition{{
			Type: corev1.PodReady, Status: corev1.ConditionFalse, LastTransitionTime: finished,
		}}, conds...)
		return env.Client.Status().Update(ctx, cur)
	}).Should(Succeed())
	return now
}

func succeed(p *corev1.Pod) time.Time { return finishPod(p, corev1.PodSucceeded, 0) }
func fail(p *corev1.Pod, exitCode int32) time.Time {
	return finishPod(p, corev1.PodFailed, exitCode)
}

func conditionTypes(j *batchv1.Job) []batchv1.JobConditionType {
	var out []batchv1.JobConditionType
	for _, c := range j.Status.Conditions {
		if c.Status == corev1.ConditionTrue {
			out = append(out, c.Type)
		}
	}
	return out
}

func condition(j *batchv1.Job, t batchv1.JobConditionType) *batchv1.JobCondition {
	for i := range j.Status.Conditions {
		if j.Status.Conditions[i].Type == t {
			return &j.Status.Conditions[i]
		}
	}
	return nil
}

// expectFinishedWith waits for the Job's terminal condition and checks that the interim
// one came first, both with reason.
func expectFinishedWith(j *batchv1.Job, interim, terminal batchv1.JobConditionType, reason string) *batchv1.Job {
	var cur *batchv1.Job
	Eventually(func(g Gomega) {
		cur = getJob(g, j)
		g.Expect(conditionTypes(cur)).To(Equal([]batchv1.JobConditionType{interim, terminal}))
	}).Should(Succeed())
	Expect(condition(cur, interim).Reason).To(Equal(reason))
	Expect(condition(cur, terminal).Reason).To(Equal(reason))
	Expect(condition(cur, interim).Message).To(Equal(condition(cur, terminal).Message))
	Expect(cur.Status.Active).To(BeZero())
	Expect(cur.Status.UncountedTerminatedPods).To(SatisfyAny(BeNil(), Equal(&batchv1.UncountedTerminatedPods{})))
	return cur
}

// expectNoFinalizers checks that no pod of the Job still holds the tracking finalizer.
func expectNoFinalizers(j *batchv1.Job) {
	Eventually(func(g Gomega) {
		for _, p := range allPods(g, j) {
			g.Expect(p.Finalizers).NotTo(ContainElement(batchv1.JobTrackingFinalizer), p.Name)
		}
	}).Should(Succeed())
}

// eventReasons lists the reasons of the Events about the Job, oldest first, a reason once
// per occurrence: the Events are core/v1 ones, as upstream's, so a repeated Event is one
// object whose count grows.
func eventReasons(g Gomega, j *batchv1.Job) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(j.Namespace))).To(Succeed())
	slices.SortFunc(list.Items, func(a, b eventsv1.Event) int {
		return a.DeprecatedFirstTimestamp.Compare(b.DeprecatedFirstTimestamp.Time)
	})
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Kind == "Job" && e.Regarding.Name == j.Name && e.ReportingController == "job-controller" {
			for range max(1, e.DeprecatedCount) {
				out = append(out, e.Reason)
			}
		}
	}
	return out
}

func eventNotes(g Gomega, j *batchv1.Job, reason string) []string {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(j.Namespace))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.Regarding.Name == j.Name && e.Reason == reason {
			out = append(out, e.Note)
		}
	}
	return out
}

func countOf(items []string, s string) int {
	n := 0
	for _, i := range items {
		if i == s {
			n++
		}
	}
	return n
}

func podNamed(g Gomega, ns, name string) *corev1.Pod {
	p := &corev1.Pod{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p)).To(Succeed())
	return p
}
