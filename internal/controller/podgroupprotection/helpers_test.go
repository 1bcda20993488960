package podgroupprotection_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/podgroupprotection"
	"github.com/kcm/kcm/internal/testenv"
)

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

// createPod creates a pod of the group (no kubelet runs: the test plays it, through
// env.SetPodStatus).
func createPod(ctx context.Context, ns, name, group string) *corev1.Pod {
	GinkgoHelper()
	p := testenv.NewPod(ns, name, "")
	p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	return env.CreatePod(ctx, p)
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
