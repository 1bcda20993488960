package resourcequota_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

const gpus = "gpu.example.com.deviceclass.resource.k8s.io/devices"

var _ = Describe("resourcequota-controller with DRA resource claims", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "rq-dra") })

	It("fills the usage of a device-class quota, so that admission charges claims rather than refusing them as status unknown", func() {
		rq := newQuota(ns, "devices", rl(gpus, "4"))
		create(ctx, rq)
		// Admission refuses every claim ("status unknown for quota") until status.used
		// names the device-class resource.
		expectUsed(ctx, rq, gpus, "0")
		create(ctx, newClaim(ns, "a", 1))
		expectUsed(ctx, rq, gpus, "1")
	})

	It("admits two claims of a 2-device quota, refuses the third, and admits one again after a deletion", func() {
		rq := newQuota(ns, "devices", rl(gpus, "2", "count/resourceclaims.resource.k8s.io", "5"))
		create(ctx, rq)
		expectUsed(ctx, rq, gpus, "0", "count/resourceclaims.resource.k8s.io", "0")

		create(ctx, newClaim(ns, "a", 1))
		create(ctx, newClaim(ns, "b", 1))
		expectUsed(ctx, rq, gpus, "2", "count/resourceclaims.resource.k8s.io", "2")
		Expect(env.Client.Create(ctx, newClaim(ns, "c", 1))).To(MatchError(And(
			ContainSubstring("exceeded quota: devices"),
			ContainSubstring("requested: "+gpus+"=1, used: "+gpus+"=2, limited: "+gpus+"=2"),
		)))

		// Nothing but the controller gives back what a deleted claim was charged.
		Expect(env.Client.Delete(ctx, newClaim(ns, "b", 1))).To(Succeed())
		expectUsed(ctx, rq, gpus, "1", "count/resourceclaims.resource.k8s.io", "1")
		settle(ctx, rq, gpus, "1", "count/resourceclaims.resource.k8s.io", "1")
		create(ctx, newClaim(ns, "c", 1))
		expectUsed(ctx, rq, gpus, "2", "count/resourceclaims.resource.k8s.io", "2")
	})
})

// newClaim is a claim asking for n devices of the class gpu.example.com (which need not
// exist for the claim to be stored and charged).
func newClaim(ns, name string, n int64) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourcev1.ResourceClaimSpec{Devices: resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
			Name:    "gpu",
			Exactly: &resourcev1.ExactDeviceRequest{DeviceClassName: "gpu.example.com", AllocationMode: resourcev1.DeviceAllocationModeExactCount, Count: n},
		}}}},
	}
}
