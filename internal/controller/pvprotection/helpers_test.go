package pvprotection_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func createVolume(ctx context.Context) *corev1.PersistentVolume {
	pv := &corev1.PersistentVolume{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pv-"},
		Spec: corev1.PersistentVolumeSpec{
			Capacity:               corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")},
			AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
			PersistentVolumeSource: corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/pv"}},
		},
	}
	Expect(env.Client.Create(ctx, pv)).To(Succeed())
	return pv
}

// update re-reads the volume and applies change with the given writer until it sticks.
func update(ctx context.Context, pv *corev1.PersistentVolume, w func(context.Context, client.Object) error, change func(*corev1.PersistentVolume)) {
	GinkgoHelper()
	Eventually(func() error {
		got := &corev1.PersistentVolume{}
		if err := env.Client.Get(ctx, client.ObjectKeyFromObject(pv), got); err != nil {
			return err
		}
		change(got)
		return w(ctx, got)
	}).Should(Succeed())
}

func writeSpec(ctx context.Context, o client.Object) error { return env.Client.Update(ctx, o) }
func writeStatus(ctx context.Context, o client.Object) error {
	return env.Client.Status().Update(ctx, o)
}

func setPhase(phase corev1.PersistentVolumePhase) func(*corev1.PersistentVolume) {
	return func(pv *corev1.PersistentVolume) { pv.Status.Phase = phase }
}

func getVolume(ctx context.Context, pv *corev1.PersistentVolume) func() (*corev1.PersistentVolume, error) {
	return func() (*corev1.PersistentVolume, error) {
		got := &corev1.PersistentVolume{}
		return got, env.Client.Get(ctx, client.ObjectKeyFromObject(pv), got)
	}
}
