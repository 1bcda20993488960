package job_test

import (
	"fmt"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("job-controller", func() {
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "job") })

	It("runs pods to completion, parallelism at a time, counting each once", func() {
		j := create(newJob(ns, "work", ptr.To[int32](4), 2))
		pods := waitActive(j, 2)
		for _, p := range pods {
			Expect(p.GenerateName).To(Equal("work-"))
			Expect(metav1.IsControlledBy(&p, j)).To(BeTrue())
			Expect(p.OwnerReferences[0].BlockOwnerDeletion).To(HaveValue(BeTrue()))
			Expect(p.Finalizers).To(ContainElement(batchv1.JobTrackingFinalizer))
			// The API server put these on the template; the pods inherit them.
			Expect(p.Labels).To(HaveKeyWithValue(batchv1.JobNameLabel, "work"))
			Expect(p.Labels).To(HaveKeyWithValue("job-name", "work"))
			Expect(p.Labels).To(HaveKeyWithValue(batchv1.ControllerUidLabel, string(j.UID)))
			Expect(p.Labels).To(HaveKeyWithValue("controller-uid", string(j.UID)))
			Expect(p.Labels).To(HaveKeyWithValue("app", "work"))
		}
		env.SetPodStatus(ctx, &pods[0], testenv.Running(true))
		Eventually(func(g Gomega) {
			st := getJob(g, j).Status
			g.Expect(st.Active).To(Equal(int32(2)))
			g.Expect(st.Ready).To(HaveValue(Equal(int32(1))))
			g.Expect(st.Terminating).To(HaveValue(BeZero()))
			g.Expect(st.StartTime).NotTo(BeNil())
		}).Should(Succeed())

		succeed(&pods[0])
		succeed(&pods[1])
		var second []corev1.Pod
		Eventually(func(g Gomega) {
			second = activePods(g, j)
			g.Expect(second).To(HaveLen(2))
			st := getJob(g, j).Status
			g.Expect(st.Succeeded).To(Equal(int32(2)))
			g.Expect(st.Ready).To(HaveValue(BeZero()))
		}).Should(Succeed())
		// Counted pods lose the finalizer.
		Eventually(func(g Gomega) {
			for _, p := range pods {
				g.Expect(podNamed(g, ns, p.Name).Finalizers).To(BeEmpty())
			}
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(activePods(g, j)).To(HaveLen(2)) }, time.Second).Should(Succeed())

		succeed(&second[0])
		succeed(&second[1])
		done := expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		Expect(condition(done, batchv1.JobComplete).Message).To(Equal("Reached expected number of succeeded pods"))
		Expect(done.Status.Succeeded).To(Equal(int32(4)))
		Expect(done.Status.Failed).To(BeZero())
		Expect(done.Status.CompletionTime).NotTo(BeNil())
		Expect(done.Status.CompletionTime.Before(done.Status.StartTime)).To(BeFalse())
		expectNoFinalizers(j)
		Eventually(func(g Gomega) {
			reasons := eventReasons(g, j)
			g.Expect(countOf(reasons, "SuccessfulCreate")).To(Equal(4))
			g.Expect(countOf(reasons, "Completed")).To(Equal(1))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(allPods(g, j)).To(HaveLen(4)) }, time.Second).Should(Succeed())
	})

	It("without completions, finishes once one pod succeeded and the others ended", func() {
		j := create(newJob(ns, "any", nil, 3))
		pods := waitActive(j, 3)
		succeed(&pods[0])
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Succeeded).To(Equal(int32(1))) }).Should(Succeed())
		// No replacement, and no completion while two pods run.
		Consistently(func(g Gomega) {
			g.Expect(activePods(g, j)).To(HaveLen(2))
			g.Expect(getJob(g, j).Status.Conditions).To(BeEmpty())
		}, time.Second).Should(Succeed())
		succeed(&pods[1])
		fail(&pods[2], 1)
		done := expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		Expect(done.Status.Succeeded).To(Equal(int32(2)))
		Expect(done.Status.Failed).To(Equal(int32(1)))
		expectNoFinalizers(j)
	})

	It("replaces failed pods after an exponential backoff, then fails at the backoff limit", func() {
		j := newJob(ns, "flaky", ptr.To[int32](1), 1)
		j.Spec.BackoffLimit = ptr.To[int32](3)
		create(j)

		// Each failure delays the replacement: 1s, 2s, then 2s again (the cap), where
		// doubling would wait 4s.
		var gaps []time.Duration
		p := waitActive(j, 1)[0]
		for i := range 3 {
			failedAt := fail(&p, 1)
			var next corev1.Pod
			Eventually(func(g Gomega) {
				pods := activePods(g, j)
				g.Expect(pods).To(HaveLen(1))
				next = pods[0]
			}).Should(Succeed())
			gaps = append(gaps, time.Since(failedAt))
			Expect(next.Name).NotTo(Equal(p.Name))
			Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Failed).To(Equal(int32(i + 1))) }).Should(Succeed())
			p = next
		}
		GinkgoWriter.Printf("replacement delays: %v\n", gaps)
		Expect(gaps[0]).To(BeNumerically(">=", podBackoff))
		Expect(gaps[1]).To(BeNumerically(">=", 2*podBackoff))
		Expect(gaps[2]).To(BeNumerically(">=", maxPodBackoff))
		Expect(gaps[2]).To(BeNumerically("<", 4*podBackoff), "the delay is capped")

		// The fourth failure exceeds backoffLimit 3.
		fail(&p, 1)
		done := expectFinishedWith(j, batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonBackoffLimitExceeded)
		Expect(condition(done, batchv1.JobFailed).Message).To(Equal("Job has reached the specified backoff limit"))
		Expect(done.Status.Failed).To(Equal(int32(4)))
		Expect(done.Status.Succeeded).To(BeZero())
		Expect(done.Status.CompletionTime).To(BeNil())
		expectNoFinalizers(j)
		Consistently(func(g Gomega) { g.Expect(allPods(g, j)).To(HaveLen(4)) }, time.Second).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventNotes(g, j, "BackoffLimitExceeded")).To(Equal([]string{"Job has reached the specified backoff limit"}))
		}).Should(Succeed())
	})

	It("fails the Job at activeDeadlineSeconds, deleting its running pods", func() {
		j := newJob(ns, "slow", ptr.To[int32](3), 2)
		j.Spec.ActiveDeadlineSeconds = ptr.To[int64](3)
		create(j)
		pods := waitActive(j, 2)
		started := time.Now()
		done := expectFinishedWith(j, batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonDeadlineExceeded)
		elapsed := time.Since(started)
		GinkgoWriter.Printf("failed %v after the pods were seen\n", elapsed)
		Expect(done.Status.StartTime).NotTo(BeNil())
		Expect(condition(done, batchv1.JobFailureTarget).LastTransitionTime.Sub(done.Status.StartTime.Time)).To(BeNumerically(">=", 3*time.Second))
		Expect(elapsed).To(BeNumerically("<", 10*time.Second))
		// The running pods were deleted and count as failed.
		Expect(done.Status.Failed).To(Equal(int32(2)))
		Eventually(func(g Gomega) {
			for _, p := range pods {
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), &corev1.Pod{})).NotTo(Succeed())
			}
			g.Expect(eventNotes(g, j, "DeadlineExceeded")).To(Equal([]string{"Job was active longer than specified deadline"}))
			g.Expect(countOf(eventReasons(g, j), "SuccessfulDelete")).To(Equal(2))
		}).Should(Succeed())
	})

	It("suspends and resumes: pods deleted without counting, Suspended condition, startTime reset", func() {
		j := newJob(ns, "pausable", ptr.To[int32](4), 2)
		j.Spec.Suspend = ptr.To(true)
		create(j)
		Eventually(func(g Gomega) {
			cur := getJob(g, j)
			c := condition(cur, batchv1.JobSuspended)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(corev1.ConditionTrue))
			g.Expect(c.Reason).To(Equal("JobSuspended"))
			g.Expect(c.Message).To(Equal("Job suspended"))
			g.Expect(cur.Status.StartTime).To(BeNil())
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(allPods(g, j)).To(BeEmpty()) }, time.Second).Should(Succeed())

		updateJob(j, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(false) })
		pods := waitActive(j, 2)
		var firstStart metav1.Time
		Eventually(func(g Gomega) {
			cur := getJob(g, j)
			c := condition(cur, batchv1.JobSuspended)
			g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("JobResumed"))
			g.Expect(c.Message).To(Equal("Job resumed"))
			g.Expect(cur.Status.StartTime).NotTo(BeNil())
			g.Expect(cur.Status.Active).To(Equal(int32(2)))
			firstStart = *cur.Status.StartTime
		}).Should(Succeed())
		succeed(&pods[0])
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Succeeded).To(Equal(int32(1))) }).Should(Succeed())
		waitActive(j, 2)

		updateJob(j, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(true) })
		Eventually(func(g Gomega) {
			g.Expect(activePods(g, j)).To(BeEmpty())
			cur := getJob(g, j)
			g.Expect(condition(cur, batchv1.JobSuspended).Status).To(Equal(corev1.ConditionTrue))
			g.Expect(cur.Status.Active).To(BeZero())
			g.Expect(cur.Status.StartTime).To(BeNil())
			// Deleted for the suspension, not failed.
			g.Expect(cur.Status.Failed).To(BeZero())
			g.Expect(cur.Status.Succeeded).To(Equal(int32(1)))
			g.Expect(allPods(g, j)).To(HaveLen(1))
		}).Should(Succeed())

		// startTime has a resolution of seconds: resume once the clock is in a later second.
		Eventually(func() time.Time { return time.Now().Truncate(time.Second) }).Should(BeTemporally(">", firstStart.Time))
		updateJob(j, func(j *batchv1.Job) { j.Spec.Suspend = ptr.To(false) })
		waitActive(j, 2)
		Eventually(func(g Gomega) {
			cur := getJob(g, j)
			g.Expect(condition(cur, batchv1.JobSuspended).Status).To(Equal(corev1.ConditionFalse))
			g.Expect(cur.Status.StartTime).NotTo(BeNil())
			g.Expect(cur.Status.StartTime.After(firstStart.Time)).To(BeTrue())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			reasons := eventReasons(g, j)
			g.Expect(countOf(reasons, "Suspended")).To(Equal(2))
			g.Expect(countOf(reasons, "Resumed")).To(Equal(2))
			g.Expect(countOf(reasons, "SuccessfulDelete")).To(Equal(2))
		}).Should(Succeed())
	})

	It("runs an Indexed Job: one pod per index, completedIndexes in compressed form", func() {
		j := create(indexed(newJob(ns, "idx", ptr.To[int32](5), 5)))
		pods := waitActive(j, 5)
		byIndex := map[int]corev1.Pod{}
		for _, p := range pods {
			ix, err := strconv.Atoi(p.Annotations[batchv1.JobCompletionIndexAnnotation])
			Expect(err).NotTo(HaveOccurred())
			Expect(p.Labels).To(HaveKeyWithValue(batchv1.JobCompletionIndexAnnotation, strconv.Itoa(ix)))
			Expect(p.Spec.Hostname).To(Equal(fmt.Sprintf("idx-%d", ix)))
			Expect(p.GenerateName).To(Equal(fmt.Sprintf("idx-%d-", ix)))
			Expect(p.Spec.Containers[0].Env).To(ContainElement(corev1.EnvVar{
				Name: "JOB_COMPLETION_INDEX",
				ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
					APIVersion: "v1", FieldPath: "metadata.labels['batch.kubernetes.io/job-completion-index']",
				}},
			}))
			byIndex[ix] = p
		}
		Expect(byIndex).To(HaveLen(5))

		for _, ix := range []int{0, 2, 3} {
			p := byIndex[ix]
			succeed(&p)
		}
		Eventually(func(g Gomega) {
			st := getJob(g, j).Status
			g.Expect(st.CompletedIndexes).To(Equal("0,2,3"))
			g.Expect(st.Succeeded).To(Equal(int32(3)))
		}).Should(Succeed())

		// A failed index gets a new pod with the same index.
		p := byIndex[1]
		fail(&p, 1)
		var again corev1.Pod
		Eventually(func(g Gomega) {
			for _, q := range activePods(g, j) {
				if q.Annotations[batchv1.JobCompletionIndexAnnotation] == "1" {
					again = q
				}
			}
			g.Expect(again.Name).NotTo(BeEmpty())
			g.Expect(again.Name).NotTo(Equal(p.Name))
		}).Should(Succeed())
		p = byIndex[4]
		succeed(&p)
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.CompletedIndexes).To(Equal("0,2-4")) }).Should(Succeed())
		succeed(&again)
		done := expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		Expect(done.Status.CompletedIndexes).To(Equal("0-4"))
		Expect(done.Status.Succeeded).To(Equal(int32(5)))
		Expect(done.Status.Failed).To(Equal(int32(1)))
		Expect(done.Status.FailedIndexes).To(BeNil())
		expectNoFinalizers(j)
	})
})

var _ = Describe("job-controller at scale", func() {
	It("runs 100 pods at once to completion, counting each exactly once", func() {
		ns := env.Namespace(ctx, "job")
		j := create(newJob(ns, "wide", ptr.To[int32](100), 100))
		start := time.Now()
		pods := waitActive(j, 100)
		created := time.Since(start)
		start = time.Now()
		for i := range pods {
			succeed(&pods[i])
		}
		marked := time.Since(start)
		start = time.Now()
		done := expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		counted := time.Since(start)
		GinkgoWriter.Printf("100 pods: created in %v; the test marked them succeeded in %v; Complete %v later\n", created, marked, counted)
		Expect(done.Status.Succeeded).To(Equal(int32(100)))
		Expect(done.Status.Failed).To(BeZero())
		expectNoFinalizers(j)
		Consistently(func(g Gomega) { g.Expect(allPods(g, j)).To(HaveLen(100)) }, time.Second).Should(Succeed())
	})
})
