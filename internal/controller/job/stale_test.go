package job_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/staleness"
)

var _ = Describe("job-controller's stale-cache guard (StaleControllerConsistencyJob)", func() {
	restart := func(args []string, overrides ...setup.Override) {
		GinkgoHelper()
		stopSuiteManager()
		Expect(env.StartManagerWith([]string{job.ControllerName}, append(append([]string{}, suiteFlags...), args...), overrides...)).To(Succeed())
	}
	AfterEach(func() {
		stopSuiteManager()
		startSuiteManager()
	})

	It("follows --feature-gates, on by default", func() {
		var on bool
		record := setup.OverrideFor(job.ControllerName, func(r *job.Reconciler) { on = r.Stale != nil })
		restart(nil, record)
		Expect(on).To(BeTrue())
		restart([]string{"--feature-gates=StaleControllerConsistencyJob=false"}, record)
		Expect(on).To(BeFalse())
	})

	It("skips syncs while the pod cache is behind its own creations, counts them, and never wedges", func() {
		// A pod cache that never reports a version past the one it had.
		restart(nil, setup.OverrideFor(job.ControllerName, func(r *job.Reconciler) {
			r.Stale = staleness.NewGuard(job.JobSkips(), map[schema.GroupResource]func() string{
				{Resource: "pods"}: func() string { return "1" },
			})
		}))
		before, err := staleness.Skipped("job_controller", "pods")
		Expect(err).NotTo(HaveOccurred())
		ns := env.Namespace(ctx, "job")
		j := create(newJob(ns, "behind", ptr.To[int32](2), 2))
		Eventually(func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(2))
			g.Expect(getJob(g, j).Status.Active).To(BeEquivalentTo(2))
			// The syncs the pods' arrival brings, within MaxWait of their creation.
			after, err := staleness.Skipped("job_controller", "pods")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(after).To(BeNumerically(">", before), "no sync was skipped")
		}).Should(Succeed())
		By("a later sync running once the guard lets go: the Job's pods failing are counted")
		pods := &corev1.PodList{}
		Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		p := pods.Items[0]
		p.Status.Phase = corev1.PodFailed
		Expect(env.Client.Status().Update(ctx, &p)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Failed).To(BeEquivalentTo(1)) }).Should(Succeed())
	})
})
