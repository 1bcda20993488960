package pvbinder_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/pvbinder"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("persistentvolume-binder-controller", func() {
	DescribeTable("binds a claim to the smallest Available volume that fits",
		func(ctx SpecContext, volumes func(ctx context.Context, class string), claim []claimOpt, want string) {
			ns := env.Namespace(ctx, "pvb")
			volumes(ctx, ns)
			createClaim(ctx, ns, "data", ptr.To(ns), "2Gi", claim...)
			expectBound(ctx, ns, "data", ns+"-"+want, true, true)
		},
		Entry("capacity: the smallest of those large enough", func(ctx context.Context, class string) {
			createVolume(ctx, class+"-1gi", class, "1Gi")
			createVolume(ctx, class+"-10gi", class, "10Gi")
			createVolume(ctx, class+"-5gi", class, "5Gi")
		}, nil, "5gi"),
		Entry("access modes: only volumes offering all the claim asks for", func(ctx context.Context, class string) {
			createVolume(ctx, class+"-rwo", class, "2Gi")
			createVolume(ctx, class+"-rwx", class, "8Gi", withModes(corev1.ReadWriteOnce, corev1.ReadWriteMany))
		}, []claimOpt{wanting(corev1.ReadWriteMany)}, "rwx"),
		Entry("class: volumes of another class or none do not fit", func(ctx context.Context, class string) {
			createVolume(ctx, class+"-other", "", "2Gi")
			createVolume(ctx, class+"-mine", class, "9Gi")
		}, nil, "mine"),
		Entry("volume mode: a Block claim gets a Block volume", func(ctx context.Context, class string) {
			createVolume(ctx, class+"-fs", class, "2Gi")
			createVolume(ctx, class+"-block", class, "4Gi", blockMode)
		}, []claimOpt{wantingBlock}, "block"),
		Entry("selector: only volumes with matching labels", func(ctx context.Context, class string) {
			createVolume(ctx, class+"-plain", class, "2Gi")
			createVolume(ctx, class+"-silver", class, "2Gi", withLabel("tier", "silver"))
			createVolume(ctx, class+"-gold", class, "6Gi", withLabel("tier", "gold"))
		}, []claimOpt{selecting("tier", "gold")}, "gold"),
	)

	It("binds a claim and a volume created together on the volume's arrival, not on the periodic sync", func(ctx SpecContext) {
		// An hour's resync: within the spec only the volume's own events can bring the claim.
		restartWithSyncPeriod("1h")
		ns := env.Namespace(ctx, "pvb")

		By("the claim first: synced without a volume, then bound when its volume becomes Available")
		createClaim(ctx, ns, "claim-first", ptr.To(ns), "1Gi", selecting("for", "claim-first"))
		// The claim's sync found no volume and fell through to provisioning (its class does
		// not exist).
		env.ExpectEvent(ctx, claimNamed(ns, "claim-first"), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonProvisioningFailed,
			Message: fmt.Sprintf("storageclass.storage.k8s.io %q not found", ns)})
		createVolumeNoWait(ctx, ns+"-claim-first", ns, "1Gi", withLabel("for", "claim-first"))
		expectBound(ctx, ns, "claim-first", ns+"-claim-first", true, true)

		By("the volume first and the claim right after it, as one kubectl apply creates them")
		createVolumeNoWait(ctx, ns+"-volume-first", ns, "1Gi", withLabel("for", "volume-first"))
		createClaim(ctx, ns, "volume-first", ptr.To(ns), "1Gi", selecting("for", "volume-first"))
		expectBound(ctx, ns, "volume-first", ns+"-volume-first", true, true)

		By("a volume that does not fit the waiting claim leaves it Pending")
		createClaim(ctx, ns, "too-big", ptr.To(ns), "5Gi", selecting("for", "too-big"))
		createVolumeNoWait(ctx, ns+"-too-small", ns, "1Gi", withLabel("for", "too-big"))
		Eventually(volumePhase(ctx, ns+"-too-small")).Should(Equal(corev1.VolumeAvailable))
		Consistently(claimPhase(ctx, ns, "too-big")).Should(Equal(corev1.ClaimPending))
	})

	It("binds a claim naming its volume, and a volume naming its claim (claimRef without UID)", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvb")
		By("a claim whose spec.volumeName names an Available volume")
		createVolume(ctx, ns+"-named", ns, "3Gi")
		createClaim(ctx, ns, "names-volume", ptr.To(ns), "1Gi", naming(ns+"-named"))
		expectBound(ctx, ns, "names-volume", ns+"-named", false, true)

		By("a volume pre-bound to a claim by name: Available until the claim comes, then chosen over a smaller one")
		createVolume(ctx, ns+"-small", ns, "1Gi")
		createVolume(ctx, ns+"-prebound", ns, "5Gi", preBoundTo(ns, "named-by-volume"))
		Eventually(volumePhase(ctx, ns+"-prebound")).Should(Equal(corev1.VolumeAvailable))
		createClaim(ctx, ns, "named-by-volume", ptr.To(ns), "1Gi")
		expectBound(ctx, ns, "named-by-volume", ns+"-prebound", true, false)
		Expect(getVolume(ctx, ns+"-small")(Default).Spec.ClaimRef).To(BeNil())

		By("a claim naming a volume too small for it")
		createVolume(ctx, ns+"-tiny", ns, "1Gi")
		createClaim(ctx, ns, "too-big", ptr.To(ns), "2Gi", naming(ns+"-tiny"))
		env.ExpectEvent(ctx, claimNamed(ns, "too-big"), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonVolumeMismatch,
			Message: fmt.Sprintf("Cannot bind to requested volume %q: requested PV is too small", ns+"-tiny")})
		Expect(claimPhase(ctx, ns, "too-big")(Default)).To(Equal(corev1.ClaimPending))
		Expect(getVolume(ctx, ns+"-tiny")(Default).Spec.ClaimRef).To(BeNil())
	})

	It("waits for the scheduler with WaitForFirstConsumer, then binds a volume whose node affinity admits the selected node", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvb")
		createClass(ctx, ns, "kubernetes.io/no-provisioner", storagev1.VolumeBindingWaitForFirstConsumer, nil)
		node := env.Node(ctx, ns+"-node", testenv.NodeLabels(map[string]string{"kubernetes.io/hostname": ns + "-node"}))
		env.Cleanup(node)
		createVolume(ctx, ns+"-elsewhere", ns, "1Gi", onNode("other-node"))
		createVolume(ctx, ns+"-here", ns, "2Gi", onNode(ns+"-node"))

		createClaim(ctx, ns, "wffc", ptr.To(ns), "1Gi")
		env.ExpectEvent(ctx, claimNamed(ns, "wffc"), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonWaitForFirstConsumer,
			Message: "waiting for first consumer to be created before binding"})
		Consistently(func(g Gomega) string { return getClaim(ctx, ns, "wffc")(g).Spec.VolumeName }).
			WithTimeout(3 * time.Second).Should(BeEmpty())

		By("a pod using the claim, not scheduled yet")
		pod := testenv.NewPod(ns, "consumer", "")
		pod.Spec.Volumes = []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "wffc"},
		}}}
		env.CreatePod(ctx, pod)
		env.ExpectEvent(ctx, claimNamed(ns, "wffc"), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonWaitForPodScheduled,
			Message: "waiting for pod consumer to be scheduled"})
		Expect(getClaim(ctx, ns, "wffc")(Default).Spec.VolumeName).To(BeEmpty())

		By("the scheduler selecting the node")
		Eventually(func() error {
			c := getClaim(ctx, ns, "wffc")(Default)
			metav1.SetMetaDataAnnotation(&c.ObjectMeta, pvbinder.AnnSelectedNode, node.Name)
			return env.Client.Update(ctx, c)
		}).Should(Succeed())
		expectBound(ctx, ns, "wffc", ns+"-here", true, true)
		Expect(getVolume(ctx, ns+"-elsewhere")(Default).Spec.ClaimRef).To(BeNil())
	})

	It("hands a claim to its class's external provisioner, and binds the volume the provisioner creates", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvb")
		createClass(ctx, ns, "csi.example.com", storagev1.VolumeBindingImmediate, nil)
		claim := createClaim(ctx, ns, "dynamic", ptr.To(ns), "1Gi")
		Eventually(func(g Gomega) map[string]string { return getClaim(ctx, ns, "dynamic")(g).Annotations }).Should(And(
			HaveKeyWithValue(pvbinder.AnnStorageProvisioner, "csi.example.com"),
			HaveKeyWithValue(pvbinder.AnnBetaStorageProvisioner, "csi.example.com")))
		env.ExpectEvent(ctx, claimNamed(ns, "dynamic"), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonExternalProvisioning,
			Message: "Waiting for a volume to be created either by the external provisioner 'csi.example.com' or manually by the system administrator. " +
				"If volume creation is delayed, please verify that the provisioner is running and correctly registered."})
		Expect(claimPhase(ctx, ns, "dynamic")(Default)).To(Equal(corev1.ClaimPending))

		By("the provisioner creating a volume bound to the claim")
		name := "pvc-" + string(claim.UID)
		createVolume(ctx, name, ns, "1Gi", func(v *corev1.PersistentVolume) {
			v.Annotations = map[string]string{pvbinder.AnnDynamicallyProvisioned: "csi.example.com"}
			v.Spec.PersistentVolumeReclaimPolicy = corev1.PersistentVolumeReclaimDelete
			v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "dynamic", UID: claim.UID}
		})
		expectBound(ctx, ns, "dynamic", name, true, false)

		By("a claim whose class does not exist")
		createClaim(ctx, ns, "no-class", ptr.To(ns+"-missing"), "1Gi")
		env.ExpectEvent(ctx, claimNamed(ns, "no-class"), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonProvisioningFailed,
			Message: fmt.Sprintf("storageclass.storage.k8s.io %q not found", ns+"-missing")})
	})

	It("reports FailedBinding for a claim without class, then gives it the default class once one exists", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvb")
		// No volume has this label: nothing fits, whatever other specs created.
		createClaim(ctx, ns, "classless", nil, "1Gi", selecting("none", ns))
		env.ExpectEvent(ctx, claimNamed(ns, "classless"), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonFailedBinding,
			Message: "no persistent volumes available for this claim and no storage class is set"})
		Expect(getClaim(ctx, ns, "classless")(Default).Spec.StorageClassName).To(BeNil())

		By("a default StorageClass appearing")
		createClass(ctx, ns, "csi.example.com", storagev1.VolumeBindingImmediate, map[string]string{pvbinder.AnnIsDefaultClass: "true"})
		Eventually(func(g Gomega) *string { return getClaim(ctx, ns, "classless")(g).Spec.StorageClassName }).
			Should(Equal(ptr.To(ns)))
		env.ExpectEvent(ctx, claimNamed(ns, "classless"), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonExternalProvisioning,
			Message: "Waiting for a volume to be created either by the external provisioner 'csi.example.com' or manually by the system administrator. " +
				"If volume creation is delayed, please verify that the provisioner is running and correctly registered."})
	})

	It("reclaims the volume of a deleted claim by its policy", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvb")
		vols := map[string]corev1.PersistentVolumeReclaimPolicy{
			"retain": corev1.PersistentVolumeReclaimRetain, "delete-csi": corev1.PersistentVolumeReclaimDelete,
			"delete-nfs": corev1.PersistentVolumeReclaimDelete, "recycle": corev1.PersistentVolumeReclaimRecycle,
		}
		for name, policy := range vols {
			opts := []volOpt{withPolicy(policy), withLabel("for", name)}
			if name != "delete-csi" && name != "recycle" {
				opts = append(opts, nfs)
			}
			createVolume(ctx, ns+"-"+name, ns, "1Gi", opts...)
			createClaim(ctx, ns, name, ptr.To(ns), "1Gi", selecting("for", name))
		}
		for name := range vols {
			expectBound(ctx, ns, name, ns+"-"+name, true, true)
		}
		bound := getVolume(ctx, ns+"-retain")(Default).Status.LastPhaseTransitionTime
		// lastPhaseTransitionTime has a one-second resolution and comes from the API server's
		// clock: wait until that clock has passed the Bound transition, so the next one is later.
		Eventually(func(g Gomega) {
			probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "clock-"}}
			g.Expect(env.Client.Create(ctx, probe, client.DryRunAll)).To(Succeed())
			g.Expect(probe.CreationTimestamp.After(bound.Time)).To(BeTrue())
		}).Should(Succeed())
		for name := range vols {
			removeFinalizers(ctx, &corev1.PersistentVolumeClaim{}, types.NamespacedName{Namespace: ns, Name: name})
		}

		By("Retain: Released, and kept")
		Eventually(volumePhase(ctx, ns+"-retain")).Should(Equal(corev1.VolumeReleased))
		retained := getVolume(ctx, ns+"-retain")(Default)
		Expect(retained.Status.LastPhaseTransitionTime.After(bound.Time)).To(BeTrue())
		Expect(retained.Spec.ClaimRef).NotTo(BeNil(), "a released volume keeps its claimRef until an administrator clears it")

		By("Delete by an external driver: Released, left to the driver")
		Eventually(volumePhase(ctx, ns+"-delete-csi")).Should(Equal(corev1.VolumeReleased))

		By("Delete of an in-tree volume kcm has no plugin for: Failed")
		Eventually(volumePhase(ctx, ns+"-delete-nfs")).Should(Equal(corev1.VolumeFailed))
		msg := fmt.Sprintf("error getting deleter volume plugin for volume %q: no deletable volume plugin matched", ns+"-delete-nfs")
		env.ExpectEvent(ctx, volumeNamed(ns+"-delete-nfs"), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonVolumeFailedDelete,
			Message: msg})
		Expect(getVolume(ctx, ns+"-delete-nfs")(Default).Status.Message).To(Equal(msg))

		By("Recycle of a source no recycler plugin supports (CSI): Failed")
		Eventually(volumePhase(ctx, ns+"-recycle")).Should(Equal(corev1.VolumeFailed))
		env.ExpectEvent(ctx, volumeNamed(ns+"-recycle"), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonVolumeFailedRecycle,
			Message: "No recycler plugin found for the volume!"})

		By("a later sync keeps them as they are")
		Consistently(func(g Gomega) []corev1.PersistentVolumePhase {
			var phases []corev1.PersistentVolumePhase
			for _, name := range []string{"retain", "delete-csi", "delete-nfs", "recycle"} {
				phases = append(phases, volumePhase(ctx, ns+"-"+name)(g))
			}
			return phases
		}).WithTimeout(3 * time.Second).Should(Equal([]corev1.PersistentVolumePhase{
			corev1.VolumeReleased, corev1.VolumeReleased, corev1.VolumeFailed, corev1.VolumeFailed}))
	})

	It("marks a claim Lost when its bound volume is deleted", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvb")
		createVolume(ctx, ns+"-doomed", ns, "1Gi")
		createClaim(ctx, ns, "orphaned", ptr.To(ns), "1Gi")
		expectBound(ctx, ns, "orphaned", ns+"-doomed", true, true)

		deleteVolume(ctx, ns+"-doomed")
		Eventually(isNotFound(ctx, &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: ns + "-doomed"}})).Should(BeTrue())
		Eventually(claimPhase(ctx, ns, "orphaned")).Should(Equal(corev1.ClaimLost))
		env.ExpectEvent(ctx, claimNamed(ns, "orphaned"), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonClaimLost,
			Message: "Bound claim has lost its PersistentVolume. Data on the volume is lost!"})
		c := getClaim(ctx, ns, "orphaned")(Default)
		Expect(c.Spec.VolumeName).To(Equal(ns+"-doomed"), "the claim keeps naming the lost volume")
		Expect(c.Status.Capacity).To(BeNil())
		Expect(eventReasons(ctx, "PersistentVolumeClaim", "orphaned")).NotTo(ContainElement(pvbinder.ReasonClaimMisbound))
	})

	It("undoes the controller's binding of a volume to a claim bound elsewhere, and marks a claim whose volume was given away Misbound", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pvb")
		createVolume(ctx, ns+"-first", ns, "1Gi", withLabel("for", "first"))
		first := createClaim(ctx, ns, "first", ptr.To(ns), "1Gi", selecting("for", "first"))
		expectBound(ctx, ns, "first", ns+"-first", true, true)

		By("a second volume the controller had bound to the same claim")
		createVolume(ctx, ns+"-extra", ns, "1Gi", func(v *corev1.PersistentVolume) {
			v.Annotations = map[string]string{"pv.kubernetes.io/bound-by-controller": "yes"}
			v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "first", UID: first.UID}
		})
		Eventually(func(g Gomega) {
			v := getVolume(ctx, ns+"-extra")(g)
			g.Expect(v.Spec.ClaimRef).To(BeNil())
			g.Expect(v.Annotations).NotTo(HaveKey("pv.kubernetes.io/bound-by-controller"))
			g.Expect(v.Status.Phase).To(Equal(corev1.VolumeAvailable))
		}).Should(Succeed())

		By("the first claim's volume bound to another claim instead")
		second := createClaim(ctx, ns, "second", ptr.To(ns), "1Gi", selecting("for", "nothing"))
		Eventually(func() error {
			v := getVolume(ctx, ns+"-first")(Default)
			v.Spec.ClaimRef = &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: "second", UID: second.UID}
			return env.Client.Update(ctx, v)
		}).Should(Succeed())
		Eventually(claimPhase(ctx, ns, "first")).Should(Equal(corev1.ClaimLost))
		env.ExpectEvent(ctx, claimNamed(ns, "first"), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonClaimMisbound,
			Message: "Two claims are bound to the same volume, this one is bound incorrectly"})
		expectBound(ctx, ns, "second", ns+"-first", true, true)
	})
})
