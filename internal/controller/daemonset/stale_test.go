package daemonset_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/daemonset"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/staleness"
)

var _ = Describe("daemonset-controller's stale-cache guard (StaleControllerConsistencyDaemonSet)", func() {
	restart := func(args []string, overrides ...setup.Override) {
		GinkgoHelper()
		env.RestartManager([]string{daemonset.ControllerName}, append([]string{"--kube-api-qps=200", "--kube-api-burst=300"}, args...), overrides...)
	}
	AfterEach(func() { restart(nil) })

	It("follows --feature-gates, on by default", func() {
		var on bool
		record := setup.OverrideFor[daemonset.Reconciler](daemonset.ControllerName, func(r *daemonset.Reconciler) { on = r.Stale != nil })
		restart(nil, record)
		Expect(on).To(BeTrue())
		restart([]string{"--feature-gates=StaleControllerConsistencyDaemonSet=false"}, record)
		Expect(on).To(BeFalse())
	})

	It("skips syncs while the pod cache is behind its own creations, counts them, and never wedges", func() {
		ctx := context.Background()
		// A pod cache that never reports a version past the one it had.
		restart(nil, setup.OverrideFor[daemonset.Reconciler](daemonset.ControllerName, func(r *daemonset.Reconciler) {
			r.Stale = staleness.NewGuard(daemonset.DaemonSetSkips(), map[schema.GroupResource]func() string{
				{Resource: "pods"}: func() string { return "1" },
			})
		}))
		before, err := staleness.Skipped("daemonset_controller", "pods")
		Expect(err).NotTo(HaveOccurred())
		ns, pool := env.Namespace(ctx, "ds"), newPool()
		createNode(ctx, nodeName("stale"), pool)
		ds := newDaemonSet(ns, "behind", pool)
		Expect(env.Client.Create(ctx, ds)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(livePods(ctx, g, ns)).To(HaveLen(1))
			got := &appsv1.DaemonSet{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ds), got)).To(Succeed())
			g.Expect(got.Status.CurrentNumberScheduled).To(BeEquivalentTo(1))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}).Should(Succeed())
		after, err := staleness.Skipped("daemonset_controller", "pods")
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(BeNumerically(">", before), "no sync was skipped")
	})
})
