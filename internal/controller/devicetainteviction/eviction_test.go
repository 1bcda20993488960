package devicetainteviction_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller/devicetainteviction"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("device-taint-eviction-controller", func() {
	const (
		deletions = "device_taint_eviction_controller_pod_deletions_total"
		latency   = "device_taint_eviction_controller_pod_deletion_duration_seconds"
	)

	It("evicts exactly the pod using a device its ResourceSlice taints NoExecute", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "slice")
		slice := createSlice(ctx, "node-a", 2)
		victim := usePod(ctx, ns, "victim", "node-a", "dev-0")
		bystander := usePod(ctx, ns, "bystander", "node-a", "dev-1")
		before, beforeLatency := testenv.Sample(deletions, nil), testenv.Sample(latency, nil)

		taintDevice(ctx, slice, "dev-0", noExecute("broken"))
		expectEvicted(ctx, victim)
		env.ExpectEvent(ctx, victim, evictionEvent("Marking for deletion"))
		expectUntouched(ctx, bystander)
		Expect(eventCount(ctx, bystander)).To(BeZero())
		Eventually(func() float64 { return testenv.Sample(deletions, nil) }).Should(Equal(before + 1))
		Eventually(func() float64 { return testenv.Sample(latency, nil) }).Should(Equal(beforeLatency + 1))
	})

	It("waits for the claim's tolerationSeconds and cancels when the taint goes first", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "toleration")
		slice := createSlice(ctx, "node-b", 3)
		patient := usePod(ctx, ns, "patient", "node-b", "dev-0", tolerate("broken", 3600))
		witness := usePod(ctx, ns, "witness", "node-b", "dev-1")

		taintDevice(ctx, slice, "dev-0", noExecute("broken"))
		taintDevice(ctx, slice, "dev-1", noExecute("broken"))
		// The untolerating pod on the same slice goes at once: the tolerating one was
		// decided in the same pass and waits.
		expectEvicted(ctx, witness)
		expectUntouched(ctx, patient)

		taintDevice(ctx, slice, "dev-0", nil)
		env.ExpectEvent(ctx, patient, evictionEvent("Cancelling deletion"))
		expectUntouched(ctx, patient)
	})

	It("evicts a tolerating pod once its tolerationSeconds have passed since the taint was added", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "expiry")
		slice := createSlice(ctx, "node-c", 1)
		short := usePod(ctx, ns, "short", "node-c", "dev-0", tolerate("broken", 2))

		taintDevice(ctx, slice, "dev-0", noExecute("broken"))
		expectEvicted(ctx, short)
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(slice), slice)).To(Succeed())
		added := slice.Spec.Devices[0].Taints[0].TimeAdded
		Expect(added).NotTo(BeNil())
		got := &corev1.Pod{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(short), got)).To(Succeed())
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.DisruptionTarget {
				// Whole seconds on the wire: the condition is at least a second after the taint.
				Expect(c.LastTransitionTime.Sub(added.Time)).To(BeNumerically(">=", time.Second))
			}
		}
	})

	It("evicts at once a pod whose tolerationSeconds passed on the controller's clock", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "clock")
		slice := createSlice(ctx, "node-g", 1)
		long := usePod(ctx, ns, "long", "node-g", "dev-0", tolerate("broken", 3600))
		// An hour's toleration on a clock an hour and a minute ahead has passed already.
		clock.Set(61 * time.Minute)
		DeferCleanup(clock.Set, time.Duration(0))

		taintDevice(ctx, slice, "dev-0", noExecute("broken"))
		expectEvicted(ctx, long)
	})

	It("evicts the pod using a device a NoExecute DeviceTaintRule selects and reports it in the rule's status", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rule")
		createSlice(ctx, "node-d", 2)
		victim := usePod(ctx, ns, "victim", "node-d", "dev-0")
		bystander := usePod(ctx, ns, "bystander", "node-d", "dev-1")

		rule := &resourceapi.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{Name: "node-d-dev-0"},
			Spec: resourceapi.DeviceTaintRuleSpec{
				DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To("node-d"), Device: ptr.To("dev-0")},
				Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNoExecute},
			},
		}
		Expect(env.Client.Create(ctx, rule)).To(Succeed())
		expectEvicted(ctx, victim)
		env.ExpectEvent(ctx, victim, evictionEvent("Marking for deletion"))
		expectUntouched(ctx, bystander)

		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rule), rule)).To(Succeed())
			g.Expect(rule.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", resourceapi.DeviceTaintConditionEvictionInProgress),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "Completed"),
				HaveField("Message", "1 pod evicted since starting the controller."),
				HaveField("ObservedGeneration", rule.Generation))))
		}, 40*time.Second).Should(Succeed())
	})

	It("reports pods a DeviceTaintRule's taint evicts later as pending", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pending")
		createSlice(ctx, "node-h", 1)
		patient := usePod(ctx, ns, "patient", "node-h", "dev-0", tolerate("drain", 3600))
		rule := &resourceapi.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{Name: "node-h-drain"},
			Spec: resourceapi.DeviceTaintRuleSpec{
				DeviceSelector: &resourceapi.DeviceTaintSelector{Driver: ptr.To(driver), Pool: ptr.To("node-h")},
				Taint:          resourceapi.DeviceTaint{Key: "drain", Effect: resourceapi.DeviceTaintEffectNoExecute},
			},
		}
		Expect(env.Client.Create(ctx, rule)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rule), rule)).To(Succeed())
			g.Expect(rule.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", resourceapi.DeviceTaintConditionEvictionInProgress),
				HaveField("Status", metav1.ConditionTrue), HaveField("Reason", "PodsPendingEviction"),
				HaveField("Message", "1 pod needs to be evicted in 1 namespace."))))
		}, 40*time.Second).Should(Succeed())
		expectUntouched(ctx, patient)
		Expect(testenv.LabelNames("device_taint_eviction_controller_pod_deletions_total")).To(BeEmpty())
	})

	It("reports what a DeviceTaintRule with effect None would evict, evicting nothing", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "none")
		createSlice(ctx, "node-e", 3)
		user := usePod(ctx, ns, "user", "node-e", "dev-2")
		rule := &resourceapi.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{Name: "node-e-dry-run"},
			Spec: resourceapi.DeviceTaintRuleSpec{
				DeviceSelector: &resourceapi.DeviceTaintSelector{Pool: ptr.To("node-e")},
				Taint:          resourceapi.DeviceTaint{Key: "maintenance", Effect: resourceapi.DeviceTaintEffectNone},
			},
		}
		Expect(env.Client.Create(ctx, rule)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rule), rule)).To(Succeed())
			g.Expect(rule.Status.Conditions).To(ContainElement(SatisfyAll(
				HaveField("Type", resourceapi.DeviceTaintConditionEvictionInProgress),
				HaveField("Status", metav1.ConditionFalse), HaveField("Reason", "NoEffect"),
				HaveField("Message", "3 published devices selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."),
			)))
		}).Should(Succeed())
		expectUntouched(ctx, user)
	})

	It("evicts a pod through the claim generated from its template, named in its status", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "template")
		slice := createSlice(ctx, "node-i", 1)
		// The pod asks through a template; the test plays resourceclaim-controller (the
		// claim controlled by the pod, named in pod.status.resourceClaimStatuses), the
		// scheduler and the kubelet.
		pod := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "templated"},
			Spec: corev1.PodSpec{
				NodeName: "node-i",
				Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
					Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
				ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu-template")}},
			},
		}
		Expect(env.Client.Create(ctx, pod)).To(Succeed())
		claim := &resourceapi.ResourceClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "templated-gpu-x7k2p",
				OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: pod.Name, UID: pod.UID,
					Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
				Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: driver},
			}}}},
		}
		Expect(env.Client.Create(ctx, claim)).To(Succeed())
		claim.Status.Allocation = &resourceapi.AllocationResult{Devices: resourceapi.DeviceAllocationResult{
			Results: []resourceapi.DeviceRequestAllocationResult{{Request: "gpu", Driver: driver, Pool: "node-i", Device: "dev-0"}},
		}}
		claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: pod.Name, UID: pod.UID}}
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		pod.Status.Phase = corev1.PodRunning
		pod.Status.ResourceClaimStatuses = []corev1.PodResourceClaimStatus{{Name: "gpu", ResourceClaimName: ptr.To(claim.Name)}}
		Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())

		taintDevice(ctx, slice, "dev-0", noExecute("broken"))
		expectEvicted(ctx, pod)
	})

	It("leaves a pod whose claim is reserved for another pod of the same name", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "replaced")
		slice := createSlice(ctx, "node-f", 2)
		old := usePod(ctx, ns, "old", "node-f", "dev-0")
		witness := usePod(ctx, ns, "witness", "node-f", "dev-1")
		claim := &resourceapi.ResourceClaim{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(old), claim)).To(Succeed())
		claim.Status.ReservedFor[0].UID = "someone-else"
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())

		taintDevice(ctx, slice, "dev-0", noExecute("broken"))
		taintDevice(ctx, slice, "dev-1", noExecute("broken"))
		expectEvicted(ctx, witness)
		expectUntouched(ctx, old)
	})
})

// Claims reserved for a PodGroup (DRAWorkloadResourceClaims, beta and off by default in
// v1.37) evict the group's pods: an API server of its own serves PodGroups and such
// reservations, and kcm runs with the gates. The helpers use env, swapped for the spec.
var _ = Describe("device-taint-eviction-controller with DRAWorkloadResourceClaims", Ordered, func() {
	const gates = "GenericWorkload=true,DRAWorkloadResourceClaims=true"
	var main *testenv.Env
	BeforeAll(func() {
		main = env
		env = testenv.MustStartAPIServer(func(te *envtest.Environment) {
			args := te.ControlPlane.GetAPIServer().Configure()
			args.Set("feature-gates", gates)
			args.Set("runtime-config", "scheduling.k8s.io/v1beta1=true")
		})
		DeferCleanup(func() { env = main })
		Expect(env.StartManager([]string{devicetainteviction.ControllerName}, "--feature-gates="+gates)).To(Succeed())
	})

	It("evicts the pods of a PodGroup its tainted claim is reserved for", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "group")
		slice := createSlice(ctx, "node-g1", 2)
		member := usePod(ctx, ns, "member", "node-g1", "dev-0")
		witness := usePod(ctx, ns, "witness", "node-g1", "dev-1")
		// The member belongs to the group; its claim is reserved for the group only.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(member), member)).To(Succeed())
		claim := &resourceapi.ResourceClaim{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(member), claim)).To(Succeed())
		claim.Status.ReservedFor = []resourceapi.ResourceClaimConsumerReference{{APIGroup: "scheduling.k8s.io", Resource: "podgroups", Name: "team", UID: "group-uid"}}
		Expect(env.Client.Status().Update(ctx, claim)).To(Succeed())
		grouped := usePodInGroup(ctx, ns, "grouped", "node-g1", claim.Name, "team")

		taintDevice(ctx, slice, "dev-1", noExecute("broken"))
		expectEvicted(ctx, witness)
		expectUntouched(ctx, grouped)
		taintDevice(ctx, slice, "dev-0", noExecute("broken"))
		expectEvicted(ctx, grouped)
	})
})
