//go:build e2e && linux

package e2e_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("Deployments", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("become Available with 3 replicas, and kubectl rollout status returns", func(ctx SpecContext) {
		Expect(cl.Create(ctx, newDeployment(ns, "web", 3))).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 3)
		expectRolloutStatus(ctx, ns, "web")
		Eventually(ctx, func(g Gomega) {
			pods := livePods(g, ns, map[string]string{"app": "web"})
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s scheduled", p.Name)
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s phase", p.Name)
			}
		}).WithTimeout(time.Minute).Should(Succeed(), "logs in %s", logDir)
	})

	It("roll out an image change: a new ReplicaSet takes over and the old one scales to 0", func(ctx SpecContext) {
		Expect(cl.Create(ctx, newDeployment(ns, "web", 3))).To(Succeed())
		before := waitDeploymentComplete(ctx, ns, "web", 3)

		patch := client.MergeFrom(before.DeepCopy())
		before.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9"
		Expect(cl.Patch(ctx, before, patch)).To(Succeed())
		expectRolloutStatus(ctx, ns, "web")
		waitDeploymentComplete(ctx, ns, "web", 3)

		Eventually(ctx, func(g Gomega) {
			rss := replicaSets(g, ns, map[string]string{"app": "web"})
			g.Expect(rss).To(HaveLen(2))
			var newRS, oldRS *appsv1.ReplicaSet
			for i := range rss {
				if rss[i].Spec.Template.Spec.Containers[0].Image == "registry.k8s.io/pause:3.9" {
					newRS = &rss[i]
				} else {
					oldRS = &rss[i]
				}
			}
			g.Expect(newRS).NotTo(BeNil(), "a ReplicaSet with the new image")
			g.Expect(oldRS).NotTo(BeNil(), "the old ReplicaSet")
			g.Expect(*newRS.Spec.Replicas).To(BeEquivalentTo(3))
			g.Expect(newRS.Status.AvailableReplicas).To(BeEquivalentTo(3))
			g.Expect(*oldRS.Spec.Replicas).To(BeEquivalentTo(0))
			g.Expect(oldRS.Status.Replicas).To(BeEquivalentTo(0))
			pods := livePods(g, ns, map[string]string{"app": "web"})
			g.Expect(pods).To(HaveLen(3))
			for _, p := range pods {
				g.Expect(p.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.9"))
			}
		}).WithTimeout(time.Minute).Should(Succeed(), "logs in %s", logDir)
	})

	It("scale up and down", func(ctx SpecContext) {
		Expect(cl.Create(ctx, newDeployment(ns, "web", 2))).To(Succeed())
		d := waitDeploymentComplete(ctx, ns, "web", 2)

		for _, replicas := range []int32{5, 1} {
			patch := client.MergeFrom(d.DeepCopy())
			d.Spec.Replicas = ptr.To(replicas)
			Expect(cl.Patch(ctx, d, patch)).To(Succeed())
			d = waitDeploymentComplete(ctx, ns, "web", replicas)
			Eventually(ctx, func(g Gomega) {
				g.Expect(livePods(g, ns, map[string]string{"app": "web"})).To(HaveLen(int(replicas)))
				g.Expect(replicaSets(g, ns, map[string]string{"app": "web"})).To(HaveLen(1))
			}).WithTimeout(time.Minute).Should(Succeed(), "scaled to %d; logs in %s", replicas, logDir)
		}
		expectRolloutStatus(ctx, ns, "web")
	})

	It("are garbage collected with their ReplicaSets and pods when deleted", func(ctx SpecContext) {
		d := newDeployment(ns, "web", 3)
		Expect(cl.Create(ctx, d)).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 3)
		Eventually(ctx, func(g Gomega) {
			g.Expect(replicaSets(g, ns, map[string]string{"app": "web"})).To(HaveLen(1))
		}).Should(Succeed())

		Expect(cl.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(replicaSets(g, ns, map[string]string{"app": "web"})).To(BeEmpty(), "ReplicaSets")
			pods := &corev1.PodList{}
			g.Expect(cl.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(BeEmpty(), "pods")
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
	})
})

var _ = Describe("Jobs", func() {
	var ns string
	BeforeEach(func(ctx SpecContext) { ns = newNamespace(ctx) })

	It("complete after 2 completions", func(ctx SpecContext) {
		job := &batchv1.Job{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twice"},
			Spec: batchv1.JobSpec{
				Completions: ptr.To[int32](2),
				Parallelism: ptr.To[int32](2),
				Template:    podTemplate(nil, pauseImage),
			},
		}
		job.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyNever
		Expect(cl.Create(ctx, job)).To(Succeed())
		waitJobComplete(ctx, ns, "twice", 2, 2*time.Minute)
	})

	It("are started by a CronJob every minute, and complete", func(ctx SpecContext) {
		cj := &batchv1.CronJob{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "minutely"},
			Spec: batchv1.CronJobSpec{
				Schedule:          "*/1 * * * *",
				ConcurrencyPolicy: batchv1.ForbidConcurrent,
				JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{
					Template: podTemplate(nil, pauseImage),
				}},
			},
		}
		cj.Spec.JobTemplate.Spec.Template.Spec.RestartPolicy = corev1.RestartPolicyOnFailure
		Expect(cl.Create(ctx, cj)).To(Succeed())

		var jobName string
		Eventually(ctx, func(g Gomega) {
			jobs := &batchv1.JobList{}
			g.Expect(cl.List(ctx, jobs, client.InNamespace(ns))).To(Succeed())
			g.Expect(jobs.Items).NotTo(BeEmpty())
			owner := metav1.GetControllerOf(&jobs.Items[0])
			g.Expect(owner).NotTo(BeNil())
			g.Expect(owner.Name).To(Equal("minutely"))
			jobName = jobs.Items[0].Name
		}).WithTimeout(75*time.Second).WithPolling(time.Second).Should(Succeed(), "a Job of the CronJob; logs in %s", logDir)
		waitJobComplete(ctx, ns, jobName, 1, time.Minute)

		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(cj), cj)).To(Succeed())
			g.Expect(cj.Status.LastScheduleTime).NotTo(BeNil(), "lastScheduleTime")
			g.Expect(cj.Status.LastSuccessfulTime).NotTo(BeNil(), "lastSuccessfulTime")
		}).WithTimeout(30*time.Second).Should(Succeed(), "CronJob status; logs in %s", logDir)
	})
})
