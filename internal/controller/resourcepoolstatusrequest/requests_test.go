package resourcepoolstatusrequest_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("resourcepoolstatusrequest-controller", func() {
	It("answers a request with the driver's pools from slices, allocated claims and taints, once", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rpsr")
		const driver = "gpu.kcm.test"
		tainted := devices("a-0", "a-1", "a-2", "a-3")
		tainted[3].Taints = []resourcev1.DeviceTaint{{Key: "broken", Effect: resourcev1.DeviceTaintEffectNoSchedule}}
		publish(ctx, driver, "node-a", 1, 1, "node-a", tainted...)
		By("a pool of two slices on two nodes, and an older generation of it that no longer counts")
		publish(ctx, driver, "shared", 2, 2, "node-b", devices("s-0", "s-1")...)
		publish(ctx, driver, "shared", 2, 2, "node-c", devices("s-2")...)
		publish(ctx, driver, "shared", 1, 1, "node-b", devices("old-0", "old-1", "old-2")...)
		publish(ctx, "other.kcm.test", "node-a", 1, 1, "node-a", devices("x")...)
		rule := &resourcev1.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{GenerateName: "rule-"}, Spec: resourcev1.DeviceTaintRuleSpec{
			DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To("shared"), Device: ptr.To("s-1")},
			Taint:          resourcev1.DeviceTaint{Key: "maintenance", Effect: resourcev1.DeviceTaintEffectNoExecute}}}
		Expect(env.Client.Create(ctx, rule)).To(Succeed())
		allocate(ctx, ns, driver, "node-a", "a-0", "a-1")
		allocate(ctx, ns, driver, "shared", "s-0")
		// A device shared by two claims counts once.
		allocate(ctx, ns, driver, "shared", "s-0")

		processed := testenv.Sample("resourcepoolstatusrequest_controller_requests_processed_total", map[string]string{"driver_name": driver})
		timed := testenv.Sample("resourcepoolstatusrequest_controller_request_processing_duration_seconds", map[string]string{"driver_name": driver})

		all, _, made := answerSettled(ctx, driver, func(g Gomega, st *resourcev1alpha3.ResourcePoolStatusRequestStatus) {
			g.Expect(st.PoolCount).To(HaveValue(BeEquivalentTo(2)))
			g.Expect(st.Pools).To(HaveExactElements(
				pool("node-a", ptr.To("node-a"), 1, 1, 4, 2, 1, 1),
				pool("shared", nil, 2, 2, 3, 1, 1, 1)))
			g.Expect(st.Conditions).To(complete("Calculated status for 2 pools"))
		})

		By("spec.limit cuts the list, not the count; spec.poolName picks one pool")
		limited := answer(ctx, request(ctx, driver, func(s *resourcev1alpha3.ResourcePoolStatusRequestSpec) { s.Limit = ptr.To[int32](1) }))
		Expect(limited.PoolCount).To(HaveValue(BeEquivalentTo(2)))
		Expect(limited.Pools).To(HaveExactElements(HaveField("PoolName", "node-a")))
		Expect(limited.Conditions).To(complete("Calculated status for 1 pools"))
		named := answer(ctx, request(ctx, driver, func(s *resourcev1alpha3.ResourcePoolStatusRequestSpec) { s.PoolName = ptr.To("shared") }))
		Expect(named.PoolCount).To(HaveValue(BeEquivalentTo(1)))
		Expect(named.Pools).To(HaveExactElements(HaveField("PoolName", "shared")))

		By("upstream's metrics count each answer")
		// Counted right after the status write the spec has seen: awaited, not read once.
		Eventually(func() float64 {
			return testenv.Sample("resourcepoolstatusrequest_controller_requests_processed_total", map[string]string{"driver_name": driver})
		}).Should(Equal(processed + float64(made) + 2))
		Eventually(func() float64 {
			return testenv.Sample("resourcepoolstatusrequest_controller_request_processing_duration_seconds", map[string]string{"driver_name": driver})
		}).Should(Equal(timed + float64(made) + 2))
		Expect(testenv.LabelNames("resourcepoolstatusrequest_controller_requests_processed_total")).To(Equal([]string{"driver_name"}))

		By("an answered request is not answered again when the pools change")
		allocate(ctx, ns, driver, "node-a", "a-2")
		// The witness: the controller's cache has the new allocation once a fresh request
		// counts it; fresh requests are asked until one does, each answered once.
		Eventually(func(g Gomega) {
			fresh := request(ctx, driver)
			witness := answer(ctx, fresh)
			g.Expect(witness.Pools).NotTo(BeEmpty())
			g.Expect(witness.Pools[0].AllocatedDevices).To(HaveValue(BeEquivalentTo(3)))
		}).Should(Succeed())
		got := &resourcev1alpha3.ResourcePoolStatusRequest{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(all), got)).To(Succeed())
		Expect(got.Status.Pools[0].AllocatedDevices).To(HaveValue(BeEquivalentTo(2)))
	})

	It("reports a partitionable pool's partition types and a shareable pool's capacity", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rpsr-views")
		const driver = "mig.kcm.test"
		By("a GPU's memory as shared counters, in a slice of its own, and its partitions in another")
		counters := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: "gpu-counters-"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: driver, NodeName: ptr.To("node-g"), Pool: resourcev1.ResourcePool{Name: "gpu-0", Generation: 1, ResourceSliceCount: 2},
			SharedCounters: []resourcev1.CounterSet{{Name: "gpu-0", Counters: map[string]resourcev1.Counter{"memory": {Value: resource.MustParse("40Gi")}}}}}}
		Expect(env.Client.Create(ctx, counters)).To(Succeed())
		partition := func(name, profile, memory string) resourcev1.Device {
			return resourcev1.Device{Name: name,
				Attributes: map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"profile": {StringValue: ptr.To(profile)}},
				ConsumesCounters: []resourcev1.DeviceCounterConsumption{{CounterSet: "gpu-0",
					Counters: map[string]resourcev1.Counter{"memory": {Value: resource.MustParse(memory)}}}}}
		}
		parts := &resourcev1.ResourceSlice{ObjectMeta: metav1.ObjectMeta{GenerateName: "gpu-parts-"}, Spec: resourcev1.ResourceSliceSpec{
			Driver: driver, NodeName: ptr.To("node-g"), Pool: resourcev1.ResourcePool{Name: "gpu-0", Generation: 1, ResourceSliceCount: 2},
			PartitionTypeAttribute: ptr.To(resourcev1.FullyQualifiedName(driver + "/profile")),
			Devices:                []resourcev1.Device{partition("whole", "40g", "40Gi"), partition("half-0", "20g", "20Gi"), partition("half-1", "20g", "20Gi")}}}
		Expect(env.Client.Create(ctx, parts)).To(Succeed())
		allocate(ctx, ns, driver, "gpu-0", "half-0")

		By("a device several claims share, with their consumed memory")
		publish(ctx, driver, "nic-0", 1, 1, "node-g", resourcev1.Device{Name: "vf", AllowMultipleAllocations: ptr.To(true),
			Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: resource.MustParse("10Gi")}}})
		share := &resourcev1.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "share"},
			Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
				Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "devices.kcm.test"}}}}}}
		Expect(env.Client.Create(ctx, share)).To(Succeed())
		share.Status.Allocation = &resourcev1.AllocationResult{Devices: resourcev1.DeviceAllocationResult{Results: []resourcev1.DeviceRequestAllocationResult{{
			Request: "dev", Driver: driver, Pool: "nic-0", Device: "vf", ShareID: ptr.To(types.UID("00000000-0000-0000-0000-000000000001")),
			ConsumedCapacity: map[resourcev1.QualifiedName]resource.Quantity{"memory": resource.MustParse("4Gi")}}}}}
		Expect(env.Client.Status().Update(ctx, share)).To(Succeed())

		answerSettled(ctx, driver, func(g Gomega, st *resourcev1alpha3.ResourcePoolStatusRequestStatus) {
			g.Expect(st.Pools).To(HaveLen(2))
			gpu, nic := st.Pools[0], st.Pools[1]
			g.Expect(gpu).To(pool("gpu-0", ptr.To("node-g"), 1, 2, 3, 1, 2, 0))
			g.Expect(gpu.PartitionSummary).To(HaveExactElements(
				And(HaveField("Attribute", driver+"/profile"), HaveField("Type", "20g"), HaveField("Total", HaveValue(BeEquivalentTo(2))), HaveField("Allocatable", HaveValue(BeEquivalentTo(1)))),
				And(HaveField("Attribute", driver+"/profile"), HaveField("Type", "40g"), HaveField("Total", HaveValue(BeEquivalentTo(1))), HaveField("Allocatable", HaveValue(BeEquivalentTo(0))))))
			g.Expect(nic).To(pool("nic-0", ptr.To("node-g"), 1, 1, 1, 1, 0, 0))
			g.Expect(nic.ShareableSummary).NotTo(BeNil())
			g.Expect(nic.ShareableSummary.FullyAvailableDevices).To(HaveValue(BeEquivalentTo(0)))
			g.Expect(nic.ShareableSummary.PartiallyAvailableDevices).To(HaveValue(BeEquivalentTo(1)))
			g.Expect(nic.ShareableSummary.Capacity).To(HaveExactElements(And(HaveField("Name", "memory"),
				HaveField("Total", HaveValue(WithTransform(func(q resource.Quantity) string { return q.String() }, Equal("10Gi")))),
				HaveField("Consumed", HaveValue(WithTransform(func(q resource.Quantity) string { return q.String() }, Equal("4Gi")))),
				HaveField("Available", HaveValue(WithTransform(func(q resource.Quantity) string { return q.String() }, Equal("6Gi")))))))
		})
	})

	It("leaves a request pending while a pool's slices are still being published", func(ctx SpecContext) {
		const driver = "nic.kcm.test"
		publish(ctx, driver, "rack-1", 1, 2, "node-r", devices("n-0")...)
		// The witness that the controller's cache has rack-1's first slice before the request
		// is made (without it the request is rightly answered with 0 pools): a slice
		// published after it, in the same watch, counted in another driver's answer.
		publish(ctx, "fpga.kcm.test", "rack-2", 1, 1, "node-r", devices("f-0")...)
		answerSettled(ctx, "fpga.kcm.test", func(g Gomega, st *resourcev1alpha3.ResourcePoolStatusRequestStatus) {
			g.Expect(st.Pools).To(HaveLen(1))
		})
		pending := request(ctx, driver)

		By("a request for another driver, made after, is answered while this one is not")
		answer(ctx, request(ctx, "fpga.kcm.test"))
		Consistently(func(g Gomega) *resourcev1alpha3.ResourcePoolStatusRequestStatus {
			got := &resourcev1alpha3.ResourcePoolStatusRequest{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pending), got)).To(Succeed())
			return got.Status
		}, "2s").Should(BeNil())

		By("the pool complete, the next update of the request is answered")
		publish(ctx, driver, "rack-1", 1, 2, "node-r", devices("n-1")...)
		Eventually(func(g Gomega) {
			got := &resourcev1alpha3.ResourcePoolStatusRequest{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pending), got)).To(Succeed())
			got.Labels = map[string]string{"touched": fmt.Sprint(time.Now().UnixNano())}
			g.Expect(env.Client.Update(ctx, got)).To(Succeed())
		}).Should(Succeed())
		st := answer(ctx, pending)
		Expect(st.Pools).To(HaveExactElements(pool("rack-1", ptr.To("node-r"), 1, 2, 2, 0, 2, 0)))
	})

	It("deletes requests an hour after their answer, and keeps younger ones", func(ctx SpecContext) {
		const driver = "ttl.kcm.test"
		stale := request(ctx, driver)
		answer(ctx, stale)
		fakeClock.Step(30 * time.Minute)
		fresh := request(ctx, driver)
		answer(ctx, fresh)

		By("61 minutes after the first answer, 31 after the second")
		fakeClock.Step(31 * time.Minute)
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(stale), &resourcev1alpha3.ResourcePoolStatusRequest{}))
		}).Should(BeTrue())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(fresh), &resourcev1alpha3.ResourcePoolStatusRequest{})).To(Succeed())

		By("past its hour too, the second goes")
		fakeClock.Step(30 * time.Minute)
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(fresh), &resourcev1alpha3.ResourcePoolStatusRequest{}))
		}).Should(BeTrue())
	})
})
