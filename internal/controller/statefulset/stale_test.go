package statefulset_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcm/kcm/internal/controller/statefulset"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/staleness"
)

var _ = Describe("statefulset-controller's stale-cache guard (StaleControllerConsistencyStatefulSet)", func() {
	controllers := []string{statefulset.ControllerName, "garbage-collector-controller"}
	restart := func(args []string, overrides ...setup.Override) {
		GinkgoHelper()
		env.RestartManager(controllers, append([]string{"--kube-api-qps=200", "--kube-api-burst=300"}, args...), overrides...)
	}
	AfterEach(func() { restart(nil) })

	It("follows --feature-gates, on by default", func() {
		var on bool
		record := setup.OverrideFor[statefulset.Reconciler](statefulset.ControllerName, func(r *statefulset.Reconciler) { on = r.Stale != nil })
		restart(nil, record)
		Expect(on).To(BeTrue())
		restart([]string{"--feature-gates=StaleControllerConsistencyStatefulSet=false"}, record)
		Expect(on).To(BeFalse())
	})

	It("skips syncs while the pod cache is behind its own creations, counts them, and never wedges", func() {
		ctx := context.Background()
		// A pod cache that never reports a version past the one it had.
		restart(nil, setup.OverrideFor[statefulset.Reconciler](statefulset.ControllerName, func(r *statefulset.Reconciler) {
			r.Stale = staleness.NewGuard(statefulset.StatefulSetSkips(), map[schema.GroupResource]func() string{
				{Resource: "pods"}: func() string { return "1" },
			})
		}))
		before, err := staleness.Skipped("statefulset_controller", "pods")
		Expect(err).NotTo(HaveOccurred())
		ns := env.Namespace(ctx, "sts")
		set := newStatefulSet(ns, "behind", 2)
		set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(podNames(pods(ctx, g, ns))).To(ConsistOf("behind-0", "behind-1"))
			got := getSet(ctx, g, ns, "behind")
			g.Expect(got.Status.Replicas).To(BeEquivalentTo(2))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
		}).Should(Succeed())
		after, err := staleness.Skipped("statefulset_controller", "pods")
		Expect(err).NotTo(HaveOccurred())
		Expect(after).To(BeNumerically(">", before), "no sync was skipped")
	})
})
