package disruption_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	policyv1 "k8s.io/api/policy/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/disruption"
	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("disruption-controller", func() {
	It("allows one disruption for minAvailable 2 of 3 ready pods, and the eviction API follows the status", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		rs := createReplicaSet(ctx, ns, "web", 3, nil)
		ref := metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
		pods := createPods(ctx, ns, "web", 3, ref, true)
		pdb := createPDB(ctx, ns, "web", new(intstr.FromInt32(2)), nil)
		expectStatus(ctx, pdb, want{expected: 3, current: 3, desired: 2, allowed: 1, reason: policyv1.SufficientPodsReason})

		By("evicting one pod: allowed, and the pod goes (unscheduled pods are deleted at once)")
		Expect(evict(ctx, pods[0])).To(Succeed())
		Eventually(func() bool {
			return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(pods[0]), &corev1.Pod{}))
		}).Should(BeTrue())
		expectStatus(ctx, pdb, want{expected: 2, current: 2, desired: 2, allowed: 0, reason: policyv1.InsufficientPodsReason})
		Eventually(func(g Gomega) {
			got := &policyv1.PodDisruptionBudget{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
			g.Expect(got.Status.DisruptedPods).To(BeEmpty(), "the deleted pod's entry is dropped")
		}).Should(Succeed())

		By("evicting another: refused with 429 while disruptionsAllowed is 0")
		err := evict(ctx, pods[1])
		Expect(apierrors.IsTooManyRequests(err)).To(BeTrue(), "got %v", err)
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pods[1]), &corev1.Pod{})).To(Succeed())
	})

	It("follows maxUnavailable 50% through the ReplicaSet's scale and pod readiness", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		rs := createReplicaSet(ctx, ns, "api", 4, nil)
		ref := metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet"))
		pods := createPods(ctx, ns, "api", 4, ref, true)
		pdb := createPDB(ctx, ns, "api", nil, new(intstr.FromString("50%")))
		expectStatus(ctx, pdb, want{expected: 4, current: 4, desired: 2, allowed: 2, reason: policyv1.SufficientPodsReason})

		By("scaling the ReplicaSet to 6 (and creating its two new pods, not ready yet)")
		rs.Spec.Replicas = new(int32(6))
		Expect(env.Client.Update(ctx, rs)).To(Succeed())
		createPods(ctx, ns, "api", 2, ref, false)
		expectStatus(ctx, pdb, want{expected: 6, current: 4, desired: 3, allowed: 1, reason: policyv1.SufficientPodsReason})

		By("a pod becoming unready")
		env.SetPodStatus(ctx, pods[0], testenv.Running(false))
		expectStatus(ctx, pdb, want{expected: 6, current: 3, desired: 3, allowed: 0, reason: policyv1.InsufficientPodsReason})
	})

	It("does not count a pod the eviction API recorded in disruptedPods, until the entry expires", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		rs := createReplicaSet(ctx, ns, "evicted", 3, nil)
		pods := createPods(ctx, ns, "evicted", 3, metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")), true)
		pdb := createPDB(ctx, ns, "evicted", new(intstr.FromInt32(1)), nil)
		expectStatus(ctx, pdb, want{expected: 3, current: 3, desired: 1, allowed: 2, reason: policyv1.SufficientPodsReason})

		By("recording, as the eviction API would, a disruption 8s short of DeletionTimeout")
		Eventually(func() error {
			got := &policyv1.PodDisruptionBudget{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got); err != nil {
				return err
			}
			got.Status.DisruptedPods = map[string]metav1.Time{pods[0].Name: metav1.NewTime(time.Now().Add(-disruption.DeletionTimeout + 8*time.Second))}
			got.Status.DisruptionsAllowed = 1
			return env.Client.Status().Update(ctx, got)
		}).Should(Succeed())
		expectStatus(ctx, pdb, want{expected: 3, current: 2, desired: 1, allowed: 1, reason: policyv1.SufficientPodsReason})

		By("the pod not being deleted: the entry expires, the pod counts again, and a NotDeleted Event says so")
		expectStatus(ctx, pdb, want{expected: 3, current: 3, desired: 1, allowed: 2, reason: policyv1.SufficientPodsReason})
		got := &policyv1.PodDisruptionBudget{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
		Expect(got.Status.DisruptedPods).To(BeEmpty())
		env.ExpectEvent(ctx, pods[0], testenv.Event{Type: corev1.EventTypeWarning, Reason: "NotDeleted",
			Message: fmt.Sprintf("Pod was expected by PDB %s/%s to be deleted but it wasn't", ns, "evicted"), Source: reporter, ReportingController: reporter})
	})

	It("counts a Deployment's scale for the pods of its ReplicaSet", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "dep"},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(5)),
				Selector: &metav1.LabelSelector{MatchLabels: labelsOf("dep")},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsOf("dep")}, Spec: podSpec()},
			},
		}
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		rs := createReplicaSet(ctx, ns, "dep", 2, d)
		createPods(ctx, ns, "dep", 2, metav1.NewControllerRef(rs, appsv1.SchemeGroupVersion.WithKind("ReplicaSet")), true)
		pdb := createPDB(ctx, ns, "dep", new(intstr.FromString("30%")), nil)
		expectStatus(ctx, pdb, want{expected: 5, current: 2, desired: 2, allowed: 0, reason: policyv1.InsufficientPodsReason})
	})

	It("reads any other controller's /scale subresource (here a Deployment controlling pods directly)", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		d := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "direct"},
			Spec: appsv1.DeploymentSpec{
				Replicas: new(int32(4)),
				Selector: &metav1.LabelSelector{MatchLabels: labelsOf("direct")},
				Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsOf("direct")}, Spec: podSpec()},
			},
		}
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		createPods(ctx, ns, "direct", 3, metav1.NewControllerRef(d, appsv1.SchemeGroupVersion.WithKind("Deployment")), true)
		pdb := createPDB(ctx, ns, "direct", nil, new(intstr.FromInt32(1)))
		expectStatus(ctx, pdb, want{expected: 4, current: 3, desired: 3, allowed: 0, reason: policyv1.InsufficientPodsReason})
	})

	It("reports NoPods for a budget selecting nothing, and fails safe when a pod's controller has no scale", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		empty := createPDB(ctx, ns, "nothing", nil, new(intstr.FromInt32(1)))
		expectStatus(ctx, empty, want{reason: policyv1.InsufficientPodsReason})
		env.ExpectEvent(ctx, empty, testenv.Event{Type: corev1.EventTypeNormal, Reason: "NoPods",
			Message: "No matching pods found", Source: reporter, ReportingController: reporter})

		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "owner"}}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		createPods(ctx, ns, "cm", 2, metav1.NewControllerRef(cm, corev1.SchemeGroupVersion.WithKind("ConfigMap")), true)
		pdb := createPDB(ctx, ns, "cm", nil, new(intstr.FromInt32(1)))
		Eventually(func(g Gomega) {
			got := &policyv1.PodDisruptionBudget{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
			c := apimeta.FindStatusCondition(got.Status.Conditions, policyv1.DisruptionAllowedCondition)
			g.Expect(c).NotTo(BeNil())
			g.Expect(c.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(c.Reason).To(Equal(policyv1.SyncFailedReason))
			g.Expect(c.Message).To(Equal("configmaps does not implement the scale subresource"))
			g.Expect(got.Status.DisruptionsAllowed).To(BeZero())
		}).Should(Succeed())
		env.ExpectEvent(ctx, pdb, testenv.Event{Type: corev1.EventTypeWarning, Reason: "CalculateExpectedPodCountFailed",
			Message: "Failed to calculate the number of expected pods: configmaps does not implement the scale subresource", Source: reporter, ReportingController: reporter})

		By("a pod whose ReplicaSet does not exist")
		ghost := &metav1.OwnerReference{APIVersion: "apps/v1", Kind: "ReplicaSet", Name: "ghost", UID: "0000-ghost", Controller: new(true)}
		orphaned := createPods(ctx, ns, "ghost", 1, ghost, true)
		createPDB(ctx, ns, "ghost", new(intstr.FromString("50%")), nil)
		env.ExpectEvent(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "ghost"}}, testenv.Event{Type: corev1.EventTypeWarning, Reason: "CalculateExpectedPodCountFailed",
			Message: fmt.Sprintf("Failed to calculate the number of expected pods: found no controllers for pod %q", orphaned[0].Name), Source: reporter, ReportingController: reporter})
	})

	It("warns on a pod that more than one budget selects (MultiplePodDisruptionBudgets), and on no other", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		for _, name := range []string{"multi-b", "multi-a"} {
			pdb := &policyv1.PodDisruptionBudget{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
				Spec:       policyv1.PodDisruptionBudgetSpec{Selector: &metav1.LabelSelector{MatchLabels: labelsOf("multi")}, MinAvailable: new(intstr.FromInt32(1))},
			}
			Expect(env.Client.Create(ctx, pdb)).To(Succeed())
		}
		single := createPDB(ctx, ns, "single", new(intstr.FromInt32(1)), nil)
		shared := createPods(ctx, ns, "multi", 1, nil, true)[0]
		alone := createPods(ctx, ns, "single", 1, nil, true)[0]

		env.ExpectEvent(ctx, shared, testenv.Event{Type: corev1.EventTypeWarning, Reason: "MultiplePodDisruptionBudgets",
			Message: fmt.Sprintf("Pod %q/%q matches multiple PodDisruptionBudgets.  Chose %q arbitrarily.", ns, shared.Name, "multi-a"), Source: reporter, ReportingController: reporter})
		By("both budgets still count the shared pod")
		for _, name := range []string{"multi-a", "multi-b"} {
			expectStatus(ctx, &policyv1.PodDisruptionBudget{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}},
				want{expected: 1, current: 1, desired: 1, allowed: 0, reason: policyv1.InsufficientPodsReason})
		}
		By("a pod of one budget: counted, no warning")
		expectStatus(ctx, single, want{expected: 1, current: 1, desired: 1, allowed: 0, reason: policyv1.InsufficientPodsReason})
		list := &eventsv1.EventList{}
		Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, e := range list.Items {
			Expect(e.Regarding.Name == alone.Name && e.Reason == "MultiplePodDisruptionBudgets").To(BeFalse(), "warned on %s: %s", alone.Name, e.Note)
		}
	})

	It("sets a stale DisruptionTarget condition to False", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pdb")
		pods := createPods(ctx, ns, "stale", 2, nil, true)
		mark := func(p *corev1.Pod, since time.Time) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "EvictionByEvictionAPI",
				Message: "Eviction API: evicting", LastTransitionTime: metav1.NewTime(since),
			})
			Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
		}
		// Marked 3 minutes ago and never deleted: stale. Marked now: not stale for 2 minutes.
		mark(pods[0], time.Now().Add(-3*time.Minute))
		mark(pods[1], time.Now())
		condOf := func(p *corev1.Pod) func(g Gomega) corev1.PodCondition {
			return func(g Gomega) corev1.PodCondition {
				got := &corev1.Pod{}
				g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
				for _, c := range got.Status.Conditions {
					if c.Type == corev1.DisruptionTarget {
						return c
					}
				}
				return corev1.PodCondition{}
			}
		}
		Eventually(condOf(pods[0])).Should(And(
			HaveField("Status", corev1.ConditionFalse), HaveField("Reason", ""), HaveField("Message", "")))
		Consistently(condOf(pods[1])).WithTimeout(2 * time.Second).Should(HaveField("Status", corev1.ConditionTrue))
	})
})
