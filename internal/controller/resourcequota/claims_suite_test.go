package resourcequota_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
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

	It("charges the extended resource a device class stands for to claims and pods, a pod's own extended-resource claim only beyond its pod", func() {
		className := ns + ".example.com"
		dc := &resourcev1.DeviceClass{ObjectMeta: metav1.ObjectMeta{Name: className}, Spec: resourcev1.DeviceClassSpec{ExtendedResourceName: ptr.To(ext)}}
		create(ctx, dc)
		DeferCleanup(func() { Expect(env.Client.Delete(ctx, dc)).To(Succeed()) })
		implicit := "requests.deviceclass.resource.kubernetes.io/" + className
		rq := newQuota(ns, "extended", rl("requests."+ext, "2", implicit, "5"))
		create(ctx, rq)
		expectUsed(ctx, rq, "requests."+ext, "0", implicit, "0")

		claim := newClaim(ns, "user", 1)
		claim.Spec.Devices.Requests[0].Exactly.DeviceClassName = className
		create(ctx, claim)
		expectUsed(ctx, rq, "requests."+ext, "1", implicit, "1")

		pod := newPod(ns, "p", "")
		pod.Spec.Containers[0].Resources = corev1.ResourceRequirements{Requests: rl(ext, "1"), Limits: rl(ext, "1")}
		create(ctx, pod)
		expectUsed(ctx, rq, "requests."+ext, "2", implicit, "1")

		// The claim the scheduler makes for the pod's extended resource: its device is the
		// one the pod is charged for already, not under its implicit name.
		own := newClaim(ns, "p-extended-resources", 1)
		own.Spec.Devices.Requests[0].Exactly.DeviceClassName = className
		own.Annotations = map[string]string{resourcev1.ExtendedResourceClaimAnnotation: "true"}
		own.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID, Controller: ptr.To(true)}}
		create(ctx, own)
		expectUsed(ctx, rq, "requests."+ext, "2", implicit, "2")
		settle(ctx, rq, "requests."+ext, "2", implicit, "2")

		other := newPod(ns, "q", "")
		other.Spec.Containers[0].Resources = pod.Spec.Containers[0].Resources
		Expect(env.Client.Create(ctx, other)).To(MatchError(ContainSubstring("exceeded quota: extended")))

		// The user's claim deleted gives back its device under both names.
		Expect(env.Client.Delete(ctx, newClaim(ns, "user", 1))).To(Succeed())
		expectUsed(ctx, rq, "requests."+ext, "1", implicit, "1")
	})
})

// ext is the extended resource the spec's device class stands for.
const ext = "example.com/gpu"

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
