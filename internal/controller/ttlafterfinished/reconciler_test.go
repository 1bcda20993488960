package ttlafterfinished_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("ttl-after-finished-controller", func() {
	var ns string
	BeforeEach(func(ctx context.Context) {
		ns = env.Namespace(ctx, "ttl")
	})

	newJob := func(ctx context.Context, name string, ttl *int32) *batchv1.Job {
		j := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
			Spec: batchv1.JobSpec{
				TTLSecondsAfterFinished: ttl,
				Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
				}},
			},
		}
		Expect(env.Client.Create(ctx, j)).To(Succeed())
		return j
	}
	// finish plays the job-controller: the Job completes (or fails) at time at, which the
	// API keeps in whole seconds.
	finish := func(ctx context.Context, j *batchv1.Job, at time.Time, failed bool) {
		t := metav1.NewTime(at)
		Eventually(func(g Gomega) {
			cur := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur)).To(Succeed())
			cur.Status.StartTime = &t
			if failed {
				cur.Status.Failed = 1
				cur.Status.Conditions = []batchv1.JobCondition{
					{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, LastTransitionTime: t},
					{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, LastTransitionTime: t},
				}
			} else {
				cur.Status.Succeeded = 1
				cur.Status.CompletionTime = &t
				cur.Status.Conditions = []batchv1.JobCondition{
					{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: t},
					{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: t},
				}
			}
			g.Expect(env.Client.Status().Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
	}
	exists := func(ctx context.Context, j *batchv1.Job) func(g Gomega) {
		return func(g Gomega) {
			cur := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur)).To(Succeed())
			g.Expect(cur.DeletionTimestamp).To(BeNil())
		}
	}
	gone := func(ctx context.Context, j *batchv1.Job) func(g Gomega) {
		return func(g Gomega) {
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), &batchv1.Job{})
			g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "Job still there: %v", err)
		}
	}
	// deleted: the controller deleted the Job (the garbage collector may still be finishing
	// the foreground deletion).
	deleted := func(ctx context.Context, j *batchv1.Job) func(g Gomega) {
		return func(g Gomega) {
			cur := &batchv1.Job{}
			err := env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur)
			if apierrors.IsNotFound(err) {
				return
			}
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(cur.DeletionTimestamp).NotTo(BeNil(), "Job not deleted")
		}
	}
	setTTL := func(ctx context.Context, j *batchv1.Job, ttl int32) {
		Eventually(func(g Gomega) {
			cur := &batchv1.Job{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur)).To(Succeed())
			cur.Spec.TTLSecondsAfterFinished = &ttl
			g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
	}

	It("deletes a completed Job its TTL after it finished, not before", func(ctx context.Context) {
		j := newJob(ctx, "done", new(int32(2)))
		finishedAt := time.Now().Truncate(time.Second)
		finish(ctx, j, finishedAt, false)
		expiry := finishedAt.Add(2 * time.Second)
		before := deletionHistogram()

		Consistently(exists(ctx, j)).WithTimeout(time.Until(expiry.Add(-200 * time.Millisecond))).Should(Succeed())
		Eventually(deleted(ctx, j)).WithTimeout(time.Until(expiry.Add(5 * time.Second))).Should(Succeed())
		Expect(time.Now()).To(BeTemporally(">=", expiry))
		// The deletion is observed, as upstream, with how long after its expiry it came.
		Eventually(func() uint64 { return deletionHistogram().GetSampleCount() }).Should(BeNumerically(">", before.GetSampleCount()))
		Expect(deletionHistogram().GetSampleSum()).To(BeNumerically(">=", before.GetSampleSum()))
		// A Job without pods: the garbage collector finishes the foreground deletion at once.
		Eventually(gone(ctx, j)).Should(Succeed())
	})

	It("deletes an expired Job in the foreground: the Job stays until its pods are gone", func(ctx context.Context) {
		j := newJob(ctx, "with-pod", new(int32(1)))
		// The Job's pod, as job-controller makes it; a finalizer of the test's (the kubelet's
		// part) keeps it after the garbage collector deletes it.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "with-pod-0", Finalizers: []string{"example.com/kubelet"},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: j.Name, UID: j.UID,
					Controller: new(true), BlockOwnerDeletion: new(true)}}},
			Spec: j.Spec.Template.Spec,
		}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		finish(ctx, j, time.Now().Truncate(time.Second), false)

		By("the Job deleted with Foreground propagation, and its pod deleted by the garbage collector")
		Eventually(func(g Gomega) {
			cur := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur)).To(Succeed())
			g.Expect(cur.DeletionTimestamp).NotTo(BeNil())
		}).Should(Succeed())
		cur := &batchv1.Job{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur)).To(Succeed(), "the Job must stay while its pod exists")
		Expect(cur.DeletionTimestamp).NotTo(BeNil())
		Expect(cur.Finalizers).To(ContainElement(metav1.FinalizerDeleteDependents))

		By("the pod gone: then the Job goes")
		Eventually(func(g Gomega) {
			cur := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), cur)).To(Succeed())
			cur.Finalizers = nil
			g.Expect(env.Client.Update(ctx, cur)).To(Succeed())
		}).Should(Succeed())
		Eventually(gone(ctx, j)).Should(Succeed())
	})

	It("deletes a failed Job too", func(ctx context.Context) {
		j := newJob(ctx, "failed", new(int32(1)))
		finish(ctx, j, time.Now().Truncate(time.Second), true)
		Eventually(deleted(ctx, j)).WithTimeout(8 * time.Second).Should(Succeed())
	})

	It("keeps a finished Job without a TTL and an unfinished Job with one", func(ctx context.Context) {
		noTTL := newJob(ctx, "no-ttl", nil)
		finish(ctx, noTTL, time.Now().Add(-time.Hour), false)
		running := newJob(ctx, "running", new(int32(0)))
		Consistently(func(g Gomega) {
			exists(ctx, noTTL)(g)
			exists(ctx, running)(g)
		}).WithTimeout(3 * time.Second).Should(Succeed())

		// The controller was watching all along: the same Job, finished, goes at once.
		finish(ctx, running, time.Now().Truncate(time.Second), false)
		Eventually(deleted(ctx, running)).WithTimeout(5 * time.Second).Should(Succeed())
		exists(ctx, noTTL)(Default)
	})

	It("honours a TTL lowered after the Job finished", func(ctx context.Context) {
		j := newJob(ctx, "lowered", new(int32(3600)))
		finish(ctx, j, time.Now().Truncate(time.Second), false)
		Consistently(exists(ctx, j)).WithTimeout(2 * time.Second).Should(Succeed())
		setTTL(ctx, j, 1)
		Eventually(deleted(ctx, j)).WithTimeout(5 * time.Second).Should(Succeed())
	})

	It("honours a TTL raised before it expired", func(ctx context.Context) {
		j := newJob(ctx, "raised", new(int32(3)))
		finishedAt := time.Now().Truncate(time.Second)
		finish(ctx, j, finishedAt, false)
		setTTL(ctx, j, 3600)
		// Past the first expiry, when the controller had planned to come back.
		Consistently(exists(ctx, j)).WithTimeout(time.Until(finishedAt.Add(5 * time.Second))).Should(Succeed())

		// Lowered to a TTL already expired: it goes.
		setTTL(ctx, j, 2)
		Eventually(deleted(ctx, j)).WithTimeout(5 * time.Second).Should(Succeed())
	})
})
