package statefulset_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/statefulset"
)

var _ = Describe("statefulset-controller revisions written by another manager", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "sts-sem") })

	// The set's revision and pods exist before kcm sees the set, as another manager
	// version left them: the revision records the template without the defaults the API
	// server adds and with a null creationTimestamp (as v1.33 serialized it), so it is
	// equal to the set's template but not byte for byte.
	It("keeps a revision that differs only in serialization and defaults, and rolls no pod", func() {
		const legacy = "web-legacy"
		Expect(env.Client.Create(ctx, &appsv1.ControllerRevision{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: legacy, Labels: map[string]string{"app": "web"}},
			// Keys sorted, as Go writes a map (adoption round-trips the data through one).
			Data: runtime.RawExtension{Raw: []byte(`{"spec":{"template":{"$patch":"replace",` +
				`"metadata":{"creationTimestamp":null,"labels":{"app":"web"}},` +
				`"spec":{"containers":[{"image":"registry.k8s.io/pause:3.10","name":"app"}]}}}}`)},
			Revision: 4,
		})).To(Succeed())
		set := newStatefulSet(ns, "web", 2)
		uids := map[string]types.UID{}
		for i := range 2 {
			p := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: podName("web", i), Labels: map[string]string{
					"app": "web", appsv1.ControllerRevisionHashLabelKey: legacy,
					appsv1.StatefulSetPodNameLabel: podName("web", i), appsv1.PodIndexLabel: string(rune('0' + i)),
				}},
				Spec: *set.Spec.Template.Spec.DeepCopy(),
			}
			p.Spec.Hostname, p.Spec.Subdomain = p.Name, "web"
			Expect(env.Client.Create(ctx, p)).To(Succeed())
			uids[p.Name] = p.UID
			makeReady(ctx, ns, p.Name)
		}

		Expect(env.Client.Create(ctx, set)).To(Succeed())

		// Witness: kcm adopted the revision and the pods and reports them current.
		Eventually(func(g Gomega) {
			s := getSet(ctx, g, ns, "web")
			g.Expect(s.Status.ObservedGeneration).To(Equal(s.Generation))
			g.Expect(s.Status.UpdateRevision).To(Equal(legacy))
			g.Expect(s.Status.CurrentRevision).To(Equal(legacy))
			g.Expect(s.Status.UpdatedReplicas).To(Equal(int32(2)))
			g.Expect(s.Status.ReadyReplicas).To(Equal(int32(2)))
			for name := range uids {
				p := pods(ctx, g, ns)[name]
				g.Expect(p).NotTo(BeNil())
				g.Expect(metav1.GetControllerOf(p)).NotTo(BeNil())
			}
		}).Should(Succeed())
		// No new revision, and the pods are the ones that were there.
		Consistently(func(g Gomega) {
			revs := &appsv1.ControllerRevisionList{}
			g.Expect(env.Client.List(ctx, revs, client.InNamespace(ns))).To(Succeed())
			g.Expect(revs.Items).To(HaveLen(1))
			g.Expect(revs.Items[0].Name).To(Equal(legacy))
			ps := pods(ctx, g, ns)
			g.Expect(ps).To(HaveLen(2))
			for name, uid := range uids {
				g.Expect(ps[name].UID).To(Equal(uid))
			}
		}).WithTimeout(2 * time.Second).Should(Succeed())

		// A real change of the template is still a new revision.
		update(ctx, ns, "web", func(s *appsv1.StatefulSet) { s.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9" })
		Eventually(func(g Gomega) {
			s := getSet(ctx, g, ns, "web")
			g.Expect(s.Status.UpdateRevision).NotTo(Equal(legacy))
			g.Expect(s.Status.CurrentRevision).To(Equal(legacy))
		}).Should(Succeed())
	})

	// kcm defaults a decoded revision as the API server defaults a stored set: this
	// compares the two on a template that leaves every default it can out.
	It("defaults a pod template as the API server does", func() {
		sparse := corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "defaults"}},
			Spec: corev1.PodSpec{
				DeprecatedServiceAccount: "legacy-sa",
				Volumes: []corev1.Volume{
					{Name: "empty"},
					{Name: "cm", VolumeSource: corev1.VolumeSource{ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "c"}}}},
					{Name: "secret", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{SecretName: "s"}}},
					{Name: "host", VolumeSource: corev1.VolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp"}}},
					{Name: "down", VolumeSource: corev1.VolumeSource{DownwardAPI: &corev1.DownwardAPIVolumeSource{Items: []corev1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}}},
					{Name: "proj", VolumeSource: corev1.VolumeSource{Projected: &corev1.ProjectedVolumeSource{Sources: []corev1.VolumeProjection{
						{ServiceAccountToken: &corev1.ServiceAccountTokenProjection{Path: "t"}},
						{DownwardAPI: &corev1.DownwardAPIProjection{Items: []corev1.DownwardAPIVolumeFile{{Path: "n", FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}}}},
					}}}},
					{Name: "eph", VolumeSource: corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{
						Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
							Resources: corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1.5Gi")}}},
					}}}},
					{Name: "img", VolumeSource: corev1.VolumeSource{Image: &corev1.ImageVolumeSource{Reference: "registry.k8s.io/pause"}}},
				},
				InitContainers: []corev1.Container{{Name: "init", Image: "busybox"}},
				Containers: []corev1.Container{{
					Name: "app", Image: "registry.k8s.io/pause:3.10",
					Ports: []corev1.ContainerPort{{ContainerPort: 80}},
					Env:   []corev1.EnvVar{{Name: "NODE", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "spec.nodeName"}}}},
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("0.0001")},
						Limits: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")}},
					LivenessProbe:  &corev1.Probe{ProbeHandler: corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(80)}}},
					ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{GRPC: &corev1.GRPCAction{Port: 81}}},
					StartupProbe:   &corev1.Probe{ProbeHandler: corev1.ProbeHandler{TCPSocket: &corev1.TCPSocketAction{Port: intstr.FromInt32(80)}}, PeriodSeconds: 5},
					Lifecycle:      &corev1.Lifecycle{PreStop: &corev1.LifecycleHandler{HTTPGet: &corev1.HTTPGetAction{Port: intstr.FromInt32(8080)}}},
				}},
			},
		}
		set := newStatefulSet(ns, "defaults", 0)
		set.Spec.Template = *sparse.DeepCopy()
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		stored := &appsv1.StatefulSet{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(set), stored)).To(Succeed())

		statefulset.DefaultTemplate(&sparse)
		Expect(equality.Semantic.DeepEqual(sparse, stored.Spec.Template)).To(BeTrue(),
			"kcm's defaults:\n%+v\nthe API server's:\n%+v", sparse.Spec, stored.Spec.Template.Spec)
		// The positive witness: the API server did default what the template left out.
		Expect(stored.Spec.Template.Spec.Containers[0].ImagePullPolicy).To(Equal(corev1.PullIfNotPresent))
		Expect(stored.Spec.Template.Spec.Volumes[0].EmptyDir).NotTo(BeNil())
		Expect(stored.Spec.Template.Spec.TerminationGracePeriodSeconds).To(Equal(ptr.To[int64](30)))
	})
})
