package selinuxwarning_test

import (
	"context"
	"fmt"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

const metricName = "selinux_warning_controller_selinux_volume_conflict"

// conflictSeries is the metric's series of pods of the namespaces, each as its labels.
func conflictSeries(namespaces ...string) []map[string]string {
	GinkgoHelper()
	var out []map[string]string
	for _, m := range testenv.ReadFamily(metricName).Series {
		for _, ns := range namespaces {
			if m.Labels["pod1_namespace"] == ns || m.Labels["pod2_namespace"] == ns {
				Expect(m.Value).To(Equal(1.0))
				out = append(out, m.Labels)
				break
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
