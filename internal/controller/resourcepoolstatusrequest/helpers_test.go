package resourcepoolstatusrequest_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// publish creates a ResourceSlice of the driver's pool as a driver publishes it.
func publish(ctx context.Context, driver, pool string, gen, count int64, node string, devices ...resourcev1.Device) {
	GinkgoHelper()
	s := &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{GenerateName: pool + "-"},
		Spec: resourcev1.ResourceSliceSpec{Driver: driver, NodeName: ptr.To(node), Devices: devices,
			Pool: resourcev1.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: count}},
	}
	Expect(env.Client.Create(ctx, s)).To(Succeed())
}

func devices(names ...string) []resourcev1.Device {
	var out []resourcev1.Device
	for _, n := range names {
		out = append(out, resourcev1.Device{Name: n})
	}
	return out
}

// allocate creates a claim and writes its allocation as the scheduler would.
func allocate(ctx context.Context, ns, driver, pool string, device ...string) {
	GinkgoHelper()
	c := &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "claim-"},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name: "dev", Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "devices.kcm.test", Count: int64(len(device)),
				AllocationMode: resourcev1.DeviceAllocationModeExactCount}}}}},
	}
	Expect(env.Client.Create(ctx, c)).To(Succeed())
	alloc := &resourcev1.AllocationResult{}
	for _, d := range device {
		alloc.Devices.Results = append(alloc.Devices.Results, resourcev1.DeviceRequestAllocationResult{Request: "dev", Driver: driver, Pool: pool, Device: d})
	}
	c.Status.Allocation = alloc
	Expect(env.Client.Status().Update(ctx, c)).To(Succeed())
}

func request(ctx context.Context, driver string, mutate ...func(*resourcev1alpha3.ResourcePoolStatusRequestSpec)) *resourcev1alpha3.ResourcePoolStatusRequest {
	GinkgoHelper()
	r := &resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: metav1.ObjectMeta{GenerateName: "req-"},
		Spec: resourcev1alpha3.ResourcePoolStatusRequestSpec{Driver: driver}}
	for _, m := range mutate {
		m(&r.Spec)
	}
	Expect(env.Client.Create(ctx, r)).To(Succeed())
	return r
}

// answer waits for the request's status.
func answer(ctx context.Context, r *resourcev1alpha3.ResourcePoolStatusRequest) *resourcev1alpha3.ResourcePoolStatusRequestStatus {
	GinkgoHelper()
	got := &resourcev1alpha3.ResourcePoolStatusRequest{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(r), got)).To(Succeed())
		g.Expect(got.Status).NotTo(BeNil())
	}).Should(Succeed())
	return got.Status
}

// answerSettled asks fresh requests until one's answer passes check, and returns that request,
// its answer and how many requests it made: each request is answered once, from the
// controller's cache, which has the spec's slices, rules and claims some time after their
// writes.
func answerSettled(ctx context.Context, driver string, check func(Gomega, *resourcev1alpha3.ResourcePoolStatusRequestStatus)) (*resourcev1alpha3.ResourcePoolStatusRequest, *resourcev1alpha3.ResourcePoolStatusRequestStatus, int) {
	GinkgoHelper()
	var r *resourcev1alpha3.ResourcePoolStatusRequest
	var st *resourcev1alpha3.ResourcePoolStatusRequestStatus
	made := 0
	Eventually(func(g Gomega) {
		r = request(ctx, driver)
		made++
		st = answer(ctx, r)
		check(g, st)
	}).Should(Succeed())
	return r, st, made
}

// pool matches a complete pool's entry.
func pool(name string, node *string, gen int64, slices, total, allocated, available, unavailable int32) OmegaMatcher {
	return And(HaveField("PoolName", name), HaveField("NodeName", Equal(node)), HaveField("Generation", gen),
		HaveField("ResourceSliceCount", HaveValue(Equal(slices))), HaveField("TotalDevices", HaveValue(Equal(total))),
		HaveField("AllocatedDevices", HaveValue(Equal(allocated))), HaveField("AvailableDevices", HaveValue(Equal(available))),
		HaveField("UnavailableDevices", HaveValue(Equal(unavailable))), HaveField("ValidationError", BeNil()))
}

func complete(message string) OmegaMatcher {
	return ConsistOf(And(HaveField("Type", resourcev1alpha3.ResourcePoolStatusRequestConditionComplete),
		HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "CalculationComplete"), HaveField("Message", message)))
}
