package disruption_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

// reporter is how upstream's disruption controller reports its Events: as source and as
// reporting controller.
const reporter = "controllermanager"

func labelsOf(app string) map[string]string { return map[string]string{"app": app} }

func podSpec() corev1.PodSpec {
	return corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}}
}

// createReplicaSet creates a ReplicaSet (no replicaset-controller runs: its pods are the
// test's), optionally controlled by owner.
func createReplicaSet(ctx context.Context, ns, name string, replicas int32, owner *appsv1.Deployment) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labelsOf(name)},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labelsOf(name)}, Spec: podSpec()},
		},
	}
	if owner != nil {
		rs.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(owner, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	}
	Expect(env.Client.Create(ctx, rs)).To(Succeed())
	return rs
}

// createPods creates n pods controlled by owner, labelled app=app, Ready when ready is set.
func createPods(ctx context.Context, ns, app string, n int, owner *metav1.OwnerReference, ready bool) []*corev1.Pod {
	GinkgoHelper()
	var out []*corev1.Pod
	for range n {
		p := testenv.NewPod(ns, "", "")
		p.GenerateName, p.Labels, p.Spec = app+"-", labelsOf(app), podSpec()
		if owner != nil {
			p.OwnerReferences = []metav1.OwnerReference{*owner}
		}
		if ready {
			env.CreatePod(ctx, p, testenv.Running(true))
		} else {
			env.CreatePod(ctx, p)
		}
		out = append(out, p)
	}
	return out
}

func createPDB(ctx context.Context, ns, app string, minAvailable, maxUnavailable *intstr.IntOrString) *policyv1.PodDisruptionBudget {
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: app},
		Spec: policyv1.PodDisruptionBudgetSpec{
			Selector:       &metav1.LabelSelector{MatchLabels: labelsOf(app)},
			MinAvailable:   minAvailable,
			MaxUnavailable: maxUnavailable,
		},
	}
	Expect(env.Client.Create(ctx, pdb)).To(Succeed())
	return pdb
}

type want struct {
	expected, current, desired, allowed int32
	reason                              string
}

// expectStatus waits for the budget's status, its DisruptionAllowed condition and its
// observedGeneration.
func expectStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, w want) {
	GinkgoHelper()
	Eventually(func(g Gomega) {
		got := &policyv1.PodDisruptionBudget{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), got)).To(Succeed())
		s := got.Status
		g.Expect(s.ObservedGeneration).To(Equal(got.Generation))
		g.Expect([]int32{s.ExpectedPods, s.CurrentHealthy, s.DesiredHealthy, s.DisruptionsAllowed}).
			To(Equal([]int32{w.expected, w.current, w.desired, w.allowed}), "expectedPods, currentHealthy, desiredHealthy, disruptionsAllowed")
		c := apimeta.FindStatusCondition(s.Conditions, policyv1.DisruptionAllowedCondition)
		g.Expect(c).NotTo(BeNil())
		g.Expect(c.Reason).To(Equal(w.reason))
		g.Expect(c.Status).To(Equal(map[bool]metav1.ConditionStatus{true: metav1.ConditionTrue, false: metav1.ConditionFalse}[w.allowed > 0]))
		g.Expect(c.ObservedGeneration).To(Equal(got.Generation))
	}).Should(Succeed())
}

func evict(ctx context.Context, p *corev1.Pod) error {
	return env.Client.SubResource("eviction").Create(ctx, p, &policyv1.Eviction{
		ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name},
	})
}
