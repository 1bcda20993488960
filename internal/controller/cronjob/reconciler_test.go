package cronjob_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var _ = Describe("cronjob-controller", func() {
	var ns string
	BeforeEach(func(ctx context.Context) { ns = env.Namespace(ctx, "cronjob") })

	It("starts a due run: the Job named after the minute, from the template, controlled by the CronJob, and reports it", func(ctx context.Context) {
		scheduled := nextRun()
		before := skewHistogram().GetSampleCount()
		cj := createCronJob(ctx, newCronJob(ns, "report", "* * * * *", func(cj *batchv1.CronJob) {
			cj.Spec.TimeZone = new("Asia/Kolkata")
			cj.Spec.JobTemplate.Labels = map[string]string{"team": "billing"}
			cj.Spec.JobTemplate.Annotations = map[string]string{"owner": "ops"}
			cj.Spec.JobTemplate.Spec.BackoffLimit = new(int32(2))
		}))
		name := jobNameFor("report", scheduled)

		Eventually(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(Equal([]string{name}))
		}).Should(Succeed())
		j := getJob(ctx, Default, ns, name)
		Expect(j.Annotations).To(HaveKeyWithValue(batchv1.CronJobScheduledTimestampAnnotation, scheduled.In(mustLoad("Asia/Kolkata")).Format(time.RFC3339)))
		Expect(j.Annotations[batchv1.CronJobScheduledTimestampAnnotation]).To(HaveSuffix("+05:30"))
		Expect(j.Annotations).To(HaveKeyWithValue("owner", "ops"))
		Expect(j.Labels).To(HaveKeyWithValue("team", "billing"))
		Expect(*j.Spec.BackoffLimit).To(Equal(int32(2)))
		Expect(metav1.IsControlledBy(j, cj)).To(BeTrue())
		Expect(j.OwnerReferences[0].BlockOwnerDeletion).To(HaveValue(BeTrue()))
		// The creation is observed, as upstream, with its skew from the schedule time.
		Eventually(func() uint64 { return skewHistogram().GetSampleCount() }).Should(BeNumerically(">", before))

		Eventually(func(g Gomega) {
			c := getCronJob(ctx, g, cj)
			st := c.Status
			g.Expect(activeNames(c)).To(Equal([]string{name}))
			g.Expect(st.Active[0].UID).To(Equal(j.UID))
			g.Expect(st.Active[0].Kind).To(Equal("Job"))
			g.Expect(st.LastScheduleTime).NotTo(BeNil())
			g.Expect(st.LastScheduleTime.Time).To(BeTemporally("==", scheduled))
			g.Expect(st.LastSuccessfulTime).To(BeNil())
			g.Expect(notes(ctx, g, ns, "report", "SuccessfulCreate")).To(ConsistOf("Created job " + name))
		}).Should(Succeed())

		By("the Job completing: it leaves status.active, its completion is the last success")
		done := time.Now().Truncate(time.Second)
		updateJobStatus(ctx, ns, name, markComplete(done))
		Eventually(func(g Gomega) {
			st := getCronJob(ctx, g, cj).Status
			g.Expect(st.Active).To(BeEmpty())
			g.Expect(st.LastSuccessfulTime).NotTo(BeNil())
			g.Expect(st.LastSuccessfulTime.Time).To(BeTemporally("==", done))
			g.Expect(st.LastScheduleTime.Time).To(BeTemporally("==", scheduled))
			g.Expect(notes(ctx, g, ns, "report", "SawCompletedJob")).To(ConsistOf("Saw completed job: " + name + ", condition: Complete"))
		}).Should(Succeed())
		// One run per schedule time, however often the CronJob is synced.
		Expect(jobNames(ctx, Default, ns)).To(Equal([]string{name}))
	})

	It("wakes itself up at the next schedule time, without any event", func(ctx context.Context) {
		first := nextRun()
		cj := createCronJob(ctx, newCronJob(ns, "tick", "* * * * *"))
		Eventually(func(g Gomega) {
			g.Expect(activeNames(getCronJob(ctx, g, cj))).To(Equal([]string{jobNameFor("tick", first)}))
		}).Should(Succeed())

		// Three seconds before the next minute, the finished Job makes the controller look
		// once more: nothing is due, so it must come back by itself at the minute.
		second := first.Add(time.Minute)
		clk.jumpTo(second.Add(-3 * time.Second))
		dueReal := time.Now().Add(3 * time.Second)
		updateJobStatus(ctx, ns, jobNameFor("tick", first), markComplete(time.Now().Truncate(time.Second)))
		Eventually(func(g Gomega) {
			g.Expect(getCronJob(ctx, g, cj).Status.Active).To(BeEmpty())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(Equal([]string{jobNameFor("tick", first)}))
		}).WithTimeout(time.Until(dueReal.Add(-500 * time.Millisecond))).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(ContainElement(jobNameFor("tick", second)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		j := getJob(ctx, Default, ns, jobNameFor("tick", second))
		// creationTimestamp has whole seconds.
		Expect(j.CreationTimestamp.Time).To(BeTemporally(">=", dueReal.Add(-time.Second)))
	})

	It("Forbid: skips the run while a Job is active, starts it once that Job is done", func(ctx context.Context) {
		first := nextRun()
		cj := createCronJob(ctx, newCronJob(ns, "forbid", "* * * * *", func(cj *batchv1.CronJob) {
			cj.Spec.ConcurrencyPolicy = batchv1.ForbidConcurrent
		}))
		firstJob := jobNameFor("forbid", first)
		Eventually(func(g Gomega) {
			g.Expect(activeNames(getCronJob(ctx, g, cj))).To(Equal([]string{firstJob}))
		}).Should(Succeed())

		second := nextRun()
		// The Job starting makes the controller look again, now past the next run.
		updateJobStatus(ctx, ns, firstJob, markStarted(time.Now()))
		Eventually(func(g Gomega) {
			g.Expect(notes(ctx, g, ns, "forbid", "JobAlreadyActive")).To(ConsistOf(
				"Not starting job because prior execution is running and concurrency policy is Forbid"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(Equal([]string{firstJob}))
			g.Expect(activeNames(getCronJob(ctx, g, cj))).To(Equal([]string{firstJob}))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		updateJobStatus(ctx, ns, firstJob, markComplete(time.Now().Truncate(time.Second)))
		Eventually(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(ConsistOf(firstJob, jobNameFor("forbid", second)))
			c := getCronJob(ctx, g, cj)
			g.Expect(activeNames(c)).To(Equal([]string{jobNameFor("forbid", second)}))
			st := c.Status
			g.Expect(st.LastScheduleTime.Time).To(BeTemporally("==", second))
		}).Should(Succeed())
	})

	It("Replace: deletes the active Job and starts the new one", func(ctx context.Context) {
		first := nextRun()
		cj := createCronJob(ctx, newCronJob(ns, "replace", "* * * * *", func(cj *batchv1.CronJob) {
			cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent
		}))
		firstJob := jobNameFor("replace", first)
		Eventually(func(g Gomega) {
			g.Expect(activeNames(getCronJob(ctx, g, cj))).To(Equal([]string{firstJob}))
		}).Should(Succeed())

		second := nextRun()
		secondJob := jobNameFor("replace", second)
		updateJobStatus(ctx, ns, firstJob, markStarted(time.Now()))
		Eventually(func(g Gomega) {
			g.Expect(isGone(ctx, ns, firstJob)).To(BeTrue())
			g.Expect(jobNames(ctx, g, ns)).To(Equal([]string{secondJob}))
			c := getCronJob(ctx, g, cj)
			g.Expect(activeNames(c)).To(Equal([]string{secondJob}))
			st := c.Status
			g.Expect(st.LastScheduleTime.Time).To(BeTemporally("==", second))
			g.Expect(notes(ctx, g, ns, "replace", "SuccessfulDelete")).To(ConsistOf("Deleted job " + firstJob))
			g.Expect(notes(ctx, g, ns, "replace", "SuccessfulCreate")).To(ConsistOf("Created job "+firstJob, "Created job "+secondJob))
		}).Should(Succeed())
	})

	It("Allow: runs the next Job beside the active one", func(ctx context.Context) {
		first := nextRun()
		cj := createCronJob(ctx, newCronJob(ns, "allow", "* * * * *"))
		firstJob := jobNameFor("allow", first)
		Eventually(func(g Gomega) {
			g.Expect(activeNames(getCronJob(ctx, g, cj))).To(Equal([]string{firstJob}))
		}).Should(Succeed())

		second := nextRun()
		updateJobStatus(ctx, ns, firstJob, markStarted(time.Now()))
		Eventually(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(ConsistOf(firstJob, jobNameFor("allow", second)))
			g.Expect(activeNames(getCronJob(ctx, g, cj))).To(ConsistOf(firstJob, jobNameFor("allow", second)))
		}).Should(Succeed())
		Expect(events(ctx, Default, ns, "allow", "SuccessfulDelete")).To(BeEmpty())
	})

	It("suspend: starts nothing; resumed, starts the run it missed", func(ctx context.Context) {
		cj := createCronJob(ctx, newCronJob(ns, "paused", "* * * * *", func(cj *batchv1.CronJob) {
			cj.Spec.Suspend = new(true)
		}))
		scheduled := nextRun()
		// Any sync of the suspended CronJob would do: a label change makes one.
		Eventually(func(g Gomega) {
			c := getCronJob(ctx, g, cj)
			c.Labels = map[string]string{"poke": "1"}
			g.Expect(env.Client.Update(ctx, c)).To(Succeed())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(BeEmpty())
			g.Expect(getCronJob(ctx, g, cj).Status.LastScheduleTime).To(BeNil())
		}).WithTimeout(3 * time.Second).Should(Succeed())

		Eventually(func(g Gomega) {
			c := getCronJob(ctx, g, cj)
			c.Spec.Suspend = new(false)
			g.Expect(env.Client.Update(ctx, c)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(Equal([]string{jobNameFor("paused", scheduled)}))
		}).Should(Succeed())
	})

	It("deletes the oldest finished Jobs beyond the history limits", func(ctx context.Context) {
		cj := createCronJob(ctx, newCronJob(ns, "hist", "* * * * *", func(cj *batchv1.CronJob) {
			cj.Spec.Suspend = new(true)
			cj.Spec.SuccessfulJobsHistoryLimit = new(int32(2))
			cj.Spec.FailedJobsHistoryLimit = new(int32(1))
		}))
		// Earlier runs, as the controller would have made them.
		base := time.Now().Truncate(time.Second).Add(-time.Hour)
		finish := map[string]func(*batchv1.Job){
			"hist-ok-1":   markComplete(base.Add(1 * time.Minute)),
			"hist-ok-2":   markComplete(base.Add(2 * time.Minute)),
			"hist-ok-3":   markComplete(base.Add(3 * time.Minute)),
			"hist-ok-4":   markComplete(base.Add(4 * time.Minute)),
			"hist-fail-1": markFailed(base.Add(1 * time.Minute)),
			"hist-fail-2": markFailed(base.Add(2 * time.Minute)),
			"hist-run":    markStarted(base),
		}
		for name := range finish {
			j := &batchv1.Job{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name,
					OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}},
				Spec: *cj.Spec.JobTemplate.Spec.DeepCopy(),
			}
			Expect(env.Client.Create(ctx, j)).To(Succeed())
		}
		for name, f := range finish {
			updateJobStatus(ctx, ns, name, f)
		}

		Eventually(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(ConsistOf("hist-ok-3", "hist-ok-4", "hist-fail-2", "hist-run"))
			g.Expect(notes(ctx, g, ns, "hist", "SuccessfulDelete")).To(ConsistOf(
				"Deleted job hist-ok-1", "Deleted job hist-ok-2", "Deleted job hist-fail-1"))
			// The successes count even though the CronJob never listed them as active.
			st := getCronJob(ctx, g, cj).Status
			g.Expect(st.LastSuccessfulTime).NotTo(BeNil())
			g.Expect(st.LastSuccessfulTime.Time).To(BeTemporally("==", base.Add(4*time.Minute)))
		}).Should(Succeed())
		Expect(isGone(ctx, ns, "hist-ok-1")).To(BeTrue())
	})

	It("warns once about too many missed start times and starts only the latest", func(ctx context.Context) {
		// Suspended until the controller has been "down" for more than 100 minutes.
		cj := createCronJob(ctx, newCronJob(ns, "late", "* * * * *", func(cj *batchv1.CronJob) {
			cj.Spec.Suspend = new(true)
		}))
		clk.jumpTo(clk.Now().Truncate(time.Minute).Add(150*time.Minute + 5*time.Second))
		scheduled := clk.Now().Truncate(time.Minute)
		Eventually(func(g Gomega) {
			c := getCronJob(ctx, g, cj)
			c.Spec.Suspend = new(false)
			g.Expect(env.Client.Update(ctx, c)).To(Succeed())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(notes(ctx, g, ns, "late", "TooManyMissedTimes")).To(ConsistOf(
				"too many missed start times. Set or decrease .spec.startingDeadlineSeconds or check clock skew"))
			g.Expect(events(ctx, g, ns, "late", "TooManyMissedTimes")[0].Type).To(Equal("Warning"))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(jobNames(ctx, g, ns)).To(Equal([]string{jobNameFor("late", scheduled)}))
		}).WithTimeout(2 * time.Second).Should(Succeed())
	})

	It("reports a schedule that never fires, starts nothing and does not retry", func(ctx context.Context) {
		// The API accepts 30 February: it parses. Only the controller finds it never comes.
		cj := createCronJob(ctx, newCronJob(ns, "never", "0 0 30 2 *"))
		var first metav1.MicroTime
		Eventually(func(g Gomega) {
			evs := events(ctx, g, ns, "never", "InvalidSchedule")
			g.Expect(evs).To(HaveLen(1))
			g.Expect(evs[0].Type).To(Equal("Warning"))
			g.Expect(evs[0].Note).To(Equal("invalid schedule: 0 0 30 2 * : time difference between two schedules is less than 1 second"))
			first = evs[0].EventTime
		}).Should(Succeed())
		// A retry would repeat the Event, which the recorder counts on the same Event
		// (core/v1 Events, as upstream's).
		Consistently(func(g Gomega) {
			evs := events(ctx, g, ns, "never", "InvalidSchedule")
			g.Expect(evs).To(HaveLen(1))
			g.Expect(evs[0].Series).To(BeNil())
			g.Expect(evs[0].DeprecatedCount).To(BeNumerically("<=", 1))
			g.Expect(evs[0].EventTime).To(Equal(first))
			g.Expect(jobNames(ctx, g, ns)).To(BeEmpty())
			st := getCronJob(ctx, g, cj).Status
			g.Expect(st.Active).To(BeEmpty())
			g.Expect(st.LastScheduleTime).To(BeNil())
		}).WithTimeout(3 * time.Second).Should(Succeed())
	})
})

func mustLoad(name string) *time.Location {
	loc, err := time.LoadLocation(name)
	Expect(err).NotTo(HaveOccurred())
	return loc
}
