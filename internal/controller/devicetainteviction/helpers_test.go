package devicetainteviction_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/devicetainteviction"
	"github.com/kcm/kcm/internal/testenv"
)

// The test plays the driver: one ResourceSlice per node, a pool of the node's name with
// devices dev-0..dev-<n-1>.
func createSlice(ctx context.Context, node string, n int) *resourceapi.ResourceSlice {
	s := &resourceapi.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: node + "-" + driver},
		Spec: resourceapi.ResourceSliceSpec{
			Driver:   driver,
			Pool:     resourceapi.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
		},
	}
	for i := range n {
		s.Spec.Devices = append(s.Spec.Devices, resourceapi.Device{Name: fmt.Sprintf("dev-%d", i)})
	}
	Expect(env.Client.Create(ctx, s)).To(Succeed())
	return s
}

// taintDevice sets (or, with taint nil, clears) the taints of one device of the slice.
func taintDevice(ctx context.Context, s *resourceapi.ResourceSlice, device string, taint *resourceapi.DeviceTaint) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(s), s)).To(Succeed())
		for i := range s.Spec.Devices {
			if s.Spec.Devices[i].Name == device {
				s.Spec.Devices[i].Taints = nil
				if taint != nil {
					s.Spec.Devices[i].Taints = []resourceapi.DeviceTaint{*taint}
				}
			}
		}
		g.Expect(env.Client.Update(ctx, s)).To(Succeed())
	}).Should(Succeed())
}

// usePod is a pod bound to node and running (the scheduler's and kubelet's part) whose
// claim of the same name has the device allocated and is reserved for it, with the
// device's tolerations.
func usePod(ctx context.Context, ns, name, node, device string, tolerations ...resourceapi.DeviceToleration) *corev1.Pod {
	GinkgoHelper()
	pod := testenv.NewPod(ns, name, node)
	pod.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
	pod.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(name)}}
	env.CreatePod(ctx, pod, testenv.Phase(corev1.PodRunning, ""))

	claim := &resourceapi.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: driver},
		}}}},
	}
	Expect(env.Client.Create(ctx, claim)).To(Succeed())
	claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
		Results: []resourceapi.DeviceRequestAllocationResult{{
			Request: "gpu", Driver: driver, Pool: node, Device: device, Tolerations: tolerations,
		}},
	}}
	claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
	Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
	return pod
}

// evictionEvent is the controller's Event on a pod it marks for deletion or spares.
func evictionEvent(message string) testenv.Event {
	return testenv.Event{Type: corev1.EventTypeNormal, Reason: "DeviceTaintManagerEviction", Message: message,
		Source: devicetainteviction.ControllerName}
}

func noExecute(key string) *resourceapi.DeviceTaint {
	return &resourceapi.DeviceTaint{Key: key, Value: "true", Effect: resourceapi.DeviceTaintEffectNoExecute}
}

func tolerate(key string, seconds int64) resourceapi.DeviceToleration {
	return resourceapi.DeviceToleration{Key: key, Operator: resourceapi.DeviceTolerationOpExists,
		Effect: resourceapi.DeviceTaintEffectNoExecute, TolerationSeconds: ptr.To(seconds)}
}

// expectEvicted waits for the pod's DisruptionTarget condition and its deletion (no
// kubelet finishes it, so it stays with a deletionTimestamp).
func expectEvicted(ctx context.Context, pod *corev1.Pod) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &corev1.Pod{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		g.Expect(got.Status.Conditions).To(ContainElement(SatisfyAll(
			HaveField("Type", corev1.DisruptionTarget), HaveField("Status", corev1.ConditionTrue),
			HaveField("Reason", "DeletionByDeviceTaintManager"),
			HaveField("Message", "Device Taint manager: deleting due to NoExecute taint"))))
	}).Should(Succeed())
}

func expectUntouched(ctx context.Context, pod *corev1.Pod) {
	GinkgoHelper()
	got := &corev1.Pod{}
	Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), got)).To(Succeed())
	Expect(got.DeletionTimestamp).To(BeNil())
	Expect(got.Status.Conditions).NotTo(ContainElement(HaveField("Type", corev1.DisruptionTarget)))
}

func eventCount(ctx context.Context, pod *corev1.Pod) int {
	GinkgoHelper()
	events := &corev1.EventList{}
	Expect(env.Client.List(ctx, events, client.InNamespace(pod.Namespace))).To(Succeed())
	n := 0
	for _, e := range events.Items {
		if e.InvolvedObject.UID == pod.UID {
			n++
		}
	}
	return n
}

// usePodInGroup is a running pod of the PodGroup using an existing claim by name.
func usePodInGroup(ctx context.Context, ns, name, node, claim, group string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:        node,
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
			ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimName: ptr.To(claim)}},
		},
	}
	Expect(env.Client.Create(ctx, pod)).To(Succeed())
	pod.Status.Phase = corev1.PodRunning
	Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	return pod
}
