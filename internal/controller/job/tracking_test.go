package job_test

import (
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/job"
)

func removeFinalizerAsTest(p *corev1.Pod) {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	}})
	Expect(env.Client.Patch(ctx, p.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, patch))).To(Succeed())
}

var _ = Describe("job-controller tracking", func() {
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "job") })

	It("counts every pod exactly once across restarts, whichever step a crash interrupted", func() {
		j := create(newJob(ns, "restart", ptr.To[int32](5), 3))
		pods := waitActive(j, 3)
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Active).To(Equal(int32(3))) }).Should(Succeed())

		// kcm stops. What it would have done before dying: pod 0 succeeded and pod 1 failed
		// were listed in uncountedTerminatedPods; pod 1's finalizer was already removed,
		// pod 0's not yet. Pod 2 succeeded unseen.
		stopSuiteManager()
		succeed(&pods[0])
		fail(&pods[1], 1)
		succeed(&pods[2])
		removeFinalizerAsTest(&pods[1])
		cur := &batchv1.Job{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(j), cur)).To(Succeed())
		before := cur.DeepCopy()
		cur.Status.UncountedTerminatedPods = &batchv1.UncountedTerminatedPods{
			Succeeded: []types.UID{pods[0].UID}, Failed: []types.UID{pods[1].UID},
		}
		Expect(env.Client.Status().Patch(ctx, cur, client.MergeFrom(before))).To(Succeed())

		// kcm comes back, wired by the registry with its production settings.
		Expect(env.StartManager([]string{job.ControllerName})).To(Succeed())
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			startSuiteManager()
		})
		Eventually(func(g Gomega) {
			st := getJob(g, j).Status
			g.Expect(st.Succeeded).To(Equal(int32(2)))
			g.Expect(st.Failed).To(Equal(int32(1)))
			g.Expect(st.UncountedTerminatedPods.Succeeded).To(BeEmpty())
			g.Expect(st.UncountedTerminatedPods.Failed).To(BeEmpty())
			g.Expect(st.Active).To(Equal(int32(3)))
			for _, p := range pods {
				g.Expect(podNamed(g, ns, p.Name).Finalizers).To(BeEmpty(), p.Name)
			}
		}).Should(Succeed())
		next := waitActive(j, 3)
		Consistently(func(g Gomega) {
			st := getJob(g, j).Status
			g.Expect(st.Succeeded).To(Equal(int32(2)))
			g.Expect(st.Failed).To(Equal(int32(1)))
		}, time.Second).Should(Succeed())

		// A plain restart mid-job: pods finish while kcm is down.
		Expect(env.StopManager()).To(Succeed())
		for i := range next {
			succeed(&next[i])
		}
		Expect(env.StartManager([]string{job.ControllerName})).To(Succeed())
		done := expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		Expect(done.Status.Succeeded).To(Equal(int32(5)))
		Expect(done.Status.Failed).To(Equal(int32(1)))
		expectNoFinalizers(j)
		Consistently(func(g Gomega) { g.Expect(allPods(g, j)).To(HaveLen(6)) }, time.Second).Should(Succeed())
	})

	It("ignores a Job managed by another controller, and its pods' finalizers", func() {
		j := newJob(ns, "elsewhere", ptr.To[int32](1), 1)
		j.Spec.ManagedBy = ptr.To("example.com/other-controller")
		create(j)
		// The other controller's pod, with the tracking finalizer, finished.
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Namespace: ns, GenerateName: "elsewhere-", Labels: j.Spec.Template.Labels,
				Finalizers:      []string{batchv1.JobTrackingFinalizer},
				OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(j, batchv1.SchemeGroupVersion.WithKind("Job"))},
			},
			Spec: j.Spec.Template.Spec,
		}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		succeed(p)
		// The witness: a Job of ours created afterwards in the same namespace gets its pod,
		// so the controller is running and has seen the other Job's pod events by now.
		witness := create(newJob(ns, "witness", ptr.To[int32](1), 1))
		waitActive(witness, 1)
		Consistently(func(g Gomega) {
			cur := getJob(g, j)
			g.Expect(cur.Status).To(Equal(batchv1.JobStatus{}))
			g.Expect(allPods(g, j)).To(HaveLen(1))
			g.Expect(podNamed(g, ns, p.Name).Finalizers).To(ConsistOf(batchv1.JobTrackingFinalizer))
		}, 2*time.Second).Should(Succeed())
		removeFinalizerAsTest(p)
	})

	It("releases the finalizers of pods whose Job was deleted", func() {
		j := create(newJob(ns, "gone", ptr.To[int32](2), 2))
		pods := waitActive(j, 2)
		Expect(env.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		// No garbage collector runs here: the pods stay, but nothing holds them any more.
		Eventually(func(g Gomega) {
			for _, p := range pods {
				cur := podNamed(g, ns, p.Name)
				g.Expect(cur.Finalizers).To(BeEmpty())
				g.Expect(cur.DeletionTimestamp).To(BeNil())
			}
		}).Should(Succeed())
	})

	It("adopts a matching orphan, tracks it with the finalizer and counts it", func() {
		labels := map[string]string{"app": "adopter"}
		orphan := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: labels},
			Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			},
		}
		Expect(env.Client.Create(ctx, orphan)).To(Succeed())
		succeed(orphan)

		j := newJob(ns, "adopter", ptr.To[int32](2), 1)
		j.Spec.ManualSelector = ptr.To(true)
		j.Spec.Selector = &metav1.LabelSelector{MatchLabels: labels}
		create(j)
		Eventually(func(g Gomega) {
			cur := podNamed(g, ns, "orphan")
			g.Expect(metav1.IsControlledBy(cur, j)).To(BeTrue())
			st := getJob(g, j).Status
			g.Expect(st.Succeeded).To(Equal(int32(1)))
			g.Expect(cur.Finalizers).To(BeEmpty(), "counted, then released")
		}).Should(Succeed())
		var others []corev1.Pod
		Eventually(func(g Gomega) {
			list := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, list, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
			others = nil
			for _, p := range list.Items {
				if p.Name != "orphan" && p.DeletionTimestamp == nil && p.Status.Phase != corev1.PodSucceeded && p.Status.Phase != corev1.PodFailed {
					others = append(others, p)
				}
			}
			g.Expect(others).To(HaveLen(1))
		}).Should(Succeed())
		succeed(&others[0])
		done := expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		Expect(done.Status.Succeeded).To(Equal(int32(2)))
	})
})
