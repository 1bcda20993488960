//go:build e2e && linux

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	utilrand "k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/parallel"
)

// Volumes of a CSI driver that needs attaching (issue 18): the test plays the driver's
// provisioner and attacher and the kubelet's volume manager (fakeCSI, setVolumeInUse);
// kcm's binder, attach-detach, PVC protection and VolumeAttributesClass protection
// controllers do the rest, each as its own ServiceAccount.
var _ = Describe("CSI volumes", func() {
	BeforeEach(func(ctx SpecContext) {
		if added := ensureControllerManagedAttachDetach(ctx); len(added) > 0 {
			GinkgoWriter.Printf("annotated %s=true on %v, as their kubelet would\n", controllerManagedAttachDetach, added)
		}
	})

	It("of a StatefulSet's pods are attached to the nodes the pods land on, and detached only once the node stops using them", func(ctx SpecContext) {
		f := installFakeCSI(ctx, driverName())
		ns := newNamespace(ctx)
		DeferCleanup(f.releaseAll, ns)

		By("a StatefulSet of 3 with a claim template of the driver's class")
		Expect(cl.Create(ctx, newStatefulSet(ns, "web", 3, f.class))).To(Succeed())
		members := map[int]volumeUse{}
		Eventually(ctx, func(g Gomega) {
			for i := range 3 {
				members[i] = observeVolumeUse(g, ctx, ns, fmt.Sprintf("web-%d", i), fmt.Sprintf("data-web-%d", i))
			}
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "3 pods scheduled with bound claims; logs in %s", logDir)
		for _, m := range members {
			GinkgoWriter.Printf("pod %s on %s: volume %s\n", m.pod, m.node, m.pv.Name)
			// The kubelet reports a volume of a pod it runs in use before it waits for the
			// attachment and mounts it.
			setVolumeInUse(ctx, m.node, f.uniqueVolumeName(m.pv), true)
		}

		By("a VolumeAttachment named as upstream names it, per pod's volume and node; attached, listed in node.status.volumesAttached, with upstream's Event")
		Eventually(ctx, func(g Gomega) {
			for _, m := range members {
				f.expectAttached(g, ctx, m)
			}
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
		Eventually(ctx, func(g Gomega) {
			for _, m := range members {
				events := &corev1.EventList{}
				g.Expect(cl.List(ctx, events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": m.pod})).To(Succeed())
				g.Expect(events.Items).To(ContainElement(And(
					HaveField("Reason", "SuccessfulAttachVolume"),
					HaveField("Type", corev1.EventTypeNormal),
					HaveField("Message", fmt.Sprintf("AttachVolume.Attach succeeded for volume %q ", m.pv.Name)),
				)), "events of pod %s", m.pod)
			}
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)

		By("scaling to 1: web-2 goes, then web-1; the kubelet unmounts web-1's volume only")
		sts := &appsv1.StatefulSet{}
		Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, sts)).To(Succeed())
		patch := client.MergeFrom(sts.DeepCopy())
		sts.Spec.Replicas = ptr.To[int32](1)
		Expect(cl.Patch(ctx, sts, patch)).To(Succeed())
		for _, i := range []int{2, 1} {
			Eventually(ctx, func() error {
				return cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: members[i].pod}, &corev1.Pod{})
			}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "pod %s deleted; logs in %s", members[i].pod, logDir)
		}
		setVolumeInUse(ctx, members[1].node, f.uniqueVolumeName(members[1].pv), false)

		By("web-1's volume, unmounted, is detached: its VolumeAttachment deleted, gone from volumesAttached")
		Eventually(ctx, func(g Gomega) {
			f.expectDetached(g, ctx, members[1])
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		// The controller saw web-2 deleted before web-1 (one watch, in order) and has since
		// detached web-1's volume: it keeps web-2's attached because its node still uses it.
		By("web-2's volume, gone from its pod earlier but still in use on its node, stays attached; web-0's too")
		f.expectAttached(Default, ctx, members[2])
		f.expectAttached(Default, ctx, members[0])

		By("web-2's volume, once unmounted, is detached")
		setVolumeInUse(ctx, members[2].node, f.uniqueVolumeName(members[2].pv), false)
		Eventually(ctx, func(g Gomega) {
			f.expectDetached(g, ctx, members[2])
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		f.expectAttached(Default, ctx, members[0])
	})

	It("keep a VolumeAttributesClass that a claim or volume refers to from being deleted until the last one goes", func(ctx SpecContext) {
		f := installFakeCSI(ctx, driverName())
		ns := newNamespace(ctx)
		DeferCleanup(f.releaseAll, ns)

		By("two classes: gold for claims b and c, silver for claim a; each claim bound to a volume of the same class")
		var classes []*storagev1.VolumeAttributesClass
		for _, name := range []string{"gold", "silver"} {
			vac := &storagev1.VolumeAttributesClass{
				ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
				DriverName: f.driver,
				Parameters: map[string]string{"iops": "3000"},
			}
			Expect(cl.Create(ctx, vac)).To(Succeed())
			DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, vac))).To(Succeed()) })
			classes = append(classes, vac)
		}
		gold, silver := classes[0], classes[1]
		for claim, vac := range map[string]string{"a": silver.Name, "b": gold.Name, "c": gold.Name} {
			pvc := newClaim(ns, claim, f.class)
			pvc.Spec.VolumeAttributesClassName = ptr.To(vac)
			Expect(cl.Create(ctx, pvc)).To(Succeed())
		}
		Eventually(ctx, func(g Gomega) {
			for _, name := range []string{"a", "b", "c"} {
				pvc := &corev1.PersistentVolumeClaim{}
				g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, pvc)).To(Succeed())
				g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound), "claim %s", name)
			}
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "claims bound; logs in %s", logDir)

		By("both classes carry the protection finalizer (the API server's admission adds it); deleting them leaves them terminating")
		for _, vac := range classes {
			Expect(cl.Get(ctx, client.ObjectKeyFromObject(vac), vac)).To(Succeed())
			Expect(vac.Finalizers).To(ContainElement(vacProtectionFinalizer), vac.Name)
			Expect(cl.Delete(ctx, vac)).To(Succeed())
		}

		By("claim b goes, then claim a (and their volumes, Released, deleted by the provisioner)")
		for _, name := range []string{"b", "a"} {
			Expect(cl.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
		}
		Eventually(ctx, func() error {
			return cl.Get(ctx, client.ObjectKeyFromObject(silver), &storagev1.VolumeAttributesClass{})
		}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "silver released once claim a and its volume went; logs in %s", logDir)
		// The controller has acted on claim a, deleted after claim b: gold, still named by
		// claim c and its volume, keeps its finalizer.
		Expect(cl.Get(ctx, client.ObjectKeyFromObject(gold), gold)).To(Succeed())
		Expect(gold.DeletionTimestamp).NotTo(BeNil())
		Expect(gold.Finalizers).To(ContainElement(vacProtectionFinalizer))

		By("claim c goes: gold is released")
		Expect(cl.Delete(ctx, &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "c"}})).To(Succeed())
		Eventually(ctx, func() error {
			return cl.Get(ctx, client.ObjectKeyFromObject(gold), &storagev1.VolumeAttributesClass{})
		}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "gold released; logs in %s", logDir)
	})

	It("of a claim asking for more storage are handed to the driver's external resizer", func(ctx SpecContext) {
		f := installFakeCSI(ctx, driverName())
		ns := newNamespace(ctx)
		DeferCleanup(f.releaseAll, ns)

		Expect(cl.Create(ctx, newClaim(ns, "data", f.class))).To(Succeed())
		pvc := &corev1.PersistentVolumeClaim{}
		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "data"}, pvc)).To(Succeed())
			g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "claim bound; logs in %s", logDir)

		By("the claim asks for 2Gi (its class allows expansion): upstream's ExternalExpanding Event")
		patch := client.MergeFrom(pvc.DeepCopy())
		pvc.Spec.Resources.Requests[corev1.ResourceStorage] = resource.MustParse("2Gi")
		Expect(cl.Patch(ctx, pvc, patch)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			events := &corev1.EventList{}
			g.Expect(cl.List(ctx, events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": "data"})).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("InvolvedObject.Kind", "PersistentVolumeClaim"),
				HaveField("Reason", "ExternalExpanding"),
				HaveField("Type", corev1.EventTypeNormal),
				HaveField("Message", "waiting for an external controller to expand this PVC"),
			)))
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
	})

	// The attach latency the issue asks for: E2E_ATTACH_PODS pods (20 in `make e2e`; 200 for
	// the measurement), each with its own claim bound beforehand, created at once. For each pod,
	// from the moment the test's watch sees it bound to a node to the moment its watch sees the
	// pod's VolumeAttachment created. Reported, not asserted.
	It("are attached for many pods created at once: the time from each pod scheduled to its VolumeAttachment created", func(ctx SpecContext) {
		n := attachPods()
		f := installFakeCSI(ctx, driverName())
		ns := newNamespace(ctx)
		DeferCleanup(f.releaseAll, ns)

		By(fmt.Sprintf("%d claims bound to %d volumes made for them", n, n))
		pvs := make([]*corev1.PersistentVolume, n)
		Expect(parallel.Do(ctx, n, 20, func(ctx context.Context, i int) error {
			claim := newClaim(ns, fmt.Sprintf("data-%d", i), f.class)
			pvs[i] = f.volumeFor(claim, fmt.Sprintf("%s-%d", ns, i))
			if err := cl.Create(ctx, pvs[i]); err != nil {
				return err
			}
			claim.Spec.VolumeName = pvs[i].Name
			return cl.Create(ctx, claim)
		})).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			claims := &corev1.PersistentVolumeClaimList{}
			g.Expect(cl.List(ctx, claims, client.InNamespace(ns))).To(Succeed())
			bound := 0
			for _, c := range claims.Items {
				if c.Status.Phase == corev1.ClaimBound {
					bound++
				}
			}
			g.Expect(bound).To(Equal(n), "claims bound")
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)

		scheduled := watchScheduled(ctx, ns)
		By(fmt.Sprintf("%d pods, one per claim, created at once", n))
		start := time.Now()
		Expect(parallel.Do(ctx, n, 50, func(ctx context.Context, i int) error {
			return cl.Create(ctx, newVolumePod(ns, fmt.Sprintf("attach-%d", i), fmt.Sprintf("data-%d", i)))
		})).To(Succeed())

		By("each gets its VolumeAttachment, attached, and listed in its node's volumesAttached")
		nodes := make([]string, n)
		Eventually(ctx, func(g Gomega) {
			pods := &corev1.PodList{}
			g.Expect(cl.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
			g.Expect(pods.Items).To(HaveLen(n))
			for _, p := range pods.Items {
				g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s scheduled", p.Name)
				i, err := strconv.Atoi(strings.TrimPrefix(p.Name, "attach-"))
				g.Expect(err).NotTo(HaveOccurred())
				nodes[i] = p.Spec.NodeName
			}
			for i := range n {
				va := &storagev1.VolumeAttachment{}
				g.Expect(cl.Get(ctx, client.ObjectKey{Name: f.attachmentName(pvs[i], nodes[i])}, va)).To(Succeed(), "VolumeAttachment of pod attach-%d", i)
				g.Expect(va.Status.Attached).To(BeTrue())
			}
		}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "logs in %s", logDir)
		Eventually(ctx, func(g Gomega) {
			attached := map[corev1.UniqueVolumeName]bool{}
			for _, node := range slices.Compact(slices.Sorted(slices.Values(nodes))) {
				for _, v := range attachedVolumes(g, ctx, node) {
					attached[v] = true
				}
			}
			for i := range n {
				g.Expect(attached).To(HaveKey(f.uniqueVolumeName(pvs[i])), "volume of pod attach-%d in volumesAttached", i)
			}
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)

		latencies := make([]time.Duration, n)
		var last time.Time
		for i := range n {
			created, ok := f.seen(f.attachmentName(pvs[i], nodes[i]))
			Expect(ok).To(BeTrue(), "the watch saw the VolumeAttachment of pod attach-%d created", i)
			at, ok := scheduled.at(fmt.Sprintf("attach-%d", i))
			Expect(ok).To(BeTrue(), "the watch saw pod attach-%d scheduled", i)
			latencies[i] = created.Sub(at)
			if created.After(last) {
				last = created
			}
		}
		slices.Sort(latencies)
		report := fmt.Sprintf("attach latency, pod scheduled -> VolumeAttachment created, %d pods at once: p50 %s, p90 %s, max %s; last VolumeAttachment %s after the first pod was created",
			n, percentile(latencies, 50), percentile(latencies, 90), latencies[n-1], last.Sub(start).Round(time.Millisecond))
		GinkgoWriter.Println(report)
		AddReportEntry("attach latency", report, ReportEntryVisibilityAlways)

		By("the pods deleted: every volume, not in use, is detached")
		detachStart := time.Now()
		Expect(cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns))).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			vas := &storagev1.VolumeAttachmentList{}
			g.Expect(cl.List(ctx, vas)).To(Succeed())
			left := 0
			for _, va := range vas.Items {
				if va.Spec.Attacher == f.driver {
					left++
				}
			}
			g.Expect(left).To(BeZero(), "VolumeAttachments left")
		}).WithTimeout(5*time.Minute).WithPolling(2*time.Second).Should(Succeed(), "logs in %s", logDir)
		GinkgoWriter.Printf("%d volumes detached %s after their pods were deleted\n", n, time.Since(detachStart).Round(time.Millisecond))
	}, SpecTimeout(20*time.Minute))
})

// A restarted kcm rebuilds what is attached from the VolumeAttachments and the nodes' status,
// not from its own memory: nothing in use is detached, and what changed while it was down is
// acted on.
var _ = Describe("CSI volumes across a kcm restart", Serial, func() {
	BeforeEach(func(ctx SpecContext) { ensureControllerManagedAttachDetach(ctx) })

	It("stay attached while in use, and a volume whose pod went while kcm was down is detached once unmounted", func(ctx SpecContext) {
		f := installFakeCSI(ctx, driverName())
		ns := newNamespace(ctx)
		DeferCleanup(f.releaseAll, ns)

		By("pods a, b and c, each with its own claim, attached and mounted")
		members := map[string]volumeUse{}
		for _, name := range []string{"a", "b", "c"} {
			Expect(cl.Create(ctx, newClaim(ns, name, f.class))).To(Succeed())
			Expect(cl.Create(ctx, newVolumePod(ns, name, name))).To(Succeed())
		}
		Eventually(ctx, func(g Gomega) {
			for _, name := range []string{"a", "b", "c"} {
				members[name] = observeVolumeUse(g, ctx, ns, name, name)
			}
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "pods scheduled with bound claims; logs in %s", logDir)
		for _, m := range members {
			setVolumeInUse(ctx, m.node, f.uniqueVolumeName(m.pv), true)
		}
		Eventually(ctx, func(g Gomega) {
			for _, m := range members {
				f.expectAttached(g, ctx, m)
			}
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)

		By("kcm stops; meanwhile pods b and c go, and b's volume is unmounted")
		DeferCleanup(func(ctx SpecContext) {
			if kcm.Exited() {
				restartKCM(ctx)
			}
		})
		components = without(components, kcm)
		kcm.Stop(30 * time.Second)
		for _, name := range []string{"b", "c"} {
			Expect(cl.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}})).To(Succeed())
			Eventually(ctx, func() error {
				return cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Pod{})
			}).WithTimeout(time.Minute).Should(Satisfy(apierrors.IsNotFound), "pod %s deleted; logs in %s", name, logDir)
		}
		setVolumeInUse(ctx, members["b"].node, f.uniqueVolumeName(members["b"].pv), false)

		By("kcm starts again: b's volume is detached; c's, still in use, and a's stay attached")
		restartKCM(ctx)
		Eventually(ctx, func(g Gomega) {
			f.expectDetached(g, ctx, members["b"])
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		f.expectAttached(Default, ctx, members["c"])
		f.expectAttached(Default, ctx, members["a"])
	})
})

// vacProtectionFinalizer is what the API server's admission puts on every
// VolumeAttributesClass and only volumeattributesclass-protection-controller takes off.
const vacProtectionFinalizer = "kubernetes.io/vac-protection"

// driverName is a CSI driver name of its own for one spec.
func driverName() string { return "e2e-" + utilrand.String(5) + ".csi.kcm.test" }

// attachPods is $E2E_ATTACH_PODS, or 20.
func attachPods() int {
	GinkgoHelper()
	v := os.Getenv("E2E_ATTACH_PODS")
	if v == "" {
		return 20
	}
	n, err := strconv.Atoi(v)
	Expect(err).NotTo(HaveOccurred(), "E2E_ATTACH_PODS")
	Expect(n).To(BeNumerically(">", 0), "E2E_ATTACH_PODS")
	return n
}

// volumeUse is a pod of the spec, the node it runs on and the volume bound to its claim.
type volumeUse struct {
	pod, node string
	pv        *corev1.PersistentVolume
}

// observeVolumeUse reads where the pod runs and the volume its claim is bound to.
func observeVolumeUse(g Gomega, ctx context.Context, ns, pod, claim string) volumeUse {
	p := &corev1.Pod{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: pod}, p)).To(Succeed())
	g.Expect(p.Spec.NodeName).NotTo(BeEmpty(), "pod %s scheduled", pod)
	pvc := &corev1.PersistentVolumeClaim{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: claim}, pvc)).To(Succeed())
	g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound), "claim %s", claim)
	pv := &corev1.PersistentVolume{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: pvc.Spec.VolumeName}, pv)).To(Succeed())
	return volumeUse{pod: pod, node: p.Spec.NodeName, pv: pv}
}

// expectAttached: the volume's VolumeAttachment on the node exists, names the driver, node
// and volume, is attached and not being deleted, and the node lists the volume attached.
func (f *fakeCSI) expectAttached(g Gomega, ctx context.Context, m volumeUse) {
	GinkgoHelper()
	va := &storagev1.VolumeAttachment{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Name: f.attachmentName(m.pv, m.node)}, va)).To(Succeed(), "VolumeAttachment of %s's volume", m.pod)
	g.Expect(va.Spec.Attacher).To(Equal(f.driver))
	g.Expect(va.Spec.NodeName).To(Equal(m.node))
	g.Expect(va.Spec.Source.PersistentVolumeName).To(HaveValue(Equal(m.pv.Name)))
	g.Expect(va.DeletionTimestamp).To(BeNil(), "VolumeAttachment %s being deleted", va.Name)
	g.Expect(va.Status.Attached).To(BeTrue(), "VolumeAttachment %s attached", va.Name)
	g.Expect(attachedVolumes(g, ctx, m.node)).To(ContainElement(f.uniqueVolumeName(m.pv)), "volumesAttached of %s", m.node)
}

// expectDetached: the volume's VolumeAttachment on the node is gone, and so is the volume
// from the node's volumesAttached.
func (f *fakeCSI) expectDetached(g Gomega, ctx context.Context, m volumeUse) {
	GinkgoHelper()
	err := cl.Get(ctx, client.ObjectKey{Name: f.attachmentName(m.pv, m.node)}, &storagev1.VolumeAttachment{})
	g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "VolumeAttachment of %s's volume deleted: %v", m.pod, err)
	g.Expect(attachedVolumes(g, ctx, m.node)).NotTo(ContainElement(f.uniqueVolumeName(m.pv)), "volumesAttached of %s", m.node)
}

// releaseAll ends a spec's use of the driver's volumes before the driver goes: the kubelets
// stop reporting them in use, the namespace is deleted (its pods and claims with it), and
// kcm detaches every volume of the driver.
func (f *fakeCSI) releaseAll(ctx SpecContext, ns string) {
	prefix := corev1.UniqueVolumeName("kubernetes.io/csi/" + f.driver + "^")
	nodes := &corev1.NodeList{}
	Expect(cl.List(ctx, nodes)).To(Succeed())
	for _, node := range nodes.Items {
		for _, v := range node.Status.VolumesInUse {
			if strings.HasPrefix(string(v), string(prefix)) {
				setVolumeInUse(ctx, node.Name, v, false)
			}
		}
	}
	// StatefulSets and their pods go first: a StatefulSet that outlives its pods in a
	// terminating namespace has its controller's creates refused ("is forbidden: unable to
	// create new content"), which the suite's check of kcm's log would count.
	Expect(cl.DeleteAllOf(ctx, &appsv1.StatefulSet{}, client.InNamespace(ns), client.PropagationPolicy(metav1.DeletePropagationBackground))).To(Succeed())
	Expect(cl.DeleteAllOf(ctx, &corev1.Pod{}, client.InNamespace(ns))).To(Succeed())
	Eventually(ctx, func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(cl.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty(), "pods left in %s", ns)
	}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
	Expect(client.IgnoreNotFound(cl.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}))).To(Succeed())
	Eventually(ctx, func(g Gomega) {
		err := cl.Get(ctx, client.ObjectKey{Name: ns}, &corev1.Namespace{})
		g.Expect(apierrors.IsNotFound(err)).To(BeTrue(), "namespace %s gone: %v", ns, err)
		vas := &storagev1.VolumeAttachmentList{}
		g.Expect(cl.List(ctx, vas)).To(Succeed())
		for _, va := range vas.Items {
			g.Expect(va.Spec.Attacher).NotTo(Equal(f.driver), "VolumeAttachment %s left", va.Name)
		}
	}).WithTimeout(3*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
}

// volumeFor is a volume of the driver made for the claim beforehand (pre-bound to it by name).
func (f *fakeCSI) volumeFor(claim *corev1.PersistentVolumeClaim, name string) *corev1.PersistentVolume {
	return &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{provisionedByAnnotation: f.driver}},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:                      claim.Spec.Resources.Requests,
			AccessModes:                   claim.Spec.AccessModes,
			StorageClassName:              f.class,
			PersistentVolumeReclaimPolicy: corev1.PersistentVolumeReclaimDelete,
			ClaimRef:                      &corev1.ObjectReference{Namespace: claim.Namespace, Name: claim.Name},
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{
				Driver: f.driver, VolumeHandle: "vol-" + name,
			}},
		},
	}
}

// newClaim is a 1Gi ReadWriteOnce claim of the class.
func newClaim(ns, name, class string) *corev1.PersistentVolumeClaim {
	return &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       claimSpec(class),
	}
}

func claimSpec(class string) corev1.PersistentVolumeClaimSpec {
	return corev1.PersistentVolumeClaimSpec{
		AccessModes:      []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		StorageClassName: ptr.To(class),
		Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{
			corev1.ResourceStorage: resource.MustParse("1Gi"),
		}},
	}
}

// newStatefulSet is a StatefulSet of pause pods, each mounting its own claim "data" of the class.
func newStatefulSet(ns, name string, replicas int32, class string) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	template := podTemplate(labels, pauseImage)
	template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    ptr.To(replicas),
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template:    template,
			VolumeClaimTemplates: []corev1.PersistentVolumeClaim{{
				ObjectMeta: metav1.ObjectMeta{Name: "data"},
				Spec:       claimSpec(class),
			}},
		},
	}
}

// newVolumePod is a pause pod mounting the claim.
func newVolumePod(ns, name, claim string) *corev1.Pod {
	template := podTemplate(nil, pauseImage)
	template.Spec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}
	template.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
		PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: claim},
	}}}
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: template.Spec}
}

// scheduledWatch records when the test's watch first sees each pod of a namespace bound to a node.
type scheduledWatch struct {
	mu    sync.Mutex
	times map[string]time.Time
}

func watchScheduled(ctx context.Context, ns string) *scheduledWatch {
	GinkgoHelper()
	w := &scheduledWatch{times: map[string]time.Time{}}
	factory := informers.NewSharedInformerFactoryWithOptions(newClientset(), 0, informers.WithNamespace(ns))
	record := func(obj any) {
		p := obj.(*corev1.Pod)
		if p.Spec.NodeName == "" {
			return
		}
		w.mu.Lock()
		defer w.mu.Unlock()
		if _, ok := w.times[p.Name]; !ok {
			w.times[p.Name] = time.Now()
		}
	}
	_, err := factory.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: record, UpdateFunc: func(_, obj any) { record(obj) },
	})
	Expect(err).NotTo(HaveOccurred())
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	DeferCleanup(func() { close(stop); factory.Shutdown() })
	return w
}

func (w *scheduledWatch) at(pod string) (time.Time, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	t, ok := w.times[pod]
	return t, ok
}

// percentile is the p-th percentile of sorted durations (nearest rank).
func percentile(sorted []time.Duration, p int) time.Duration {
	rank := (p*len(sorted) + 99) / 100
	return sorted[max(rank, 1)-1]
}

// Issue 18's controllers, as kubeadm's command line selects them (--controllers=*,bootstrapsigner,tokencleaner).
var _ = Describe("kcm with kubeadm's arguments", func() {
	It("sets up issue 18's controllers that are on by default, and not selinux-warning-controller, off by default as upstream", func() {
		// The last kcm process started may not have logged its line yet.
		Eventually(func(g Gomega) {
			set := controllersSetUp(kcm.LogPath)
			g.Expect(set).To(ContainElements(
				"persistentvolume-attach-detach-controller",
				"persistentvolume-expander-controller",
				"volumeattributesclass-protection-controller",
				"service-cidr-controller",
				"persistentvolume-binder-controller",
			))
			g.Expect(set).NotTo(ContainElement("selinux-warning-controller"))
		}).WithTimeout(time.Minute).Should(Succeed(), "kcm's log %s", kcm.LogPath)
	})
})

// selinux-warning-controller is off by default, as upstream, and kubeadm does not name it:
// the suite's kcm is restarted with it added to kubeadm's --controllers, and with kubeadm's
// arguments again afterwards.
var _ = Describe("selinux-warning-controller", Serial, func() {
	It("runs under kubeadm's identity once --controllers names it, and tells both pods that use one volume with different SELinux labels", func(ctx SpecContext) {
		By("restarting kcm with --controllers=*,bootstrapsigner,tokencleaner,selinux-warning-controller")
		restartKCM(ctx, "--controllers=*,bootstrapsigner,tokencleaner,selinux-warning-controller")
		DeferCleanup(func(ctx SpecContext) {
			By("restarting kcm with kubeadm's arguments")
			restartKCM(ctx)
		})
		Eventually(func() []string { return controllersSetUp(kcm.LogPath) }).WithTimeout(time.Minute).
			Should(ContainElement("selinux-warning-controller"), "kcm's log %s", kcm.LogPath)

		f := installFakeCSI(ctx, driverName())
		ns := newNamespace(ctx)
		DeferCleanup(f.releaseAll, ns)
		By("a ReadWriteMany claim of a driver that mounts with -o context (seLinuxMount), used by two pods with different SELinux levels")
		csiDriver := &storagev1.CSIDriver{}
		Expect(cl.Get(ctx, client.ObjectKey{Name: f.driver}, csiDriver)).To(Succeed())
		csiDriver.Spec.SELinuxMount = ptr.To(true)
		Expect(cl.Update(ctx, csiDriver)).To(Succeed())
		shared := newClaim(ns, "shared", f.class)
		shared.Spec.AccessModes = []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
		Expect(cl.Create(ctx, shared)).To(Succeed())
		for name, level := range map[string]string{"pod1": "s0:c1,c2", "pod2": "s0:c98,c99"} {
			pod := newVolumePod(ns, name, "shared")
			pod.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: level}}
			Expect(cl.Create(ctx, pod)).To(Succeed())
		}

		conflict := func(label, other, otherLabel string) string {
			return fmt.Sprintf("SELinuxLabel %q conflicts with pod %s that uses the same volume as this pod with SELinuxLabel %q. If both pods land on the same node, only one of them may access the volume.",
				label, other, otherLabel)
		}
		Eventually(ctx, func(g Gomega) {
			for pod, want := range map[string]string{
				"pod1": conflict(":::s0:c1,c2", "pod2", ":::s0:c98,c99"),
				"pod2": conflict(":::s0:c98,c99", "pod1", ":::s0:c1,c2"),
			} {
				events := &corev1.EventList{}
				g.Expect(cl.List(ctx, events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": pod})).To(Succeed())
				g.Expect(events.Items).To(ContainElement(And(
					HaveField("Reason", "SELinuxLabelConflict"),
					HaveField("Type", corev1.EventTypeNormal),
					HaveField("Message", want),
				)), "events of pod %s", pod)
			}
		}).WithTimeout(time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
	})
})
