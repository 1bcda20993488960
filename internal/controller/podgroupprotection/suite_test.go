package podgroupprotection_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller/podgroupprotection"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestPodGroupProtectionController(t *testing.T) {
	testenv.RunSuite(t, "podgroup-protection-controller suite")
}

// gates turns on PodGroups (scheduling.k8s.io/v1beta1, beta and off by default in v1.37) and
// the API server's PodGroupProtection admission plugin that stamps the finalizer.
const gates = "GenericWorkload=true"

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(func(te *envtest.Environment) {
		args := te.ControlPlane.GetAPIServer().Configure()
		args.Set("feature-gates", gates)
		args.Set("runtime-config", "scheduling.k8s.io/v1beta1=true")
	})
	Expect(env.StartManager([]string{podgroupprotection.ControllerName}, "--feature-gates="+gates)).To(Succeed())
})

func createGroup(ctx context.Context, ns, name string) *schedulingv1beta1.PodGroup {
	GinkgoHelper()
	pg := &schedulingv1beta1.PodGroup{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: schedulingv1beta1.PodGroupSpec{SchedulingPolicy: schedulingv1beta1.PodGroupSchedulingPolicy{
			Basic: &schedulingv1beta1.BasicSchedulingPolicy{}}},
	}
	Expect(env.Client.Create(ctx, pg)).To(Succeed())
	Expect(pg.Finalizers).To(ContainElement(podgroupprotection.Finalizer), "stamped by the admission plugin")
	return pg
}

// createPod creates a pod of the group (no kubelet runs: the test plays it).
func createPod(ctx context.Context, ns, name, group string) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
			SchedulingGroup: &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)},
		},
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}

func setPhase(ctx context.Context, p *corev1.Pod, phase corev1.PodPhase) {
	GinkgoHelper()
	p.Status.Phase = phase
	Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
}

func forceDelete(ctx context.Context, p *corev1.Pod) {
	GinkgoHelper()
	Expect(env.Client.Delete(ctx, p, client.GracePeriodSeconds(0))).To(Succeed())
}

func gone(ctx context.Context, pg *schedulingv1beta1.PodGroup) func() bool {
	return func() bool {
		return apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(pg), &schedulingv1beta1.PodGroup{}))
	}
}

// finalizers reads the PodGroup's finalizers; a PodGroup held by the finalizer still exists.
func finalizers(ctx context.Context, pg *schedulingv1beta1.PodGroup) func(Gomega) []string {
	return func(g Gomega) []string {
		got := &schedulingv1beta1.PodGroup{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pg), got)).To(Succeed())
		g.Expect(got.DeletionTimestamp).NotTo(BeNil())
		return got.Finalizers
	}
}

var _ = Describe("podgroup-protection-controller", func() {
	It("lets a PodGroup no pod names go at once", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pg-unused")
		pg := createGroup(ctx, ns, "lonely")
		createPod(ctx, ns, "elsewhere", "other-group")
		Expect(env.Client.Delete(ctx, pg)).To(Succeed())
		Eventually(gone(ctx, pg)).Should(BeTrue())
	})

	It("keeps a deleted PodGroup while an active pod names it, and releases it when the last one terminates or goes", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pg-used")
		pg := createGroup(ctx, ns, "gang")
		runner := createPod(ctx, ns, "runner", pg.Name)
		setPhase(ctx, runner, corev1.PodRunning)
		waiter := createPod(ctx, ns, "waiter", pg.Name)
		done := createPod(ctx, ns, "done", pg.Name)
		setPhase(ctx, done, corev1.PodSucceeded)

		// A second PodGroup, unused, deleted after the first: its release witnesses that the
		// controller has seen the deletion, so the first one's finalizer is kept on purpose.
		witness := createGroup(ctx, ns, "witness")
		Expect(env.Client.Delete(ctx, pg)).To(Succeed())
		Expect(env.Client.Delete(ctx, witness)).To(Succeed())
		Eventually(gone(ctx, witness)).Should(BeTrue())
		Consistently(finalizers(ctx, pg), "2s").Should(ContainElement(podgroupprotection.Finalizer))

		By("one active pod fails: the other still holds the group")
		setPhase(ctx, runner, corev1.PodFailed)
		Consistently(finalizers(ctx, pg), "2s").Should(ContainElement(podgroupprotection.Finalizer))

		By("the last active pod is deleted: the group goes")
		forceDelete(ctx, waiter)
		Eventually(gone(ctx, pg)).Should(BeTrue())
	})

	It("releases a deleted PodGroup when its last active pod succeeds", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "pg-finish")
		pg := createGroup(ctx, ns, "batch")
		worker := createPod(ctx, ns, "worker", pg.Name)
		setPhase(ctx, worker, corev1.PodRunning)
		Expect(env.Client.Delete(ctx, pg)).To(Succeed())
		Expect(finalizers(ctx, pg)(Default)).To(ContainElement(podgroupprotection.Finalizer))

		setPhase(ctx, worker, corev1.PodSucceeded)
		Eventually(gone(ctx, pg)).Should(BeTrue())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(worker), &corev1.Pod{})).To(Succeed(), "the pod itself stays")
	})
})
