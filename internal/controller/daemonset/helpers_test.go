package daemonset_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

// newPool returns a label unique to one spec: its nodes carry it, its DaemonSets select it.
func newPool() map[string]string {
	return map[string]string{"pool": rand.String(8)}
}

// createNode creates a Ready node (testenv's stand-in) with exactly these labels and taints:
// node-lifecycle-controller's part, lifting any not-ready taint admission puts on a new node.
func createNode(ctx context.Context, name string, labels map[string]string, taints ...corev1.Taint) *corev1.Node {
	GinkgoHelper()
	return env.Node(ctx, name, testenv.NodeLabels(labels), testenv.NodeTaints(taints...))
}

func updateNode(ctx context.Context, name string, mutate func(*corev1.Node)) {
	Eventually(func(g Gomega) {
		node := &corev1.Node{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, node)).To(Succeed())
		mutate(node)
		g.Expect(env.Client.Update(ctx, node)).To(Succeed())
	}).Should(Succeed())
}

func newDaemonSet(ns, name string, pool map[string]string) *appsv1.DaemonSet {
	labels := map[string]string{"app": name}
	return &appsv1.DaemonSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DaemonSetSpec{
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					NodeSelector:                  pool,
					TerminationGracePeriodSeconds: new(int64),
					Containers:                    []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
				},
			},
		},
	}
}

func rollingUpdate(ds *appsv1.DaemonSet, maxUnavailable, maxSurge int) {
	mu, ms := intstr.FromInt32(int32(maxUnavailable)), intstr.FromInt32(int32(maxSurge))
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{
		Type:          appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxUnavailable: &mu, MaxSurge: &ms},
	}
}

// livePods lists the namespace's pods that are not being deleted.
func livePods(ctx context.Context, g Gomega, ns string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var live []corev1.Pod
	for _, p := range list.Items {
		if p.DeletionTimestamp == nil {
			live = append(live, p)
		}
	}
	return live
}

// podsByNode maps each node to its live pods' names, by the node the pod targets.
func podsByNode(ctx context.Context, g Gomega, ns string) map[string][]string {
	out := map[string][]string{}
	for _, p := range livePods(ctx, g, ns) {
		out[target(&p)] = append(out[target(&p)], p.Name)
	}
	return out
}

func target(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	a := p.Spec.Affinity
	if a == nil || a.NodeAffinity == nil || a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	terms := a.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms
	if len(terms) != 1 || len(terms[0].MatchFields) != 1 {
		return ""
	}
	return terms[0].MatchFields[0].Values[0]
}

func bind(ctx context.Context, p *corev1.Pod, node string) error {
	return env.Client.SubResource("binding").Create(ctx, p, &corev1.Binding{
		ObjectMeta: metav1.ObjectMeta{Name: p.Name, Namespace: p.Namespace},
		Target:     corev1.ObjectReference{Kind: "Node", Name: node},
	})
}

// kubelet plays scheduler and kubelet once over the namespace: it binds pending pods to the
// node their affinity names (when ready is set, also making them Running and Ready) and
// finishes graceful deletions.
func kubelet(ctx context.Context, ns string, ready bool) {
	list := &corev1.PodList{}
	Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	for i := range list.Items {
		p := &list.Items[i]
		var err error
		switch {
		case p.DeletionTimestamp != nil:
			err = env.Client.Delete(ctx, p, client.GracePeriodSeconds(0))
		case p.Spec.NodeName == "":
			if err = bind(ctx, p, target(p)); err == nil && ready {
				if err = env.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err == nil {
					err = env.ReportPodStatus(ctx, p, testenv.Running(true))
				}
			}
		case ready && p.Status.Phase != corev1.PodRunning && p.Status.Phase != corev1.PodFailed && p.Status.Phase != corev1.PodSucceeded:
			err = env.ReportPodStatus(ctx, p, testenv.Running(true))
		}
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			Expect(err).NotTo(HaveOccurred())
		}
	}
}

func getDaemonSet(ctx context.Context, g Gomega, ds *appsv1.DaemonSet) *appsv1.DaemonSet {
	got := &appsv1.DaemonSet{}
	g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(ds), got)).To(Succeed())
	return got
}

func setImage(ctx context.Context, ds *appsv1.DaemonSet, image string) {
	Eventually(func(g Gomega) {
		got := getDaemonSet(ctx, g, ds)
		got.Spec.Template.Spec.Containers[0].Image = image
		g.Expect(env.Client.Update(ctx, got)).To(Succeed())
	}).Should(Succeed())
}
