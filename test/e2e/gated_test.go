//go:build e2e && linux

package e2e_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/cluster"
)

// Two controllers of issue 20 run only behind feature gates that are off by default in
// v1.37, as upstream: podgroup-protection-controller (GenericWorkload, beta) and
// resourcepoolstatusrequest-controller (DRAResourcePoolStatus, alpha). The cluster's API
// server serves their APIs (apiServerGates); kcm runs them only when its own --feature-gates
// says so. The spec that turns them on restarts the suite's kcm, so the container is Serial;
// kcm gets kubeadm's arguments again afterwards.
var _ = Describe("gated workload controllers", Serial, func() {
	const (
		podGroupProtection = "podgroup-protection-controller"
		poolStatus         = "resourcepoolstatusrequest-controller"
		gates              = "GenericWorkload=true,DRAResourcePoolStatus=true"
		finalizer          = "scheduling.k8s.io/podgroup-protection"
	)

	It("are left out under kubeadm's arguments, their gates off, as upstream says", func(ctx SpecContext) {
		// The last kcm started has kubeadm's arguments, whichever spec ran before: its set-up
		// controllers include resourceclaim-controller (DynamicResourceAllocation is on).
		Eventually(ctx, func() []string { return controllersSetUp(kcm.LogPath) }).WithTimeout(time.Minute).Should(And(
			ContainElement("resourceclaim-controller"), Not(ContainElement(podGroupProtection)), Not(ContainElement(poolStatus))))
		disabled := logMessages(kcm.LogPath, "Controller is disabled by a feature gate")
		Expect(disabled).To(ContainElement(disabledByGates(podGroupProtection, "GenericWorkload")))
		Expect(disabled).To(ContainElement(disabledByGates(poolStatus, "DRAResourcePoolStatus")))
	})

	It("run under kubeadm's identity with --feature-gates="+gates, func(ctx SpecContext) {
		forbidden := len(forbiddenLines(kcm.LogPath))
		By("restarting kcm with kubeadm's arguments and --feature-gates=" + gates)
		restartKCM(ctx, "--feature-gates="+gates)
		DeferCleanup(func(ctx SpecContext) {
			By("restarting kcm with kubeadm's arguments")
			restartKCM(ctx)
		})
		Eventually(ctx, func() []string { return controllersSetUp(kcm.LogPath) }).WithTimeout(time.Minute).
			Should(And(ContainElement(podGroupProtection), ContainElement(poolStatus)), "%s", kcm.State())

		By("a deleted PodGroup stays while an active pod names it, and goes once the pod does")
		ns := newNamespace(ctx)
		group := newPodGroup(ctx, ns, "gang")
		Expect(group.Finalizers).To(ContainElement(finalizer), "stamped by the API server's PodGroupProtection admission")
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "member"},
			Spec:       podTemplate(nil, pauseImage).Spec,
		}
		pod.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group.Name)}
		Expect(cl.Create(ctx, pod)).To(Succeed())
		Eventually(ctx, func(g Gomega) corev1.PodPhase {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
			return pod.Status.Phase
		}).WithTimeout(time.Minute).Should(Equal(corev1.PodRunning), "scheduled, and run by kwok")
		// An unused PodGroup deleted after the first: its release witnesses that the controller
		// has seen both deletions, so the first one's finalizer is kept on purpose.
		witness := newPodGroup(ctx, ns, "witness")
		Expect(cl.Delete(ctx, group)).To(Succeed())
		Expect(cl.Delete(ctx, witness)).To(Succeed())
		Eventually(ctx, podGroupGone(ctx, witness)).WithTimeout(time.Minute).Should(BeTrue(), "the unused PodGroup is released")
		Consistently(ctx, func(g Gomega) []string {
			got := &schedulingv1beta1.PodGroup{}
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(group), got)).To(Succeed())
			g.Expect(got.DeletionTimestamp).NotTo(BeNil())
			return got.Finalizers
		}).WithTimeout(3*time.Second).Should(ContainElement(finalizer), "held by its running pod")
		Expect(cl.Delete(ctx, pod)).To(Succeed())
		Eventually(ctx, podGroupGone(ctx, group)).WithTimeout(time.Minute).Should(BeTrue(), "released once its pod is gone")

		By("a ResourcePoolStatusRequest is answered from the driver's published ResourceSlices and allocated claims")
		const driver = "pool-status.e2e.kcm.test"
		node := cluster.NodeName(0)
		devs := []resourcev1.Device{{Name: "dev-0"}, {Name: "dev-1"}, {Name: "dev-2",
			Taints: []resourcev1.DeviceTaint{{Key: "broken", Effect: resourcev1.DeviceTaintEffectNoSchedule}}}}
		publishSlice(ctx, driver, "pool-a", node, 2, devs[:2])
		publishSlice(ctx, driver, "pool-a", node, 2, devs[2:])
		publishSlice(ctx, "other.e2e.kcm.test", "pool-a", node, 1, []resourcev1.Device{{Name: "dev-0"}})
		claim := &resourcev1.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "allocated"},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "pool-status.e2e.kcm.test",
					AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: 1}}}}},
		}
		Expect(cl.Create(ctx, claim)).To(Succeed())
		// The test plays the scheduler, which writes the allocation.
		claim.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{
			Results: []resourcev1.DeviceRequestAllocationResult{{Request: "dev", Driver: driver, Pool: "pool-a", Device: "dev-0"}}}}
		Expect(cl.Status().Update(ctx, claim)).To(Succeed())

		request := &resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-"},
			Spec: resourcev1alpha3.ResourcePoolStatusRequestSpec{Driver: driver}}
		Expect(cl.Create(ctx, request)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, request))).To(Succeed()) })
		Eventually(ctx, func(g Gomega) {
			got := &resourcev1alpha3.ResourcePoolStatusRequest{}
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(request), got)).To(Succeed())
			g.Expect(got.Status).NotTo(BeNil())
			g.Expect(got.Status.PoolCount).To(HaveValue(BeEquivalentTo(1)))
			g.Expect(got.Status.Pools).To(HaveExactElements(And(
				HaveField("PoolName", "pool-a"), HaveField("NodeName", HaveValue(Equal(node))), HaveField("Generation", int64(1)),
				HaveField("ResourceSliceCount", HaveValue(BeEquivalentTo(2))), HaveField("TotalDevices", HaveValue(BeEquivalentTo(3))),
				HaveField("AllocatedDevices", HaveValue(BeEquivalentTo(1))), HaveField("AvailableDevices", HaveValue(BeEquivalentTo(1))),
				HaveField("UnavailableDevices", HaveValue(BeEquivalentTo(1))), HaveField("ValidationError", BeNil()))))
			g.Expect(got.Status.Conditions).To(ConsistOf(And(
				HaveField("Type", resourcev1alpha3.ResourcePoolStatusRequestConditionComplete), HaveField("Status", metav1.ConditionTrue),
				HaveField("Reason", "CalculationComplete"), HaveField("Message", "Calculated status for 1 pools"))))
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)

		Expect(forbiddenLines(kcm.LogPath)).To(HaveLen(forbidden), "no request of the gated controllers refused, in %s", kcm.LogPath)
	})
})

// newPodGroup creates a PodGroup of the basic scheduling policy.
func newPodGroup(ctx context.Context, ns, name string) *schedulingv1beta1.PodGroup {
	GinkgoHelper()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}},
	}
	Expect(cl.Create(ctx, pg)).To(Succeed())
	return pg
}

func podGroupGone(ctx context.Context, pg *schedulingv1beta1.PodGroup) func() bool {
	return func() bool {
		return apierrors.IsNotFound(cl.Get(ctx, client.ObjectKeyFromObject(pg), &schedulingv1beta1.PodGroup{}))
	}
}

// publishSlice creates one of count ResourceSlices of the driver's pool (generation 1) on
// the node, as the driver's kubelet plugin publishes it; the spec's end deletes it.
func publishSlice(ctx context.Context, driver, pool, node string, count int64, devices []resourcev1.Device) {
	GinkgoHelper()
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-" + pool + "-"},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node), Devices: devices,
			Pool: resourcev1.ResourcePool{Name: pool, Generation: 1, ResourceSliceCount: count}},
	}
	Expect(cl.Create(ctx, s)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, s))).To(Succeed()) })
}
