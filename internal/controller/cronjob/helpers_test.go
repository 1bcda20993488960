package cronjob_test

import (
	"context"
	"fmt"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// nextRun moves the clock to 5 seconds past a whole minute at least a minute ahead of both
// the shifted and the real time, and returns that minute: a "* * * * *" CronJob created
// before the jump is due for it, and the next run is 55 seconds away.
func nextRun() time.Time {
	b := clk.Now().Truncate(time.Minute).Add(2 * time.Minute)
	clk.jumpTo(b.Add(5 * time.Second))
	return b
}

func jobNameFor(cj string, scheduled time.Time) string {
	return fmt.Sprintf("%s-%d", cj, scheduled.Unix()/60)
}

func newCronJob(ns, name, schedule string, mods ...func(*batchv1.CronJob)) *batchv1.CronJob {
	cj := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: batchv1.CronJobSpec{
			Schedule: schedule,
			JobTemplate: batchv1.JobTemplateSpec{
				Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				}}},
			},
		},
	}
	for _, m := range mods {
		m(cj)
	}
	return cj
}

// createCronJob creates the CronJob and deletes it when the spec ends, so that it does not
// run on as the clock jumps in later specs.
func createCronJob(ctx context.Context, cj *batchv1.CronJob) *batchv1.CronJob {
	Expect(env.Client.Create(ctx, cj)).To(Succeed())
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, cj))).To(Succeed())
	})
	return cj
}

func getCronJob(ctx context.Context, g Gomega, cj *batchv1.CronJob) *batchv1.CronJob {
	out := &batchv1.CronJob{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(cj), out)).To(Succeed())
	return out
}

// jobNames lists the names of the Jobs of a namespace not being deleted, sorted.
func jobNames(ctx context.Context, g Gomega, ns string) []string {
	list := &batchv1.JobList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var names []string
	for _, j := range list.Items {
		if j.DeletionTimestamp == nil {
			names = append(names, j.Name)
		}
	}
	slices.Sort(names)
	return names
}

func getJob(ctx context.Context, g Gomega, ns, name string) *batchv1.Job {
	j := &batchv1.Job{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, j)).To(Succeed())
	return j
}

func activeNames(cj *batchv1.CronJob) []string {
	var names []string
	for _, r := range cj.Status.Active {
		names = append(names, r.Name)
	}
	slices.Sort(names)
	return names
}

// updateJobStatus plays the job-controller: it changes a Job's status, retrying conflicts.
func updateJobStatus(ctx context.Context, ns, name string, change func(*batchv1.Job)) {
	Eventually(func(g Gomega) {
		j := getJob(ctx, g, ns, name)
		change(j)
		g.Expect(env.Client.Status().Update(ctx, j)).To(Succeed())
	}).Should(Succeed())
}

func markStarted(at time.Time) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		if j.Status.StartTime == nil {
			j.Status.StartTime = &metav1.Time{Time: at}
		}
	}
}

// markComplete finishes a Job successfully at time at (whole seconds: what the API keeps).
func markComplete(at time.Time) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		markStarted(at)(j)
		t := metav1.NewTime(at)
		j.Status.CompletionTime = &t
		j.Status.Succeeded = 1
		j.Status.Conditions = append(j.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: t},
			batchv1.JobCondition{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
}

func markFailed(at time.Time) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		markStarted(at)(j)
		t := metav1.NewTime(at)
		j.Status.Failed = 1
		j.Status.Conditions = append(j.Status.Conditions,
			batchv1.JobCondition{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: t},
			batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: t})
	}
}

// events lists the Events about the named object with the given reason.
func events(ctx context.Context, g Gomega, ns, regarding, reason string) []eventsv1.Event {
	list := &eventsv1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []eventsv1.Event
	for _, e := range list.Items {
		if e.Regarding.Name == regarding && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

// notes are the notes of the Events about the object with the reason.
func notes(ctx context.Context, g Gomega, ns, regarding, reason string) []string {
	var out []string
	for _, e := range events(ctx, g, ns, regarding, reason) {
		g.Expect(e.ReportingController).To(Equal("cronjob-controller"))
		out = append(out, e.Note)
	}
	return out
}

func isGone(ctx context.Context, ns, name string) bool {
	err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, &batchv1.Job{})
	return apierrors.IsNotFound(err)
}
