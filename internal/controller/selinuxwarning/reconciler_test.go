package selinuxwarning_test

import (
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("selinux-warning-controller", func() {
	It("warns both pods that use one RWX volume of a seLinuxMount driver with different levels, until one goes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "selinux")
		d := csiDriver(ctx, true)
		boundClaim(ctx, ns, "shared", d.Name)
		podWith(ctx, ns, "pod1", claim("shared"), "s0:c1,c2", "")
		pod2 := podWith(ctx, ns, "pod2", claim("shared"), "s0:c98,c99", "")

		Eventually(func(g Gomega) {
			g.Expect(eventsOf(ctx, ns, "pod1")).To(ConsistOf(labelConflict(":::s0:c1,c2", "pod2", ":::s0:c98,c99")))
			g.Expect(eventsOf(ctx, ns, "pod2")).To(ConsistOf(labelConflict(":::s0:c98,c99", "pod1", ":::s0:c1,c2")))
		}).Should(Succeed())
		Expect(conflictSeries(ns)).To(ConsistOf(
			series("SELinuxLabel", ns, "pod1", ":::s0:c1,c2", ns, "pod2", ":::s0:c98,c99"),
			series("SELinuxLabel", ns, "pod2", ":::s0:c98,c99", ns, "pod1", ":::s0:c1,c2"),
		))

		By("deleting one of the pods")
		Expect(env.Client.Delete(ctx, pod2, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() []map[string]string { return conflictSeries(ns) }).Should(BeEmpty())
	})

	It("reports no conflict between pods with the same level, and does between them and one with another level", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "selinux")
		d := csiDriver(ctx, true)
		boundClaim(ctx, ns, "shared", d.Name)
		podWith(ctx, ns, "same1", claim("shared"), "s0:c1,c2", "")
		podWith(ctx, ns, "same2", claim("shared"), "s0:c1,c2", "")

		By("adding a pod with another level: the witness that the controller sees the volume's pods")
		podWith(ctx, ns, "other", claim("shared"), "s0:c5,c6", "")
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(ctx, ns, "other")).To(ConsistOf(
				labelConflict(":::s0:c5,c6", "same1", ":::s0:c1,c2"),
				labelConflict(":::s0:c5,c6", "same2", ":::s0:c1,c2")))
			g.Expect(eventsOf(ctx, ns, "same1")).To(ConsistOf(labelConflict(":::s0:c1,c2", "other", ":::s0:c5,c6")))
			g.Expect(eventsOf(ctx, ns, "same2")).To(ConsistOf(labelConflict(":::s0:c1,c2", "other", ":::s0:c5,c6")))
		}).Should(Succeed())
		Expect(conflictSeries(ns)).To(HaveLen(4), "other against each same pod, both ways; none between the same pods")
	})

	It("reports policies and labels only once the CSIDriver mounts with -o context", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "selinux")
		d := csiDriver(ctx, false)
		boundClaim(ctx, ns, "shared", d.Name)
		podWith(ctx, ns, "mount", claim("shared"), "s0:c1,c2", "")
		podWith(ctx, ns, "recursive", claim("shared"), "s0:c1,c2", corev1.SELinuxChangePolicyRecursive)
		podWith(ctx, ns, "other", claim("shared"), "s0:c3,c4", corev1.SELinuxChangePolicyRecursive)

		By("turning seLinuxMount on: the pods using the driver's volumes are synced again")
		// Without it every pod is relabelled recursively and nothing conflicts; the Events
		// that follow the change are the witness that the pods had been seen.
		Eventually(func() error {
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(d), d); err != nil {
				return err
			}
			on := true
			d.Spec.SELinuxMount = &on
			return env.Client.Update(ctx, d)
		}).Should(Succeed())
		policy := func(value, otherPod, otherValue string) string {
			return fmt.Sprintf(`Normal SELinuxChangePolicyConflict SELinuxChangePolicy %q conflicts with pod %s that uses the same volume as this pod with SELinuxChangePolicy %q. If both pods land on the same node, only one of them may access the volume.`,
				value, otherPod, otherValue)
		}
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(ctx, ns, "mount")).To(ConsistOf(
				policy("MountOption", "recursive", "Recursive"), policy("MountOption", "other", "Recursive"),
				labelConflict(":::s0:c1,c2", "recursive", ""), labelConflict(":::s0:c1,c2", "other", "")))
			g.Expect(eventsOf(ctx, ns, "recursive")).To(ConsistOf(
				policy("Recursive", "mount", "MountOption"), labelConflict("", "mount", ":::s0:c1,c2")))
			g.Expect(eventsOf(ctx, ns, "other")).To(ConsistOf(
				policy("Recursive", "mount", "MountOption"), labelConflict("", "mount", ":::s0:c1,c2")))
		}).Should(Succeed())
		Expect(conflictSeries(ns)).To(HaveLen(8), "mount against each Recursive pod, policy and label, both ways; none between the Recursive pods")
	})

	It("does not name a pod of another namespace, and forgets a pod that finished", func(ctx SpecContext) {
		ns1, ns2 := env.Namespace(ctx, "selinux"), env.Namespace(ctx, "selinux")
		// One iSCSI LUN written inline in two namespaces is one volume; iSCSI mounts with -o context.
		lun := corev1.VolumeSource{ISCSI: &corev1.ISCSIVolumeSource{TargetPortal: "10.0.0.1:3260", IQN: "iqn.2001-04.com.example:" + ns1, Lun: 1, FSType: "ext4"}}
		p1 := podWith(ctx, ns1, "web", lun, "s0:c1,c2", "")
		podWith(ctx, ns2, "db", lun, "s0:c3,c4", "")
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(ctx, ns1, "web")).To(ConsistOf(`Normal SELinuxLabelConflict SELinuxLabel":::s0:c1,c2" conflicts with another pod that uses the same volume as this pod with a different SELinuxLabel. If both pods land on the same node, only one of them may access the volume.`))
			g.Expect(eventsOf(ctx, ns2, "db")).To(ConsistOf(`Normal SELinuxLabelConflict SELinuxLabel":::s0:c3,c4" conflicts with another pod that uses the same volume as this pod with a different SELinuxLabel. If both pods land on the same node, only one of them may access the volume.`))
		}).Should(Succeed())
		Expect(conflictSeries(ns1)).To(ConsistOf(
			series("SELinuxLabel", ns1, "web", ":::s0:c1,c2", ns2, "db", ":::s0:c3,c4"),
			series("SELinuxLabel", ns2, "db", ":::s0:c3,c4", ns1, "web", ":::s0:c1,c2"),
		))

		By("the pod succeeding, as its kubelet would report it")
		p1.Status.Phase = corev1.PodSucceeded
		Expect(env.Client.Status().Update(ctx, p1)).To(Succeed())
		Eventually(func() []map[string]string { return conflictSeries(ns1) }).Should(BeEmpty())
	})

	It("reports the conflicts of pods that came before their claim was bound, once it is", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "selinux")
		d := csiDriver(ctx, true)
		podWith(ctx, ns, "early1", claim("late"), "s0:c1,c2", "")
		podWith(ctx, ns, "early2", claim("late"), "s0:c3,c4", "")
		boundClaim(ctx, ns, "late", d.Name)
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(ctx, ns, "early1")).To(ConsistOf(labelConflict(":::s0:c1,c2", "early2", ":::s0:c3,c4")))
			g.Expect(eventsOf(ctx, ns, "early2")).To(ConsistOf(labelConflict(":::s0:c3,c4", "early1", ":::s0:c1,c2")))
		}).Should(Succeed())
	})

	It("warns a pod whose containers mount one volume with different labels", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "selinux")
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "twice"},
			Spec: corev1.PodSpec{
				Containers: []corev1.Container{
					{Name: "a", Image: "registry.k8s.io/pause:3.10", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/a"}},
						SecurityContext: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c1,c2"}}},
					{Name: "b", Image: "registry.k8s.io/pause:3.10", VolumeMounts: []corev1.VolumeMount{{Name: "scratch", MountPath: "/b"}},
						SecurityContext: &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: "s0:c3,c4"}}},
				},
				Volumes: []corev1.Volume{{Name: "scratch", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}},
			},
		}
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(eventsOf(ctx, ns, "twice")).To(ContainElement(`Warning MultipleSELinuxLabels Volume "scratch" is mounted twice with different SELinux labels inside this pod`))
		}).Should(Succeed())
	})
})
