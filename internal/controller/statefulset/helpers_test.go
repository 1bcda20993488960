package statefulset_test

import (
	"context"
	"fmt"
	"sort"
	"time"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

func newStatefulSet(ns, name string, replicas int32) *appsv1.StatefulSet {
	labels := map[string]string{"app": name}
	return &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.StatefulSetSpec{
			Replicas:    &replicas,
			ServiceName: name,
			Selector:    &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

func withClaims(set *appsv1.StatefulSet, names ...string) *appsv1.StatefulSet {
	for _, n := range names {
		set.Spec.VolumeClaimTemplates = append(set.Spec.VolumeClaimTemplates, corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Name: n},
			Spec: corev1.PersistentVolumeClaimSpec{
				AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources:   corev1.VolumeResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}},
			},
		})
	}
	return set
}

// pods returns the namespace's pods that are not being deleted, by name.
func pods(ctx context.Context, g Gomega, ns string) map[string]*corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	out := map[string]*corev1.Pod{}
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out[list.Items[i].Name] = &list.Items[i]
		}
	}
	return out
}

func podNames(m map[string]*corev1.Pod) []string {
	var out []string
	for n := range m {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// makeReady acts as the kubelet: the pod runs and is Ready.
func makeReady(ctx context.Context, ns, name string) {
	Eventually(func() error {
		p := &corev1.Pod{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, p); err != nil {
			return err
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.Now()}}
		return env.Client.Status().Update(ctx, p)
	}).Should(Succeed())
}

// readyAll makes every pod of the namespace Ready as it appears until want pods exist and
// are ready.
func readyAll(ctx context.Context, ns string, want int) {
	Eventually(func(g Gomega) {
		ps := pods(ctx, g, ns)
		ready := 0
		for name, p := range ps {
			if p.Status.Phase != corev1.PodRunning {
				makeReady(ctx, ns, name)
				continue
			}
			ready++
		}
		g.Expect(ready).To(Equal(want))
		g.Expect(ps).To(HaveLen(want))
	}).WithTimeout(60 * time.Second).Should(Succeed())
}

func getSet(ctx context.Context, g Gomega, ns, name string) *appsv1.StatefulSet {
	set := &appsv1.StatefulSet{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, set)).To(Succeed())
	return set
}

func update(ctx context.Context, ns, name string, mutate func(*appsv1.StatefulSet)) {
	Eventually(func() error {
		set := &appsv1.StatefulSet{}
		if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, set); err != nil {
			return err
		}
		mutate(set)
		return env.Client.Update(ctx, set)
	}).Should(Succeed())
}

func podName(set string, i int) string { return fmt.Sprintf("%s-%d", set, i) }
