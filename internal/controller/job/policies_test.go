package job_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// podOfIndex waits for the active pod of an index other than those named in not.
func podOfIndex(j *batchv1.Job, ix string, not ...string) corev1.Pod {
	var found corev1.Pod
	Eventually(func(g Gomega) {
		found = corev1.Pod{}
		for _, p := range activePods(g, j) {
			if p.Annotations[batchv1.JobCompletionIndexAnnotation] == ix {
				found = p
			}
		}
		g.Expect(found.Name).NotTo(BeEmpty())
		g.Expect(not).NotTo(ContainElement(found.Name))
	}).Should(Succeed())
	return found
}

var disruption = corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}

var _ = Describe("job-controller policies", func() {
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "job") })

	It("applies podFailurePolicy: Ignore does not count, Count counts, FailJob fails the Job", func() {
		j := newJob(ns, "pfp", ptr.To[int32](1), 1)
		j.Spec.BackoffLimit = ptr.To[int32](5)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionIgnore, OnPodConditions: []batchv1.PodFailurePolicyOnPodConditionsPattern{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue},
			}},
			{Action: batchv1.PodFailurePolicyActionFailJob, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				ContainerName: ptr.To("c"), Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42},
			}},
			{Action: batchv1.PodFailurePolicyActionCount, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpNotIn, Values: []int32{42},
			}},
		}}
		create(j)

		// Disrupted: ignored, replaced, not counted.
		p1 := waitActive(j, 1)[0]
		finishPod(&p1, corev1.PodFailed, 137, disruption)
		p2 := podOfIndex(j, "", p1.Name)
		Consistently(func(g Gomega) { g.Expect(getJob(g, j).Status.Failed).To(BeZero()) }, 500*time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(podNamed(g, ns, p1.Name).Finalizers).To(BeEmpty()) }).Should(Succeed())

		// Exit code 1: counted.
		fail(&p2, 1)
		p3 := podOfIndex(j, "", p1.Name, p2.Name)
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Failed).To(Equal(int32(1))) }).Should(Succeed())

		// Exit code 42: the Job fails at once, whatever backoffLimit says.
		fail(&p3, 42)
		done := expectFinishedWith(j, batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonPodFailurePolicy)
		want := fmt.Sprintf("Container c for pod %s/%s failed with exit code 42 matching FailJob rule at index 1", ns, p3.Name)
		Expect(condition(done, batchv1.JobFailed).Message).To(Equal(want))
		Expect(done.Status.Failed).To(Equal(int32(2)))
		expectNoFinalizers(j)
		Eventually(func(g Gomega) { g.Expect(eventNotes(g, j, "PodFailurePolicy")).To(Equal([]string{want})) }).Should(Succeed())
	})

	It("applies podFailurePolicy FailIndex: the index fails at once, the others run on", func() {
		j := indexed(newJob(ns, "failindex", ptr.To[int32](3), 3))
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](2)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{
			{Action: batchv1.PodFailurePolicyActionFailIndex, OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{
				Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{3},
			}},
		}}
		create(j)
		waitActive(j, 3)
		p0 := podOfIndex(j, "0")
		fail(&p0, 3)
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.FailedIndexes).To(HaveValue(Equal("0"))) }).Should(Succeed())
		// Index 1 fails without matching: retried within its own limit.
		p1 := podOfIndex(j, "1")
		fail(&p1, 1)
		retry := podOfIndex(j, "1", p1.Name)
		Expect(retry.Annotations).To(HaveKeyWithValue(batchv1.JobIndexFailureCountAnnotation, "1"))
		Consistently(func(g Gomega) {
			for _, p := range activePods(g, j) {
				g.Expect(p.Annotations[batchv1.JobCompletionIndexAnnotation]).NotTo(Equal("0"))
			}
		}, time.Second).Should(Succeed())
		succeed(&retry)
		p2 := podOfIndex(j, "2")
		succeed(&p2)
		done := expectFinishedWith(j, batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonFailedIndexes)
		Expect(condition(done, batchv1.JobFailed).Message).To(Equal("Job has failed indexes"))
		Expect(done.Status.FailedIndexes).To(HaveValue(Equal("0")))
		Expect(done.Status.CompletedIndexes).To(Equal("1,2"))
		Expect(done.Status.Failed).To(Equal(int32(2)))
		Expect(done.Status.Succeeded).To(Equal(int32(2)))
		expectNoFinalizers(j)
	})

	It("applies backoffLimitPerIndex and maxFailedIndexes", func() {
		j := indexed(newJob(ns, "perindex", ptr.To[int32](4), 4))
		j.Spec.BackoffLimitPerIndex = ptr.To[int32](1)
		j.Spec.MaxFailedIndexes = ptr.To[int32](1)
		create(j)
		waitActive(j, 4)
		p2 := podOfIndex(j, "2")
		succeed(&p2)

		// Index 0: one retry, started after the per-index backoff, then the index fails.
		first := podOfIndex(j, "0")
		failedAt := fail(&first, 1)
		second := podOfIndex(j, "0", first.Name)
		Expect(time.Since(failedAt)).To(BeNumerically(">=", podBackoff))
		Expect(second.Annotations).To(HaveKeyWithValue(batchv1.JobIndexFailureCountAnnotation, "1"))
		// The failed pod kept its finalizer until its replacement existed.
		Eventually(func(g Gomega) { g.Expect(podNamed(g, ns, first.Name).Finalizers).To(BeEmpty()) }).Should(Succeed())
		fail(&second, 1)
		Eventually(func(g Gomega) {
			st := getJob(g, j).Status
			g.Expect(st.FailedIndexes).To(HaveValue(Equal("0")))
			g.Expect(st.CompletedIndexes).To(Equal("2"))
			g.Expect(st.Conditions).To(BeEmpty())
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(activePods(g, j)).To(HaveLen(2)) }, 1500*time.Millisecond).Should(Succeed())

		// A second failed index exceeds maxFailedIndexes 1: the Job fails, index 3's pod goes.
		p1 := podOfIndex(j, "1")
		fail(&p1, 1)
		p1 = podOfIndex(j, "1", p1.Name)
		fail(&p1, 1)
		done := expectFinishedWith(j, batchv1.JobFailureTarget, batchv1.JobFailed, batchv1.JobReasonMaxFailedIndexesExceeded)
		Expect(condition(done, batchv1.JobFailed).Message).To(Equal("Job has exceeded the specified maximal number of failed indexes"))
		Expect(done.Status.FailedIndexes).To(HaveValue(Equal("0,1")))
		Expect(done.Status.CompletedIndexes).To(Equal("2"))
		Expect(done.Status.Failed).To(Equal(int32(5)), "four failures and index 3's deleted pod")
		expectNoFinalizers(j)
	})

	It("succeeds by successPolicy before all indexes ran, removing the remaining pods", func() {
		j := indexed(newJob(ns, "policy", ptr.To[int32](5), 5))
		j.Spec.SuccessPolicy = &batchv1.SuccessPolicy{Rules: []batchv1.SuccessPolicyRule{
			{SucceededIndexes: ptr.To("0-2"), SucceededCount: ptr.To[int32](2)},
		}}
		create(j)
		waitActive(j, 5)
		for _, ix := range []string{"1", "4"} {
			p := podOfIndex(j, ix)
			succeed(&p)
		}
		// Only index 1 of 0-2 succeeded: not yet.
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.CompletedIndexes).To(Equal("1,4")) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(getJob(g, j).Status.Conditions).To(BeEmpty()) }, 500*time.Millisecond).Should(Succeed())
		p := podOfIndex(j, "0")
		succeed(&p)
		done := expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonSuccessPolicy)
		Expect(condition(done, batchv1.JobComplete).Message).To(Equal("Matched rules at index 0"))
		Expect(done.Status.CompletedIndexes).To(Equal("0,1,4"))
		Expect(done.Status.Succeeded).To(Equal(int32(3)))
		Expect(done.Status.Failed).To(BeZero(), "pods removed after success are not failures")
		Expect(done.Status.CompletionTime).NotTo(BeNil())
		expectNoFinalizers(j)
		Eventually(func(g Gomega) { g.Expect(activePods(g, j)).To(BeEmpty()) }).Should(Succeed())
	})

	It("with podReplacementPolicy Failed, replaces a deleted pod only once it failed", func() {
		j := newJob(ns, "replace-failed", ptr.To[int32](1), 1)
		j.Spec.PodReplacementPolicy = ptr.To(batchv1.Failed)
		create(j)
		p := waitActive(j, 1)[0]
		Expect(env.Client.Delete(ctx, &p)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Terminating).To(HaveValue(Equal(int32(1)))) }).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(activePods(g, j)).To(BeEmpty())
			g.Expect(getJob(g, j).Status.Failed).To(BeZero())
		}, 1500*time.Millisecond).Should(Succeed())

		fail(&p, 137)
		waitActive(j, 1)
		Eventually(func(g Gomega) {
			st := getJob(g, j).Status
			g.Expect(st.Failed).To(Equal(int32(1)))
			g.Expect(st.Terminating).To(HaveValue(BeZero()))
			g.Expect(st.Active).To(Equal(int32(1)))
		}).Should(Succeed())
	})

	It("with podReplacementPolicy TerminatingOrFailed, counts a deleted pod as failed and replaces it", func() {
		j := create(newJob(ns, "replace-terminating", ptr.To[int32](1), 1))
		p := waitActive(j, 1)[0]
		Expect(env.Client.Delete(ctx, &p)).To(Succeed())
		replacement := podOfIndex(j, "", p.Name)
		Expect(replacement.Name).NotTo(Equal(p.Name))
		Eventually(func(g Gomega) {
			st := getJob(g, j).Status
			g.Expect(st.Failed).To(Equal(int32(1)))
			g.Expect(st.Active).To(Equal(int32(1)))
			// Its finalizer gone, the deleted pod is gone too.
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(&p), &corev1.Pod{})).NotTo(Succeed())
		}).Should(Succeed())
	})
})
