package pvbinder_test

import (
	"context"
	"os"
	"path/filepath"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/controller/pvbinder"
	"github.com/kcm/kcm/internal/testenv"
)

// releasedForRecycle binds a Recycle volume of the source to a claim, then deletes the claim:
// the volume is released and its recycler pod starts.
func releasedForRecycle(ctx context.Context, ns, size string, source volOpt) string {
	GinkgoHelper()
	name := ns + "-vol"
	createVolume(ctx, name, ns, size, withPolicy(corev1.PersistentVolumeReclaimRecycle), source)
	createClaim(ctx, ns, "data", ptr.To(ns), size)
	expectBound(ctx, ns, "data", name, true, true)
	removeFinalizers(ctx, &corev1.PersistentVolumeClaim{}, types.NamespacedName{Namespace: ns, Name: "data"})
	return name
}

func hostPath(path string) volOpt {
	return func(v *corev1.PersistentVolume) {
		v.Spec.PersistentVolumeSource = corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: path}}
	}
}

// recyclerPod waits for the volume's recycler pod in the namespace.
func recyclerPod(ctx context.Context, namespace, volume string) *corev1.Pod {
	GinkgoHelper()
	pod := &corev1.Pod{}
	Eventually(func() error {
		return env.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: "recycler-for-" + volume}, pod)
	}).Should(Succeed())
	DeferCleanup(func(ctx SpecContext) {
		_ = env.Client.Delete(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: pod.Name}})
	})
	return pod
}

// finish plays the kubelet: the recycler pod ends in phase, with message.
func finish(ctx context.Context, pod *corev1.Pod, phase corev1.PodPhase, message string) {
	GinkgoHelper()
	env.SetPodStatus(ctx, pod, func(s *corev1.PodStatus) { s.Phase, s.Message = phase, message })
}

// podEvent plays the kubelet reporting on the recycler pod.
func podEvent(ctx context.Context, pod *corev1.Pod, eventType, reason, message string) {
	GinkgoHelper()
	e := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{Namespace: pod.Namespace, GenerateName: pod.Name + "-"},
		InvolvedObject: corev1.ObjectReference{Kind: "Pod", APIVersion: "v1", Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID},
		Type:           eventType, Reason: reason, Message: message,
		Source: corev1.EventSource{Component: "kubelet"},
	}
	Expect(env.Client.Create(ctx, e)).To(Succeed())
}

func expectGone(ctx context.Context, pod *corev1.Pod) {
	GinkgoHelper()
	Eventually(func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: pod.Name}, &corev1.Pod{}))
	}).Should(BeTrue())
}

var _ = Describe("recycling released volumes", func() {
	It("scrubs an NFS volume with upstream's recycler pod, forwards its Events, and makes it Available", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rec")
		vol := releasedForRecycle(ctx, ns, "20Gi", nfs)

		pod := recyclerPod(ctx, "default", vol)
		Expect(pod.Spec.RestartPolicy).To(Equal(corev1.RestartPolicyNever))
		Expect(pod.Spec.ActiveDeadlineSeconds).To(Equal(ptr.To[int64](600)), "30 s per GiB of 20Gi, above the 300 s minimum")
		Expect(pod.Spec.Volumes).To(HaveLen(1))
		Expect(pod.Spec.Volumes[0].NFS).To(Equal(&corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/" + vol}))
		Expect(pod.Spec.Containers).To(HaveLen(1))
		c := pod.Spec.Containers[0]
		Expect(c.Name).To(Equal("pv-recycler"))
		Expect(c.Image).To(Equal("registry.k8s.io/build-image/debian-base:bookworm-v1.0.6"))
		Expect(c.Command).To(Equal([]string{"/bin/sh"}))
		Expect(c.Args).To(Equal([]string{"-c", "test -e /scrub && find /scrub -mindepth 1 -delete && test -z \"$(ls -A /scrub)\" || exit 1"}))
		Expect(c.VolumeMounts).To(Equal([]corev1.VolumeMount{{Name: "vol", MountPath: "/scrub"}}))
		Expect(volumePhase(ctx, vol)(Default)).To(Equal(corev1.VolumeReleased), "released while the pod runs")

		podEvent(ctx, pod, corev1.EventTypeNormal, "Started", "Started container pv-recycler")
		env.ExpectEvent(ctx, volumeNamed(vol), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonRecyclerPod,
			Message: "Recycler pod: Started container pv-recycler"})

		finish(ctx, pod, corev1.PodSucceeded, "")
		Eventually(volumePhase(ctx, vol)).Should(Equal(corev1.VolumeAvailable))
		Expect(getVolume(ctx, vol)(Default).Spec.ClaimRef).To(BeNil(), "the controller bound it, so the claimRef goes")
		env.ExpectEvent(ctx, volumeNamed(vol), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonVolumeRecycled,
			Message: "Volume recycled"})
		expectGone(ctx, pod)
	})

	It("marks the volume Failed with the pod's failure, then recycles it again on a later sync", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rec")
		vol := releasedForRecycle(ctx, ns, "1Gi", hostPath("/tmp/"+ns))

		pod := recyclerPod(ctx, "default", vol)
		Expect(pod.Spec.ActiveDeadlineSeconds).To(Equal(ptr.To[int64](60)), "hostPath's 60 s minimum above 30 s for 1Gi")
		Expect(pod.Spec.Volumes[0].HostPath).NotTo(BeNil())
		Expect(pod.Spec.Volumes[0].HostPath.Path).To(Equal("/tmp/" + ns))

		// The kubelet's own failure when the pod outlives activeDeadlineSeconds.
		finish(ctx, pod, corev1.PodFailed, "Pod was active on the node longer than the specified deadline")
		msg := "Recycle failed: failed to recycle volume: Pod was active on the node longer than the specified deadline"
		Eventually(volumePhase(ctx, vol)).Should(Equal(corev1.VolumeFailed))
		env.ExpectEvent(ctx, volumeNamed(vol), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonVolumeFailedRecycle, Message: msg})
		Expect(getVolume(ctx, vol)(Default).Status.Message).To(Equal(msg))

		By("the next sync starting another recycler pod")
		var again *corev1.Pod
		Eventually(func(g Gomega) types.UID {
			again = &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: pod.Name}, again)).To(Succeed())
			return again.UID
		}).ShouldNot(Equal(pod.UID))
		finish(ctx, again, corev1.PodSucceeded, "")
		Eventually(volumePhase(ctx, vol)).Should(Equal(corev1.VolumeAvailable))
	})

	It("fails the recycle when its pod is deleted before it finished", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rec")
		vol := releasedForRecycle(ctx, ns, "1Gi", nfs)
		pod := recyclerPod(ctx, "default", vol)
		Expect(env.Client.Delete(ctx, pod)).To(Succeed())
		Eventually(volumePhase(ctx, vol)).Should(Equal(corev1.VolumeFailed))
		env.ExpectEvent(ctx, volumeNamed(vol), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonVolumeFailedRecycle,
			Message: "Recycle failed: failed to recycle volume: recycler pod was deleted"})
	})

	It("deletes a recycler pod it did not start and fails until it is gone", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rec")
		name := ns + "-vol"
		forged := env.CreatePod(ctx, testenv.NewPod("default", "recycler-for-"+name, ""))
		DeferCleanup(func(ctx SpecContext) { _ = env.Client.Delete(ctx, forged) })

		vol := releasedForRecycle(ctx, ns, "1Gi", nfs)
		env.ExpectEvent(ctx, volumeNamed(vol), testenv.Event{Type: corev1.EventTypeWarning, Reason: pvbinder.ReasonVolumeFailedRecycle,
			Message: "Recycle failed: old recycler pod found, will retry later"})
		Eventually(func(g Gomega) string {
			p := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: forged.Name}, p)).To(Succeed())
			return p.Spec.Containers[0].Image
		}).Should(Equal("registry.k8s.io/build-image/debian-base:bookworm-v1.0.6"), "its own pod replaces the forged one")
	})

	It("does not recycle a volume pods still use", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rec")
		name := ns + "-vol"
		createVolume(ctx, name, ns, "1Gi", withPolicy(corev1.PersistentVolumeReclaimRecycle), nfs)
		createClaim(ctx, ns, "data", ptr.To(ns), "1Gi")
		expectBound(ctx, ns, "data", name, true, true)
		user := testenv.NewPod(ns, "user", "node-1")
		user.Spec.Volumes = []corev1.Volume{{Name: "d", VolumeSource: corev1.VolumeSource{
			PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "data"}}}}
		env.CreatePod(ctx, user)
		removeFinalizers(ctx, &corev1.PersistentVolumeClaim{}, types.NamespacedName{Namespace: ns, Name: "data"})

		env.ExpectEvent(ctx, volumeNamed(name), testenv.Event{Type: corev1.EventTypeNormal, Reason: pvbinder.ReasonVolumeFailedRecycle,
			Message: "Volume is used by pods: " + ns + "/user"})
		Expect(apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Namespace: "default", Name: "recycler-for-" + name}, &corev1.Pod{}))).
			To(BeTrue(), "no recycler pod while the volume is in use")

		By("the pod finishing")
		env.SetPodStatus(ctx, user, testenv.Phase(corev1.PodSucceeded, ""))
		recyclerPod(ctx, "default", name)
	})

	It("uses the pod template and timeouts the --pv-recycler-* flags give", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "rec")
		tmpl := filepath.Join(GinkgoT().TempDir(), "nfs-recycler.yaml")
		Expect(os.WriteFile(tmpl, []byte(`apiVersion: v1
kind: Pod
metadata:
  name: ignored
  namespace: `+ns+`
spec:
  restartPolicy: Never
  volumes:
  - name: scrubbed
  containers:
  - name: scrubber
    image: example.com/scrubber:1
    command: ["/scrub.sh"]
    volumeMounts:
    - name: scrubbed
      mountPath: /data
`), 0o600)).To(Succeed())
		Expect(env.StopManager()).To(Succeed())
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			Expect(env.StartManager([]string{"persistentvolume-binder-controller"}, suiteSyncPeriod)).To(Succeed())
		})
		Expect(env.StartManager([]string{"persistentvolume-binder-controller"}, suiteSyncPeriod,
			"--pv-recycler-pod-template-filepath-nfs="+tmpl, "--pv-recycler-minimum-timeout-nfs=10",
			"--pv-recycler-increment-timeout-nfs=20")).To(Succeed())

		vol := releasedForRecycle(ctx, ns, "2Gi", nfs)
		pod := recyclerPod(ctx, ns, vol)
		Expect(pod.Spec.ActiveDeadlineSeconds).To(Equal(ptr.To[int64](40)), "20 s per GiB of 2Gi, above the 10 s minimum")
		Expect(pod.Spec.Containers[0].Image).To(Equal("example.com/scrubber:1"))
		Expect(pod.Spec.Volumes[0].Name).To(Equal("scrubbed"))
		Expect(pod.Spec.Volumes[0].NFS).To(Equal(&corev1.NFSVolumeSource{Server: "nfs.example.com", Path: "/" + vol}))
		finish(ctx, pod, corev1.PodSucceeded, "")
		Eventually(volumePhase(ctx, vol)).Should(Equal(corev1.VolumeAvailable))
	})

	It("refuses to start with a recycler pod template without volumes, as upstream", func(ctx SpecContext) {
		tmpl := filepath.Join(GinkgoT().TempDir(), "bad.yaml")
		Expect(os.WriteFile(tmpl, []byte("apiVersion: v1\nkind: Pod\nspec:\n  containers:\n  - name: c\n    image: x\n"), 0o600)).To(Succeed())
		Expect(env.StopManager()).To(Succeed())
		DeferCleanup(func() {
			Expect(env.StopManager()).To(Succeed())
			Expect(env.StartManager([]string{"persistentvolume-binder-controller"}, suiteSyncPeriod)).To(Succeed())
		})
		err := env.StartManager([]string{"persistentvolume-binder-controller"}, "--pv-recycler-pod-template-filepath-hostpath="+tmpl)
		Expect(err).To(MatchError(ContainSubstring(
			"failed to probe volume plugins when starting persistentvolume controller: pod specification (" + tmpl + "): does not contain any volume(s)")))
	})
})
