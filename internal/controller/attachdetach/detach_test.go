package attachdetach_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("detach", func() {
	It("waits until the node no longer reports the volume in use, unreports it, then deletes the VolumeAttachment", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "detach")
		node := ns + "-n"
		registerNode(ctx, node, true)
		createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		name, vol := vaName(ns+"-h", driver, node), unique(driver, ns+"-h")
		attachVA(ctx, name, true)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		setInUse(ctx, node, vol)

		forceDelete(ctx, p)
		Consistently(func(g Gomega) {
			g.Expect(getVA(ctx, g, name).DeletionTimestamp).To(BeNil())
			g.Expect(nodeAttached(ctx, node)(g)).To(ConsistOf(vol))
		}).WithTimeout(2 * time.Second).Should(Succeed())

		setInUse(ctx, node)
		Eventually(func(g Gomega) {
			g.Expect(getVA(ctx, g, name).DeletionTimestamp).NotTo(BeNil())
			g.Expect(nodeAttached(ctx, node)(g)).To(BeEmpty())
		}).Should(Succeed())
	})

	It("detaches a mounted volume at once from an out-of-service node, counted as a forced detach", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "oos")
		node := ns + "-n"
		registerNode(ctx, node, true)
		createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		name, vol := vaName(ns+"-h", driver, node), unique(driver, ns+"-h")
		attachVA(ctx, name, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		setInUse(ctx, node, vol)
		before := forcedDetaches("out-of-service")

		forceDelete(ctx, p)
		Consistently(vaExists(ctx, name)).WithTimeout(time.Second).Should(BeTrue())
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: corev1.TaintNodeOutOfService, Value: "nodeshutdown", Effect: corev1.TaintEffectNoExecute})
			return env.Client.Update(ctx, n)
		})).To(Succeed())
		Eventually(vaExists(ctx, name)).Should(BeFalse())
		Expect(forcedDetaches("out-of-service")).To(Equal(before + 1))
	})

	It("force-detaches a volume still mounted on an unready node after upstream's maximum wait for unmount", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "timeout")
		node := ns + "-n"
		registerNode(ctx, node, true)
		createVolume(ctx, ns, "c", csiSource(driver, ns+"-h"), corev1.ReadWriteOnce)
		p := createPod(ctx, ns, "p", node, claimVolume("c"))
		name, vol := vaName(ns+"-h", driver, node), unique(driver, ns+"-h")
		attachVA(ctx, name, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(vol))
		setInUse(ctx, node, vol)
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			n := &corev1.Node{}
			if err := env.Client.Get(ctx, client.ObjectKey{Name: node}, n); err != nil {
				return err
			}
			n.Status.Conditions[0].Status = corev1.ConditionUnknown
			return env.Client.Status().Update(ctx, n)
		})).To(Succeed())
		before := forcedDetaches("timeout")

		// Unneeded but mounted, the node unready: kept within the wait...
		forceDelete(ctx, p)
		Consistently(vaExists(ctx, name)).WithTimeout(time.Second).Should(BeTrue())
		// ...and detached once 6 minutes have passed, at the next sync of the node (another
		// pod scheduled there brings it).
		clk.Set(6*time.Minute + 5*time.Second)
		DeferCleanup(func() { clk.Set(0) })
		createVolume(ctx, ns, "other", csiSource(driver, ns+"-other"), corev1.ReadWriteOnce)
		createPod(ctx, ns, "other", node, claimVolume("other"))
		Eventually(vaExists(ctx, name)).Should(BeFalse())
		Expect(forcedDetaches("timeout")).To(Equal(before + 1))
	})

	It("keeps a deleted node's volume its last status had in use, and detaches the one it had not", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "deleted")
		node := ns + "-n"
		registerNode(ctx, node, true)
		createVolume(ctx, ns, "used", csiSource(driver, ns+"-used"), corev1.ReadWriteOnce)
		createVolume(ctx, ns, "free", csiSource(driver, ns+"-free"), corev1.ReadWriteOnce)
		usedVA, freeVA := vaName(ns+"-used", driver, node), vaName(ns+"-free", driver, node)
		used := createPod(ctx, ns, "used", node, claimVolume("used"))
		free := createPod(ctx, ns, "free", node, claimVolume("free"))
		attachVA(ctx, usedVA, false)
		attachVA(ctx, freeVA, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(unique(driver, ns+"-used"), unique(driver, ns+"-free")))
		setInUse(ctx, node, unique(driver, ns+"-used"))

		Expect(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node}})).To(Succeed())
		forceDelete(ctx, used)
		forceDelete(ctx, free)
		// The free volume is detached: the controller acted on the deleted node.
		Eventually(vaExists(ctx, freeVA)).Should(BeFalse())
		Consistently(vaExists(ctx, usedVA)).WithTimeout(2 * time.Second).Should(BeTrue())
	})

	It("after a restart, keeps a volume the node still uses and one a pod needs, and detaches the first once unmounted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "restart")
		node := ns + "-n"
		registerNode(ctx, node, true)
		createVolume(ctx, ns, "gone", csiSource(driver, ns+"-gone"), corev1.ReadWriteOnce)
		createVolume(ctx, ns, "kept", csiSource(driver, ns+"-kept"), corev1.ReadWriteOnce)
		goneVA, keptVA := vaName(ns+"-gone", driver, node), vaName(ns+"-kept", driver, node)
		gone, kept := unique(driver, ns+"-gone"), unique(driver, ns+"-kept")
		leaving := createPod(ctx, ns, "leaving", node, claimVolume("gone"))
		staying := createPod(ctx, ns, "staying", node, claimVolume("kept"))
		attachVA(ctx, goneVA, false)
		attachVA(ctx, keptVA, false)
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(gone, kept))
		setInUse(ctx, node, gone, kept)
		Eventually(events(ctx, staying)).Should(HaveLen(1))

		Expect(env.StopManager()).To(Succeed())
		forceDelete(ctx, leaving)
		Expect(startManager()).To(Succeed())

		// A pod created after the restart is attached: the controller runs.
		createVolume(ctx, ns, "new", csiSource(driver, ns+"-new"), corev1.ReadWriteOnce)
		createPod(ctx, ns, "new", node, claimVolume("new"))
		Eventually(vaExists(ctx, vaName(ns+"-new", driver, node))).Should(BeTrue())
		Consistently(func(g Gomega) {
			g.Expect(getVA(ctx, g, goneVA).DeletionTimestamp).To(BeNil())
			g.Expect(getVA(ctx, g, keptVA).DeletionTimestamp).To(BeNil())
			g.Expect(nodeAttached(ctx, node)(g)).To(ConsistOf(gone, kept))
		}).WithTimeout(2 * time.Second).Should(Succeed())
		// Reported before the restart: no second SuccessfulAttachVolume.
		Expect(events(ctx, staying)(Default)).To(HaveLen(1))

		setInUse(ctx, node, kept)
		Eventually(vaExists(ctx, goneVA)).Should(BeFalse())
		Eventually(nodeAttached(ctx, node)).Should(ConsistOf(kept))
		Expect(vaExists(ctx, keptVA)()).To(BeTrue())
	})
})
