package statefulset_test

import (
	"context"
	"sort"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("statefulset-controller", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "sts") })

	// eventNotes returns the notes of the set's Events of reason, oldest first.
	eventNotes := func(g Gomega, reason string) []string {
		events := &eventsv1.EventList{}
		g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
		var es []eventsv1.Event
		for _, e := range events.Items {
			if e.Reason == reason && e.ReportingController == "statefulset-controller" {
				es = append(es, e)
			}
		}
		sort.Slice(es, func(i, j int) bool { return es[i].EventTime.Before(&es[j].EventTime) })
		var out []string
		for _, e := range es {
			out = append(out, e.Note)
		}
		return out
	}

	It("creates pods in order, halting on an unready pod, and deletes them in reverse", func() {
		Expect(env.Client.Create(ctx, newStatefulSet(ns, "web", 3))).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(podNames(pods(ctx, g, ns))).To(Equal([]string{"web-0"}))
		}).Should(Succeed())
		// web-1 waits for web-0 to be Running and Ready.
		Consistently(func(g Gomega) {
			g.Expect(podNames(pods(ctx, g, ns))).To(Equal([]string{"web-0"}))
		}).Should(Succeed())

		p := pods(ctx, Default, ns)["web-0"]
		Expect(p.Labels).To(HaveKeyWithValue(appsv1.StatefulSetPodNameLabel, "web-0"))
		Expect(p.Labels).To(HaveKeyWithValue(appsv1.PodIndexLabel, "0"))
		Expect(p.Labels).To(HaveKeyWithValue("app", "web"))
		Expect(p.Labels).To(HaveKey(appsv1.ControllerRevisionHashLabelKey))
		Expect(p.Spec.Hostname).To(Equal("web-0"))
		Expect(p.Spec.Subdomain).To(Equal("web"))
		Expect(p.GenerateName).To(Equal("web-"))
		Expect(metav1.GetControllerOf(p).Name).To(Equal("web"))

		makeReady(ctx, ns, "web-0")
		Eventually(func(g Gomega) {
			g.Expect(podNames(pods(ctx, g, ns))).To(Equal([]string{"web-0", "web-1"}))
		}).Should(Succeed())
		makeReady(ctx, ns, "web-1")
		readyAll(ctx, ns, 3)

		Eventually(func(g Gomega) {
			set := getSet(ctx, g, ns, "web")
			g.Expect(set.Status.ObservedGeneration).To(Equal(set.Generation))
			g.Expect(set.Status.Replicas).To(Equal(int32(3)))
			g.Expect(set.Status.ReadyReplicas).To(Equal(int32(3)))
			g.Expect(set.Status.AvailableReplicas).To(Equal(int32(3)))
			g.Expect(set.Status.CurrentReplicas).To(Equal(int32(3)))
			g.Expect(set.Status.UpdatedReplicas).To(Equal(int32(3)))
			g.Expect(set.Status.CurrentRevision).NotTo(BeEmpty())
			g.Expect(set.Status.UpdateRevision).To(Equal(set.Status.CurrentRevision))
			g.Expect(set.Status.CollisionCount).To(Equal(ptr.To[int32](0)))
			g.Expect(p.Labels[appsv1.ControllerRevisionHashLabelKey]).To(Equal(set.Status.CurrentRevision))
			g.Expect(eventNotes(g, "SuccessfulCreate")).To(Equal([]string{
				"Create Pod web-0 in StatefulSet web successful",
				"Create Pod web-1 in StatefulSet web successful",
				"Create Pod web-2 in StatefulSet web successful",
			}))
		}).Should(Succeed())

		update(ctx, ns, "web", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](0) })
		Eventually(func(g Gomega) {
			g.Expect(pods(ctx, g, ns)).To(BeEmpty())
			g.Expect(eventNotes(g, "SuccessfulDelete")).To(Equal([]string{
				"Delete Pod web-2 in StatefulSet web successful",
				"Delete Pod web-1 in StatefulSet web successful",
				"Delete Pod web-0 in StatefulSet web successful",
			}))
			set := getSet(ctx, g, ns, "web")
			g.Expect(set.Status.Replicas).To(BeZero())
		}).Should(Succeed())
	})

	It("creates every pod at once with Parallel, from ordinals.start", func() {
		set := newStatefulSet(ns, "par", 3)
		set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		set.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: 5}
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(podNames(pods(ctx, g, ns))).To(Equal([]string{"par-5", "par-6", "par-7"}))
		}).Should(Succeed())
		Expect(pods(ctx, Default, ns)["par-6"].Labels).To(HaveKeyWithValue(appsv1.PodIndexLabel, "6"))

		// Upstream's gauges: no pod is ready yet, all three are unavailable, with the default
		// budget of 1; then all are.
		labels := map[string]string{"statefulset_namespace": ns, "statefulset_name": "par", "pod_management_policy": "Parallel"}
		Eventually(func(g Gomega) {
			g.Expect(gauge(g, "statefulset_controller_statefulset_unavailable_replicas", labels)).To(Equal(3.0))
			g.Expect(gauge(g, "statefulset_controller_statefulset_max_unavailable", labels)).To(Equal(1.0))
		}).Should(Succeed())
		readyAll(ctx, ns, 3)
		Eventually(func(g Gomega) float64 {
			return gauge(g, "statefulset_controller_statefulset_unavailable_replicas", labels)
		}).Should(BeZero())
	})

	It("rolls a partition in reverse ordinal order and rolls back", func() {
		set := newStatefulSet(ns, "db", 3)
		set.Spec.RevisionHistoryLimit = ptr.To[int32](1)
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		readyAll(ctx, ns, 3)
		var rev1 string
		Eventually(func(g Gomega) {
			s := getSet(ctx, g, ns, "db")
			g.Expect(s.Status.ReadyReplicas).To(Equal(int32(3)))
			rev1 = s.Status.CurrentRevision
		}).Should(Succeed())
		revisionOf := func(g Gomega, name string) string {
			p := pods(ctx, g, ns)[name]
			g.Expect(p).NotTo(BeNil())
			return p.Labels[appsv1.ControllerRevisionHashLabelKey]
		}

		update(ctx, ns, "db", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate = &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](1)}
			s.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.9"
		})
		var rev2 string
		Eventually(func(g Gomega) {
			s := getSet(ctx, g, ns, "db")
			g.Expect(s.Status.UpdateRevision).NotTo(Equal(rev1))
			rev2 = s.Status.UpdateRevision
			g.Expect(revisionOf(g, "db-2")).To(Equal(rev2))
		}).Should(Succeed())
		// db-1 waits for the new db-2 to be Running and Ready.
		Consistently(func(g Gomega) {
			g.Expect(revisionOf(g, "db-1")).To(Equal(rev1))
		}).Should(Succeed())
		Expect(pods(ctx, Default, ns)["db-2"].Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.9"))
		makeReady(ctx, ns, "db-2")
		Eventually(func(g Gomega) {
			g.Expect(revisionOf(g, "db-1")).To(Equal(rev2))
		}).Should(Succeed())
		makeReady(ctx, ns, "db-1")
		Eventually(func(g Gomega) {
			s := getSet(ctx, g, ns, "db")
			g.Expect(s.Status.CurrentRevision).To(Equal(rev1))
			g.Expect(s.Status.UpdateRevision).To(Equal(rev2))
			g.Expect(s.Status.UpdatedReplicas).To(Equal(int32(2)))
			g.Expect(s.Status.CurrentReplicas).To(Equal(int32(1)))
			g.Expect(s.Status.ReadyReplicas).To(Equal(int32(3)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(revisionOf(g, "db-0")).To(Equal(rev1))
		}).Should(Succeed())

		// Roll back: the old template, all ordinals. The old revision is reused.
		update(ctx, ns, "db", func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.Partition = ptr.To[int32](0)
			s.Spec.Template.Spec.Containers[0].Image = "registry.k8s.io/pause:3.10"
		})
		Eventually(func(g Gomega) {
			g.Expect(getSet(ctx, g, ns, "db").Status.UpdateRevision).To(Equal(rev1))
			g.Expect(revisionOf(g, "db-2")).To(Equal(rev1))
		}).Should(Succeed())
		readyAll(ctx, ns, 3)
		Eventually(func(g Gomega) {
			readyAll(ctx, ns, 3)
			s := getSet(ctx, g, ns, "db")
			for i := range 3 {
				g.Expect(revisionOf(g, podName("db", i))).To(Equal(rev1))
			}
			g.Expect(s.Status.CurrentRevision).To(Equal(rev1))
			g.Expect(s.Status.UpdateRevision).To(Equal(rev1))
			g.Expect(s.Status.CurrentReplicas).To(Equal(int32(3)))
			g.Expect(s.Status.UpdatedReplicas).To(Equal(int32(3)))
			rev := &appsv1.ControllerRevision{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: rev1}, rev)).To(Succeed())
			g.Expect(rev.Revision).To(Equal(int64(3)))
			// revisionHistoryLimit 1: rev2 is history now, and kept.
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: rev2}, rev)).To(Succeed())
		}).Should(Succeed())
	})

	It("creates claims from volumeClaimTemplates and keeps them on scale-down by default", func() {
		set := withClaims(newStatefulSet(ns, "data", 2), "www")
		set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		Eventually(func(g Gomega) {
			for i := range 2 {
				pvc := &corev1.PersistentVolumeClaim{}
				g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: podName("www-data", i)}, pvc)).To(Succeed())
				g.Expect(pvc.Labels).To(HaveKeyWithValue("app", "data"))
				g.Expect(pvc.OwnerReferences).To(BeEmpty())
			}
			p := pods(ctx, g, ns)["data-1"]
			g.Expect(p).NotTo(BeNil())
			g.Expect(p.Spec.Volumes).To(ContainElement(corev1.Volume{Name: "www", VolumeSource: corev1.VolumeSource{
				PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "www-data-1"}}}))
		}).Should(Succeed())

		update(ctx, ns, "data", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			g.Expect(podNames(pods(ctx, g, ns))).To(Equal([]string{"data-0"}))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "www-data-1"}, pvc)).To(Succeed())
			g.Expect(pvc.DeletionTimestamp).To(BeNil())
		}).Should(Succeed())
	})

	It("deletes the claims of scaled-down ordinals with whenScaled: Delete", func() {
		set := withClaims(newStatefulSet(ns, "tmp", 2), "www")
		set.Spec.PodManagementPolicy = appsv1.ParallelPodManagement
		set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenScaled:  appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		readyAll(ctx, ns, 2)
		Eventually(func(g Gomega) {
			// In range, the set controls the claims (WhenDeleted: Delete).
			pvc := &corev1.PersistentVolumeClaim{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "www-tmp-1"}, pvc)).To(Succeed())
			g.Expect(metav1.GetControllerOf(pvc)).NotTo(BeNil())
			g.Expect(metav1.GetControllerOf(pvc).Kind).To(Equal("StatefulSet"))
		}).Should(Succeed())

		update(ctx, ns, "tmp", func(s *appsv1.StatefulSet) { s.Spec.Replicas = ptr.To[int32](1) })
		Eventually(func(g Gomega) {
			pvc := &corev1.PersistentVolumeClaim{}
			err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "www-tmp-1"}, pvc)
			// Gone, or held only by the pvc-protection finalizer no controller removes here.
			if !apierrors.IsNotFound(err) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pvc.DeletionTimestamp).NotTo(BeNil())
			}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: "www-tmp-0"}, pvc)).To(Succeed())
			g.Expect(pvc.DeletionTimestamp).To(BeNil())
		}).Should(Succeed())
	})
	It("deletes the claims with the set under whenDeleted: Delete", func() {
		set := withClaims(newStatefulSet(ns, "gone", 1), "www")
		set.Spec.PersistentVolumeClaimRetentionPolicy = &appsv1.StatefulSetPersistentVolumeClaimRetentionPolicy{
			WhenScaled:  appsv1.RetainPersistentVolumeClaimRetentionPolicyType,
			WhenDeleted: appsv1.DeletePersistentVolumeClaimRetentionPolicyType,
		}
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		pvc := &corev1.PersistentVolumeClaim{}
		key := types.NamespacedName{Namespace: ns, Name: "www-gone-0"}
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, key, pvc)).To(Succeed())
			g.Expect(metav1.GetControllerOf(pvc)).NotTo(BeNil())
			g.Expect(metav1.GetControllerOf(pvc).Name).To(Equal("gone"))
		}).Should(Succeed())
		Expect(env.Client.Delete(ctx, getSet(ctx, Default, ns, "gone"))).To(Succeed())
		Eventually(func(g Gomega) {
			err := env.Client.Get(ctx, key, pvc)
			if !apierrors.IsNotFound(err) {
				g.Expect(err).NotTo(HaveOccurred())
				g.Expect(pvc.DeletionTimestamp).NotTo(BeNil())
			}
		}).Should(Succeed())
	})

	It("counts a pod available minReadySeconds after it is ready", func() {
		set := newStatefulSet(ns, "slow", 1)
		set.Spec.MinReadySeconds = 3
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		readyAll(ctx, ns, 1)
		Eventually(func(g Gomega) {
			s := getSet(ctx, g, ns, "slow")
			g.Expect(s.Status.ReadyReplicas).To(Equal(int32(1)))
			g.Expect(s.Status.AvailableReplicas).To(BeZero())
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(getSet(ctx, g, ns, "slow").Status.AvailableReplicas).To(Equal(int32(1)))
		}).WithTimeout(10 * time.Second).Should(Succeed())
	})
})
