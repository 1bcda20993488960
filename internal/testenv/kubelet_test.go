package testenv_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("the kubelet stand-ins", func() {
	It("registers a Ready node without the not-ready taint admission gives it, shaped by the options", func(ctx SpecContext) {
		taint := corev1.Taint{Key: "example.com/dedicated", Value: "db", Effect: corev1.TaintEffectNoSchedule}
		capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4"), corev1.ResourcePods: resource.MustParse("110")}
		address := corev1.NodeAddress{Type: corev1.NodeInternalIP, Address: "10.1.0.7"}
		n := env.Node(ctx, "shaped", testenv.NodeLabels(map[string]string{"zone": "a"}), testenv.NodeTaints(taint),
			testenv.NodeAddresses(address), testenv.NodeCapacity(capacity), testenv.NodePodCIDRs("10.244.7.0/24"))
		env.Cleanup(n)

		got := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "shaped"}, got)).To(Succeed())
		Expect(got.Labels).To(HaveKeyWithValue("zone", "a"))
		Expect(got.Spec.Taints).To(ConsistOf(HaveField("Key", taint.Key)))
		Expect(got.Spec.PodCIDRs).To(Equal([]string{"10.244.7.0/24"}))
		Expect(got.Status.Addresses).To(Equal([]corev1.NodeAddress{address}))
		Expect(got.Status.Capacity.Cpu().String()).To(Equal("4"))
		Expect(got.Status.Allocatable.Pods().String()).To(Equal("110"))
		Expect(got.Status.Conditions).To(ConsistOf(SatisfyAll(
			HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionTrue))))
		Expect(got.ResourceVersion).To(Equal(n.ResourceVersion), "the node returned is the one stored")
	})

	It("leaves a node without a kubelet report without a Ready condition, and reports readiness later", func(ctx SpecContext) {
		n := env.Node(ctx, "silent", testenv.NodeReady(""))
		env.Cleanup(n)
		Expect(n.Status.Conditions).To(BeEmpty())

		By("a controller's condition written meanwhile stays")
		base := n.DeepCopy()
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeNetworkUnavailable, Status: corev1.ConditionFalse, Reason: "RouteCreated"}}
		Expect(env.Client.Status().Patch(ctx, n, client.MergeFrom(base))).To(Succeed())

		env.SetNodeReady(ctx, n, corev1.ConditionFalse)
		got := &corev1.Node{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "silent"}, got)).To(Succeed())
		Expect(got.Status.Conditions).To(ConsistOf(
			SatisfyAll(HaveField("Type", corev1.NodeReady), HaveField("Status", corev1.ConditionFalse)),
			SatisfyAll(HaveField("Type", corev1.NodeNetworkUnavailable), HaveField("Reason", "RouteCreated"))))
	})

	It("runs a pod, Ready with its IPs, and finishes it keeping the rest of its status", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "kubelet")
		since := time.Now().Add(-time.Hour).Truncate(time.Second)
		p := testenv.NewPod(ns, "web", "node-1")
		env.CreatePod(ctx, p, testenv.RunningSince(true, since, "10.0.0.1", "fd00::1"))

		got := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		Expect(got.Spec.NodeName).To(Equal("node-1"))
		Expect(got.Status.Phase).To(Equal(corev1.PodRunning))
		Expect(got.Status.PodIP).To(Equal("10.0.0.1"))
		Expect(got.Status.PodIPs).To(Equal([]corev1.PodIP{{IP: "10.0.0.1"}, {IP: "fd00::1"}}))
		Expect(got.Status.Conditions).To(ConsistOf(SatisfyAll(HaveField("Type", corev1.PodReady),
			HaveField("Status", corev1.ConditionTrue), HaveField("LastTransitionTime", metav1.NewTime(since)))))
		Expect(p.ResourceVersion).To(Equal(got.ResourceVersion), "p is left as stored")

		By("a stale copy: the stand-in reads the pod again")
		stale := p.DeepCopy()
		env.SetPodStatus(ctx, p, testenv.Running(false))
		env.SetPodStatus(ctx, stale, testenv.Phase(corev1.PodFailed, "Evicted"))
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		Expect(got.Status.Phase).To(Equal(corev1.PodFailed))
		Expect(got.Status.Reason).To(Equal("Evicted"))
		Expect(got.Status.PodIP).To(Equal("10.0.0.1"))
		Expect(got.Status.Conditions).To(ConsistOf(SatisfyAll(HaveField("Type", corev1.PodReady), HaveField("Status", corev1.ConditionFalse))))
	})

	It("creates an unscheduled pod without a status when none is given", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "kubelet")
		p := env.CreatePod(ctx, testenv.NewPod(ns, "pending", ""))
		Expect(p.Spec.NodeName).To(BeEmpty())
		Expect(p.Status.Phase).To(Equal(corev1.PodPending), "as the API server defaults it")
		Expect(p.Status.Conditions).To(BeEmpty())
	})
})
