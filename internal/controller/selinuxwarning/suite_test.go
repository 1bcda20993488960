package selinuxwarning_test

import (
	"context"
	"fmt"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-base/metrics/legacyregistry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestSELinuxWarningController(t *testing.T) {
	testenv.RunSuite(t, "selinux-warning-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	// As an operator enables it: every default controller, and this one, off by default.
	Expect(env.StartManager([]string{"*", "selinux-warning-controller"})).To(Succeed())
	DeferCleanup(env.StopManager)
})

const metricName = "selinux_warning_controller_selinux_volume_conflict"

// conflictSeries is the metric's series of pods of the namespaces, each as its labels.
func conflictSeries(namespaces ...string) []map[string]string {
	GinkgoHelper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	Expect(err).NotTo(HaveOccurred())
	var out []map[string]string
	for _, f := range families {
		if f.GetName() != metricName {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			for _, ns := range namespaces {
				if labels["pod1_namespace"] == ns || labels["pod2_namespace"] == ns {
					Expect(m.GetGauge().GetValue()).To(Equal(1.0))
					out = append(out, labels)
					break
				}
			}
		}
	}
	return out
}

func series(property, ns1, pod1, value1, ns2, pod2, value2 string) map[string]string {
	return map[string]string{"property": property,
		"pod1_namespace": ns1, "pod1_name": pod1, "pod1_value": value1,
		"pod2_namespace": ns2, "pod2_name": pod2, "pod2_value": value2}
}

// eventsOf are the Events about a pod from this controller, as "type reason message", read
// through core/v1 whichever API wrote them.
func eventsOf(ctx context.Context, ns, pod string) []string {
	GinkgoHelper()
	list := &corev1.EventList{}
	Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "Pod" && e.InvolvedObject.Name == pod && (e.Source.Component == "selinux_warning" || e.ReportingController == "selinux_warning") {
			out = append(out, e.Type+" "+e.Reason+" "+e.Message)
		}
	}
	return out
}

func csiDriver(ctx context.Context, seLinuxMount bool) *storagev1.CSIDriver {
	GinkgoHelper()
	d := &storagev1.CSIDriver{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "rwx-", Labels: map[string]string{"test": "selinux"}},
		Spec:       storagev1.CSIDriverSpec{SELinuxMount: &seLinuxMount},
	}
	Expect(env.Client.Create(ctx, d)).To(Succeed())
	return d
}

// boundClaim creates a ReadWriteMany claim and a CSI volume of the driver bound to it, and
// waits for the binder to mark the claim Bound.
func boundClaim(ctx context.Context, ns, name, driver string) {
	GinkgoHelper()
	empty := ""
	rwx := []corev1.PersistentVolumeAccessMode{corev1.ReadWriteMany}
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	pvc := &corev1.PersistentVolumeClaim{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PersistentVolumeClaimSpec{AccessModes: rwx, StorageClassName: &empty,
			Resources: corev1.VolumeResourceRequirements{Requests: size}, VolumeName: ns + "-" + name},
	}
	Expect(env.Client.Create(ctx, pvc)).To(Succeed())
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{Name: ns + "-" + name},
		Spec: corev1.PersistentVolumeSpec{
			AccessModes: rwx, Capacity: size, StorageClassName: "",
			PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: ns + "-" + name}},
			ClaimRef:               &corev1.ObjectReference{Kind: "PersistentVolumeClaim", APIVersion: "v1", Namespace: ns, Name: name, UID: pvc.UID},
		},
	}
	Expect(env.Client.Create(ctx, pv)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pvc), pvc)).To(Succeed())
		g.Expect(pvc.Status.Phase).To(Equal(corev1.ClaimBound))
	}).Should(Succeed())
}

// podWith creates a pod whose one container mounts the volume with the SELinux level
// (none when empty) and, when given, the pod's SELinuxChangePolicy.
func podWith(ctx context.Context, ns, name string, volume corev1.VolumeSource, level string, policy corev1.PodSELinuxChangePolicy) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			SecurityContext: &corev1.PodSecurityContext{},
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
				VolumeMounts: []corev1.VolumeMount{{Name: "data", MountPath: "/data"}}}},
			Volumes: []corev1.Volume{{Name: "data", VolumeSource: volume}},
		},
	}
	if level != "" {
		p.Spec.Containers[0].SecurityContext = &corev1.SecurityContext{SELinuxOptions: &corev1.SELinuxOptions{Level: level}}
	}
	if policy != "" {
		p.Spec.SecurityContext.SELinuxChangePolicy = &policy
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}

func claim(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

func labelConflict(value, otherPod, otherValue string) string {
	return fmt.Sprintf(`Normal SELinuxLabelConflict SELinuxLabel %q conflicts with pod %s that uses the same volume as this pod with SELinuxLabel %q. If both pods land on the same node, only one of them may access the volume.`,
		value, otherPod, otherValue)
}

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
