//go:build e2e && linux

package e2e_test

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/cluster"
)

// Dynamic resource allocation with no real driver (issue 20): each spec publishes, as a DRA
// driver would, one ResourceSlice per fake node with draDevicesPerNode devices of a driver
// of its own and a DeviceClass selecting that driver; the cluster's kube-scheduler allocates
// them for real (its DynamicResources plugin is on at v1.37.1's defaults and matches a
// slice's nodeName to the KWOK node), KWOK runs the pods, and kcm makes, releases and deletes
// the claims under kubeadm's identity.
var _ = Describe("Dynamic resource allocation", func() {
	var (
		ns     string
		driver *draDriver
	)
	BeforeEach(func(ctx SpecContext) {
		ns = newNamespace(ctx)
		driver = installDRADriver(ctx, ns)
	})

	It("gives each pod of a Deployment its own claim from the template, allocated by kube-scheduler and reserved for it; scaling down releases and deletes the claims", func(ctx SpecContext) {
		w := watchDRA(ctx, ns)
		Expect(cl.Create(ctx, driver.template(ns))).To(Succeed())
		d := newDeployment(ns, "web", 3)
		driver.askForDevice(&d.Spec.Template)
		start := time.Now()
		Expect(cl.Create(ctx, d)).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 3)

		pods := expectPodsWithAllocatedClaims(ctx, ns, driver, 3)
		w.reportLatencies(start, pods)

		By("scaling to 1: KWOK ends two pods, whose claims are released and deleted")
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Replicas = ptr.To[int32](1)
		Expect(cl.Patch(ctx, d, patch)).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 1)
		var kept podClaim
		Eventually(ctx, func(g Gomega) {
			live := livePods(g, ns, map[string]string{"app": "web"})
			g.Expect(live).To(HaveLen(1))
			kept = pods[live[0].UID]
			claims := &resourcev1.ResourceClaimList{}
			g.Expect(cl.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
			g.Expect(claims.Items).To(ConsistOf(HaveField("Name", kept.claim)), "only the remaining pod's claim is left")
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		for _, pc := range pods {
			if pc.claim == kept.claim {
				continue
			}
			// The claim's last state, as the deletion watch event shows it: nothing reserved
			// and no allocation, so the device is free again.
			last := w.deleted(ctx, pc.claim)
			Expect(last.Status.ReservedFor).To(BeEmpty(), "claim %s released before deletion", pc.claim)
			Expect(last.Status.Allocation).To(BeNil(), "claim %s deallocated before deletion", pc.claim)
		}
		// The remaining pod keeps its claim, allocated and reserved as before (positive witness).
		claim := &resourcev1.ResourceClaim{}
		Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: kept.claim}, claim)).To(Succeed())
		Expect(claim.Status.Allocation).NotTo(BeNil())
		Expect(claim.Status.ReservedFor).To(ConsistOf(HaveField("UID", kept.pod.UID)))
	})

	It("evicts exactly the pod whose device gets a NoExecute taint, and its Deployment replaces it on an untainted device", func(ctx SpecContext) {
		w := watchDRA(ctx, ns)
		Expect(cl.Create(ctx, driver.template(ns))).To(Succeed())
		d := newDeployment(ns, "web", 3)
		driver.askForDevice(&d.Spec.Template)
		Expect(cl.Create(ctx, d)).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 3)
		before := expectPodsWithAllocatedClaims(ctx, ns, driver, 3)
		var victim podClaim
		for _, pc := range before {
			victim = pc
			break
		}

		By(fmt.Sprintf("the driver taints device %s/%s of pod %s NoExecute in its ResourceSlice", victim.node, victim.device, victim.pod.Name))
		tainted := time.Now()
		driver.taint(ctx, victim.node, victim.device)
		expectEvictedAndReplaced(ctx, w, ns, driver, before, victim)
		AddReportEntry("eviction latency", fmt.Sprintf("device tainted -> pod %s deleted in %s",
			victim.pod.Name, w.podDeletedAt(victim.pod.UID).Sub(tainted).Round(time.Millisecond)))
	})

	It("previews a DeviceTaintRule of effect None in its status, then evicts exactly the pod using its device when the effect becomes NoExecute, and reports Completed", func(ctx SpecContext) {
		w := watchDRA(ctx, ns)
		Expect(cl.Create(ctx, driver.template(ns))).To(Succeed())
		d := newDeployment(ns, "web", 3)
		driver.askForDevice(&d.Spec.Template)
		Expect(cl.Create(ctx, d)).To(Succeed())
		waitDeploymentComplete(ctx, ns, "web", 3)
		before := expectPodsWithAllocatedClaims(ctx, ns, driver, 3)
		var victim podClaim
		for _, pc := range before {
			victim = pc
			break
		}

		By(fmt.Sprintf("an administrator's DeviceTaintRule on device %s/%s of pod %s, effect None", victim.node, victim.device, victim.pod.Name))
		rule := &resourcev1.DeviceTaintRule{
			ObjectMeta: metav1.ObjectMeta{Name: driver.class + "-" + victim.node + "-" + victim.device},
			Spec: resourcev1.DeviceTaintRuleSpec{
				DeviceSelector: &resourcev1.DeviceTaintSelector{Driver: ptr.To(driver.name), Pool: ptr.To(victim.node), Device: ptr.To(victim.device)},
				Taint:          resourcev1.DeviceTaint{Key: "dra.kcm.test/maintenance", Effect: resourcev1.DeviceTaintEffectNone},
			},
		}
		Expect(cl.Create(ctx, rule)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, rule))).To(Succeed()) })
		expectRuleCondition(ctx, rule.Name, metav1.ConditionFalse, "NoEffect",
			"1 published device selected. 1 allocated device selected. 1 pod would be evicted in 1 namespace if the effect was NoExecute. "+
				"This information will not be updated again. Recreate the DeviceTaintRule to trigger an update.")
		// The preview evicts nothing: every pod is still there, and none was deleted.
		Expect(expectPodsWithAllocatedClaims(ctx, ns, driver, 3)).To(HaveKey(victim.pod.UID))
		w.expectNoPodDeleted()

		By("the effect becomes NoExecute")
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			if err := cl.Get(ctx, client.ObjectKeyFromObject(rule), rule); err != nil {
				return err
			}
			rule.Spec.Taint.Effect = resourcev1.DeviceTaintEffectNoExecute
			return cl.Update(ctx, rule)
		})).To(Succeed())
		expectEvictedAndReplaced(ctx, w, ns, driver, before, victim)
		expectRuleCondition(ctx, rule.Name, metav1.ConditionFalse, "Completed", "1 pod evicted since starting the controller.")
	})

	It("admits two claims under a quota of 2 devices of their class and refuses the third; a deleted claim gives its device back", func(ctx SpecContext) {
		devices := corev1.ResourceName(driver.class + ".deviceclass.resource.k8s.io/devices")
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "devices"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{devices: resource.MustParse("2")}},
		}
		Expect(cl.Create(ctx, quota)).To(Succeed())
		// Admission refuses every claim while the quota has no usage for the resource:
		// kcm's resourcequota-controller counts the class's devices.
		expectQuotaUsed(ctx, ns, devices, "0")

		for _, name := range []string{"claim-1", "claim-2"} {
			Expect(cl.Create(ctx, driver.claim(ns, name))).To(Succeed(), "claim %s within the quota", name)
		}
		err := cl.Create(ctx, driver.claim(ns, "claim-3"))
		Expect(apierrors.IsForbidden(err)).To(BeTrue(), "claim-3 refused: %v", err)
		Expect(err.Error()).To(ContainSubstring(fmt.Sprintf("exceeded quota: devices, requested: %s=1, used: %s=2, limited: %s=2", devices, devices, devices)))
		expectQuotaUsed(ctx, ns, devices, "2")

		By("deleting claim-1: kcm's recount gives its device back and claim-3 is admitted")
		Expect(cl.Delete(ctx, driver.claim(ns, "claim-1"))).To(Succeed())
		expectQuotaUsed(ctx, ns, devices, "1")
		Expect(cl.Create(ctx, driver.claim(ns, "claim-3"))).To(Succeed())
		expectQuotaUsed(ctx, ns, devices, "2")
	})
})

// draDevicesPerNode leaves room for a replacement pod on every node.
const draDevicesPerNode = 2

// draDriver is a fake DRA driver: its name and the DeviceClass selecting its devices; its
// ResourceSlices, one per node, have the node's name as pool (sliceName).
type draDriver struct {
	name, class string
}

// installDRADriver publishes, as a driver's kubelet plugin would, a ResourceSlice per fake
// node with draDevicesPerNode devices, and creates a DeviceClass selecting the driver's
// devices by CEL; both are removed when the spec ends. Names come from the namespace, so
// that no two specs share devices.
func installDRADriver(ctx context.Context, ns string) *draDriver {
	GinkgoHelper()
	d := &draDriver{name: ns + ".dra.kcm.test", class: ns + "-gpu"}
	class := &resourcev1.DeviceClass{
		ObjectMeta: metav1.ObjectMeta{Name: d.class},
		Spec: resourcev1.DeviceClassSpec{Selectors: []resourcev1.DeviceSelector{{
			CEL: &resourcev1.CELDeviceSelector{Expression: fmt.Sprintf("device.driver == %q", d.name)},
		}}},
	}
	Expect(cl.Create(ctx, class)).To(Succeed())
	DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, class))).To(Succeed()) })
	for i := range nodeCount {
		slice := d.slice(cluster.NodeName(i))
		Expect(cl.Create(ctx, slice)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, slice))).To(Succeed()) })
	}
	return d
}

func (d *draDriver) slice(node string) *resourcev1.ResourceSlice {
	var devices []resourcev1.Device
	for i := range draDevicesPerNode {
		devices = append(devices, resourcev1.Device{Name: fmt.Sprintf("gpu-%d", i)})
	}
	return &resourcev1.ResourceSlice{
		ObjectMeta: metav1.ObjectMeta{Name: d.sliceName(node)},
		Spec: resourcev1.ResourceSliceSpec{
			Driver:   d.name,
			Pool:     resourcev1.ResourcePool{Name: node, Generation: 1, ResourceSliceCount: 1},
			NodeName: ptr.To(node),
			Devices:  devices,
		},
	}
}

func (d *draDriver) sliceName(node string) string { return d.class + "-" + node }

// expectEvictedAndReplaced expects the victim's pod, whose device was tainted NoExecute, to
// have been marked DisruptionTarget as upstream and deleted (its deletion watch event's
// last state), with upstream's Event, and replaced by the Deployment on an untainted device,
// while the other pods of before are untouched.
func expectEvictedAndReplaced(ctx context.Context, w *draWatch, ns string, driver *draDriver, before map[types.UID]podClaim, victim podClaim) {
	GinkgoHelper()
	// Marked DisruptionTarget as upstream, then deleted (the deletion watch event's last state).
	gone := w.podDeleted(ctx, victim.pod.UID)
	Expect(gone.Status.Conditions).To(ContainElement(And(
		HaveField("Type", corev1.DisruptionTarget),
		HaveField("Status", corev1.ConditionTrue),
		HaveField("Reason", "DeletionByDeviceTaintManager"),
		HaveField("Message", "Device Taint manager: deleting due to NoExecute taint"),
	)), "pod %s evicted by the device taint", victim.pod.Name)
	Eventually(ctx, func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(cl.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(
			HaveField("InvolvedObject.UID", victim.pod.UID),
			HaveField("Source.Component", "device-taint-eviction-controller"),
			HaveField("Reason", "DeviceTaintManagerEviction"),
			HaveField("Message", "Marking for deletion"),
		)))
	}).WithTimeout(30*time.Second).Should(Succeed(), "logs in %s", logDir)

	// The Deployment replaces it; the scheduler does not allocate the tainted device again.
	after := expectPodsWithAllocatedClaims(ctx, ns, driver, 3)
	Expect(after).NotTo(HaveKey(victim.pod.UID))
	for uid, pc := range before {
		if uid == victim.pod.UID {
			continue
		}
		// The other pods are untouched: same pods, same claims and devices, never marked.
		Expect(after).To(HaveKey(uid), "pod %s kept", pc.pod.Name)
		Expect(after[uid].claim).To(Equal(pc.claim))
		Expect(after[uid].node + "/" + after[uid].device).To(Equal(pc.node + "/" + pc.device))
		Expect(after[uid].pod.Status.Conditions).NotTo(ContainElement(HaveField("Type", corev1.DisruptionTarget)), "pod %s", pc.pod.Name)
	}
	for uid, pc := range after {
		if _, old := before[uid]; !old {
			Expect(pc.node+"/"+pc.device).NotTo(Equal(victim.node+"/"+victim.device), "replacement %s on the tainted device", pc.pod.Name)
		}
	}
	w.expectOnlyPodDeleted(victim.pod.UID)
}

// expectRuleCondition waits until the DeviceTaintRule's EvictionInProgress condition, for its
// current generation, has the status, reason and message.
func expectRuleCondition(ctx context.Context, name string, status metav1.ConditionStatus, reason, message string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		rule := &resourcev1.DeviceTaintRule{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Name: name}, rule)).To(Succeed())
		g.Expect(rule.Status.Conditions).To(ContainElement(And(
			HaveField("Type", resourcev1.DeviceTaintConditionEvictionInProgress),
			HaveField("Status", status),
			HaveField("Reason", reason),
			HaveField("Message", message),
			HaveField("ObservedGeneration", rule.Generation),
		)))
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "DeviceTaintRule %s; logs in %s", name, logDir)
}

// taint gives the node's device a NoExecute taint in the driver's slice, as a driver does
// when a device fails.
func (d *draDriver) taint(ctx context.Context, node, device string) {
	GinkgoHelper()
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		slice := &resourcev1.ResourceSlice{}
		if err := cl.Get(ctx, client.ObjectKey{Name: d.sliceName(node)}, slice); err != nil {
			return err
		}
		for i := range slice.Spec.Devices {
			if slice.Spec.Devices[i].Name == device {
				slice.Spec.Devices[i].Taints = []resourcev1.DeviceTaint{{Key: "dra.kcm.test/unhealthy", Value: "true", Effect: resourcev1.DeviceTaintEffectNoExecute}}
			}
		}
		return cl.Update(ctx, slice)
	})).To(Succeed())
}

// claim is a ResourceClaim of one device of the driver's class.
func (d *draDriver) claim(ns, name string) *resourcev1.ResourceClaim {
	return &resourcev1.ResourceClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       resourcev1.ResourceClaimSpec{Devices: d.request()},
	}
}

// expectQuotaUsed waits until the quota "devices" reports used for the resource, as kcm's
// resourcequota-controller counts it.
func expectQuotaUsed(ctx context.Context, ns string, name corev1.ResourceName, used string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		q := &corev1.ResourceQuota{}
		g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "devices"}, q)).To(Succeed())
		hard, found := q.Status.Hard[name]
		g.Expect(found).To(BeTrue(), "status.hard has %s", name)
		g.Expect(hard.String()).To(Equal("2"))
		n, found := q.Status.Used[name]
		g.Expect(found).To(BeTrue(), "status.used has %s", name)
		g.Expect(n.String()).To(Equal(used))
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "quota's %s used; logs in %s", name, logDir)
}

// request asks for one device of the driver's class.
func (d *draDriver) request() resourcev1.DeviceClaim {
	return resourcev1.DeviceClaim{Requests: []resourcev1.DeviceRequest{{
		Name: "gpu",
		Exactly: &resourcev1.ExactDeviceRequest{
			DeviceClassName: d.class,
			AllocationMode:  resourcev1.DeviceAllocationModeExactCount,
			Count:           1,
		},
	}}}
}

// template is the ResourceClaimTemplate "gpu" of one device, with a label and an annotation
// that upstream copies to each claim.
func (d *draDriver) template(ns string) *resourcev1.ResourceClaimTemplate {
	return &resourcev1.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpu"},
		Spec: resourcev1.ResourceClaimTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"e2e": "dra"}, Annotations: map[string]string{"e2e/from": "template"}},
			Spec:       resourcev1.ResourceClaimSpec{Devices: d.request()},
		},
	}
}

// askForDevice makes the pod template's container use a claim "gpu" made from the template.
func (d *draDriver) askForDevice(t *corev1.PodTemplateSpec) {
	t.Spec.ResourceClaims = []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: ptr.To("gpu")}}
	t.Spec.Containers[0].Resources.Claims = []corev1.ResourceClaim{{Name: "gpu"}}
}

// podClaim is a pod and the claim generated for it, with the device allocated.
type podClaim struct {
	pod    corev1.Pod
	claim  string
	node   string
	device string
}

// expectPodsWithAllocatedClaims waits until n live pods of the spec's Deployment each have
// their own claim, named and made as upstream makes it from the template, recorded in the
// pod's status, allocated by kube-scheduler to a device of the pod's node and reserved for
// the pod alone.
func expectPodsWithAllocatedClaims(ctx context.Context, ns string, d *draDriver, n int) map[types.UID]podClaim {
	GinkgoHelper()
	var result map[types.UID]podClaim
	Eventually(ctx, func(g Gomega) {
		result = map[types.UID]podClaim{}
		pods := livePods(g, ns, map[string]string{"app": "web"})
		g.Expect(pods).To(HaveLen(n))
		devices := map[string]string{}
		for _, p := range pods {
			g.Expect(p.Status.ResourceClaimStatuses).To(HaveLen(1), "pod %s status.resourceClaimStatuses", p.Name)
			s := p.Status.ResourceClaimStatuses[0]
			g.Expect(s.Name).To(Equal("gpu"))
			g.Expect(s.ResourceClaimName).NotTo(BeNil(), "pod %s: claim name recorded", p.Name)
			claim := &resourcev1.ResourceClaim{}
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: *s.ResourceClaimName}, claim)).To(Succeed())

			// Made as upstream makes it: generateName <pod>-<claim>-, the pod-claim-name
			// annotation, controlled by the pod, the template's metadata and spec.
			g.Expect(claim.GenerateName).To(Equal(p.Name + "-gpu-"))
			g.Expect(claim.Annotations).To(HaveKeyWithValue("resource.kubernetes.io/pod-claim-name", "gpu"))
			g.Expect(claim.Annotations).To(HaveKeyWithValue("e2e/from", "template"))
			g.Expect(claim.Labels).To(HaveKeyWithValue("e2e", "dra"))
			g.Expect(claim.OwnerReferences).To(Equal([]metav1.OwnerReference{{
				APIVersion: "v1", Kind: "Pod", Name: p.Name, UID: p.UID, Controller: ptr.To(true),
			}}), "claim %s controlled by its pod", claim.Name)
			g.Expect(claim.Spec.Devices).To(Equal(d.request()))

			// Allocated by the scheduler on the pod's node, reserved for the pod.
			g.Expect(claim.Status.Allocation).NotTo(BeNil(), "claim %s allocated", claim.Name)
			results := claim.Status.Allocation.Devices.Results
			g.Expect(results).To(HaveLen(1))
			g.Expect(results[0].Driver).To(Equal(d.name))
			g.Expect(results[0].Pool).To(Equal(p.Spec.NodeName), "claim %s: a device of the pod's node", claim.Name)
			g.Expect(claim.Status.ReservedFor).To(ConsistOf(resourcev1.ResourceClaimConsumerReference{Resource: "pods", Name: p.Name, UID: p.UID}))
			g.Expect(claim.Finalizers).To(ContainElement(resourcev1.Finalizer))
			device := results[0].Pool + "/" + results[0].Device
			g.Expect(devices).NotTo(HaveKey(device), "device %s allocated twice", device)
			devices[device] = p.Name
			result[p.UID] = podClaim{pod: p, claim: claim.Name, node: results[0].Pool, device: results[0].Device}
		}
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
	return result
}

// draWatch watches the namespace's pods and claims from before the spec creates them: when
// each was first seen, when each claim was first seen allocated and reserved, and each
// claim's last state when it was deleted.
type draWatch struct {
	mu           sync.Mutex
	podSeen      map[types.UID]time.Time
	claimSeen    map[string]time.Time
	claimReady   map[string]time.Time
	claimDeleted map[string]*resourcev1.ResourceClaim
	podDeletions map[types.UID]*corev1.Pod
	// podDeletedTime is when each deletion event arrived.
	podDeletedTime map[types.UID]time.Time
}

func watchDRA(ctx context.Context, ns string) *draWatch {
	GinkgoHelper()
	w := &draWatch{podSeen: map[types.UID]time.Time{}, claimSeen: map[string]time.Time{},
		claimReady: map[string]time.Time{}, claimDeleted: map[string]*resourcev1.ResourceClaim{}, podDeletions: map[types.UID]*corev1.Pod{}, podDeletedTime: map[types.UID]time.Time{}}
	cs := newClientset()
	pods, err := cs.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	claims, err := cs.ResourceV1().ResourceClaims(ns).Watch(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(pods.Stop)
	DeferCleanup(claims.Stop)
	go func() {
		for e := range pods.ResultChan() {
			if p, ok := e.Object.(*corev1.Pod); ok {
				w.mu.Lock()
				if _, seen := w.podSeen[p.UID]; !seen {
					w.podSeen[p.UID] = time.Now()
				}
				if e.Type == watch.Deleted {
					w.podDeletions[p.UID] = p
					w.podDeletedTime[p.UID] = time.Now()
				}
				w.mu.Unlock()
			}
		}
	}()
	go func() {
		for e := range claims.ResultChan() {
			c, ok := e.Object.(*resourcev1.ResourceClaim)
			if !ok {
				continue
			}
			now := time.Now()
			w.mu.Lock()
			if _, seen := w.claimSeen[c.Name]; !seen {
				w.claimSeen[c.Name] = now
			}
			if _, seen := w.claimReady[c.Name]; !seen && c.Status.Allocation != nil && len(c.Status.ReservedFor) > 0 {
				w.claimReady[c.Name] = now
			}
			if e.Type == watch.Deleted {
				w.claimDeleted[c.Name] = c
			}
			w.mu.Unlock()
		}
	}()
	return w
}

// deleted waits for the claim's deletion event and returns its last state.
func (w *draWatch) deleted(ctx context.Context, name string) *resourcev1.ResourceClaim {
	GinkgoHelper()
	var last *resourcev1.ResourceClaim
	Eventually(ctx, func() *resourcev1.ResourceClaim {
		w.mu.Lock()
		defer w.mu.Unlock()
		last = w.claimDeleted[name]
		return last
	}).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).ShouldNot(BeNil(), "claim %s deleted; logs in %s", name, logDir)
	return last
}

// podDeleted waits for the pod's deletion event and returns its last state.
func (w *draWatch) podDeleted(ctx context.Context, uid types.UID) *corev1.Pod {
	GinkgoHelper()
	var last *corev1.Pod
	Eventually(ctx, func() *corev1.Pod {
		w.mu.Lock()
		defer w.mu.Unlock()
		last = w.podDeletions[uid]
		return last
	}).WithTimeout(time.Minute).WithPolling(100*time.Millisecond).ShouldNot(BeNil(), "pod %s deleted; logs in %s", uid, logDir)
	return last
}

// podDeletedAt is when the pod's deletion event arrived.
func (w *draWatch) podDeletedAt(uid types.UID) time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.podDeletedTime[uid]
}

// expectNoPodDeleted expects no pod to have been deleted since the watch began.
func (w *draWatch) expectNoPodDeleted() {
	GinkgoHelper()
	w.mu.Lock()
	defer w.mu.Unlock()
	Expect(w.podDeletions).To(BeEmpty())
}

// expectOnlyPodDeleted expects no pod but uid to have been deleted since the watch began.
func (w *draWatch) expectOnlyPodDeleted(uid types.UID) {
	GinkgoHelper()
	w.mu.Lock()
	defer w.mu.Unlock()
	Expect(w.podDeletions).To(ConsistOf(HaveField("UID", uid)))
}

// reportLatencies prints, for each pod, how long after the Deployment's creation it was
// seen, how long until kcm's claim for it was seen, and until the scheduler's allocation and
// reservation of that claim was seen.
func (w *draWatch) reportLatencies(start time.Time, pods map[types.UID]podClaim) {
	w.mu.Lock()
	defer w.mu.Unlock()
	var lines []string
	for uid, pc := range pods {
		seen := w.podSeen[uid]
		lines = append(lines, fmt.Sprintf("pod %s seen +%s, its claim made %s later, allocated and reserved %s after that",
			pc.pod.Name, seen.Sub(start).Round(time.Millisecond), w.claimSeen[pc.claim].Sub(seen).Round(time.Millisecond),
			w.claimReady[pc.claim].Sub(w.claimSeen[pc.claim]).Round(time.Millisecond)))
	}
	sort.Strings(lines)
	AddReportEntry("claim latencies", strings.Join(lines, "\n"))
	GinkgoWriter.Println(strings.Join(lines, "\n"))
}
