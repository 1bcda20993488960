package invariants_test

import (
	"context"
	"testing"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
	"github.com/kcm/kcm/test/chaos/invariants"
)

// TestWatcherOnKCM runs the Watcher on a real API server with kcm's Deployment, ReplicaSet
// and Job controllers and no nodes (the test plays the kubelet): it sees kcm roll a
// Deployment within maxSurge and run a Job within parallelism, and reports exactly the pod
// the test deletes under an unchanged ReplicaSet. A plain test, not a Ginkgo suite, so that
// the package runs with -count=N.
func TestWatcherOnKCM(t *testing.T) {
	env, err := testenv.Start([]string{"deployment-controller", "replicaset-controller", "job-controller"})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Stop() })
	ctx := t.Context()
	g := NewWithT(t)
	g.SetDefaultEventuallyTimeout(testenv.EventuallyTimeout)
	g.SetDefaultEventuallyPollingInterval(testenv.EventuallyPolling)
	w, err := invariants.Start(ctx, env.Config, invariants.Options{})
	g.Expect(err).NotTo(HaveOccurred())
	t.Cleanup(w.Stop)
	c := env.Client
	ns := "invariants"
	g.Expect(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})).To(Succeed())

	labels := map[string]string{"app": "web"}
	d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}, Spec: appsv1.DeploymentSpec{
		Replicas: ptr.To[int32](10), Selector: &metav1.LabelSelector{MatchLabels: labels},
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType, RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge: ptr.To(intstr.FromInt32(2)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}},
		Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels},
			Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v1"}}}}}}
	g.Expect(c.Create(ctx, d)).To(Succeed())
	g.Expect(c.Create(ctx, &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "job"}, Spec: batchv1.JobSpec{
		Completions: ptr.To[int32](10), Parallelism: ptr.To[int32](3),
		Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
			Containers: []corev1.Container{{Name: "c", Image: "v1"}}}}}})).To(Succeed())
	settle(ctx, g, c, ns)

	// Roll the Deployment to a new image.
	g.Expect(c.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
	d.Spec.Template.Spec.Containers[0].Image = "v2"
	g.Expect(c.Update(ctx, d)).To(Succeed())
	settle(ctx, g, c, ns)

	// Delete one of its pods behind kcm's back.
	var pods corev1.PodList
	g.Expect(c.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels(labels))).To(Succeed())
	lost := pods.Items[0]
	g.Expect(c.Delete(ctx, &lost)).To(Succeed())
	settle(ctx, g, c, ns)

	w.Stop()
	g.Expect(w.Violations()).To(ConsistOf(And(
		HaveField("Rule", invariants.RulePodLost),
		HaveField("Detail", ContainSubstring("pod "+lost.Name+" deleted")))))
	// The first step of the rollout has 10 old pods and 2 new ones live.
	g.Expect(w.MaxOvershoot()).To(HaveKeyWithValue(ns+"/web", 2))
}

// settle plays the kubelet (Deployment pods run and turn ready, Job pods succeed,
// terminating pods go) until Converged reports nothing left in ns.
func settle(ctx context.Context, outer Gomega, c client.Client, ns string) {
	outer.Eventually(func(g Gomega) []string {
		var pods corev1.PodList
		g.Expect(c.List(ctx, &pods, client.InNamespace(ns))).To(Succeed())
		for i := range pods.Items {
			p := &pods.Items[i]
			switch {
			case p.DeletionTimestamp != nil:
				g.Expect(client.IgnoreNotFound(c.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(Succeed())
			case p.Status.Phase != corev1.PodPending:
			case p.Labels[batchv1.JobNameLabel] != "":
				p.Status.Phase = corev1.PodSucceeded
				g.Expect(client.IgnoreNotFound(c.Status().Update(ctx, p))).To(Succeed())
			default:
				p.Status.Phase = corev1.PodRunning
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Now()}}
				g.Expect(client.IgnoreNotFound(c.Status().Update(ctx, p))).To(Succeed())
			}
		}
		pending, err := invariants.Converged(ctx, c, ns)
		g.Expect(err).NotTo(HaveOccurred())
		return pending
	}).WithContext(ctx).Should(BeEmpty())
}
