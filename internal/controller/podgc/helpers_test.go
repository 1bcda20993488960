package podgc_test

import (
	"context"
	"slices"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

// holdFinalizer keeps a deleted pod readable, so that a spec can see what podgc wrote.
const holdFinalizer = "kcm.test/hold"

// awaitServerSecondAfter waits until the API server's clock, as it stamps the creation of
// an object (a dry run creates nothing), has passed the second obj was created in.
func awaitServerSecondAfter(ctx context.Context, ns string, obj client.Object) {
	Eventually(func(g Gomega) {
		probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "clock-"}}
		g.Expect(env.Client.Create(ctx, probe, client.DryRunAll)).To(Succeed())
		g.Expect(probe.CreationTimestamp.Time).To(BeTemporally(">", obj.GetCreationTimestamp().Time))
	}).Should(Succeed())
}

// awaitPass waits until a pass of the collector has seen every pod created before: it
// marks Failed a terminating unscheduled canary pod created after them (held, so that it
// stays readable; the spec's cleanup releases it).
func awaitPass(ctx context.Context, ns string) {
	canary := createPod(ctx, ns, "pass-canary", "", true)
	Expect(env.Client.Delete(ctx, canary)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(getPod(g, ns, canary.Name).Status.Phase).To(Equal(corev1.PodFailed))
	}).Should(Succeed())
}

// createPod creates a pod bound to node ("" for none); hold adds holdFinalizer.
func createPod(ctx context.Context, ns, name, node string, hold bool) *corev1.Pod {
	GinkgoHelper()
	p := testenv.NewPod(ns, name, node)
	if hold {
		p.Finalizers = []string{holdFinalizer}
	}
	return env.CreatePod(ctx, p)
}

// getPod reads a pod from the API server; nil when it is gone.
func getPod(g Gomega, ns, name string) *corev1.Pod {
	p := &corev1.Pod{}
	err := env.Client.Get(context.Background(), types.NamespacedName{Namespace: ns, Name: name}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	g.Expect(err).NotTo(HaveOccurred())
	return p
}

func disruptionTarget(p *corev1.Pod) *corev1.PodCondition {
	i := slices.IndexFunc(p.Status.Conditions, func(c corev1.PodCondition) bool { return c.Type == corev1.DisruptionTarget })
	if i < 0 {
		return nil
	}
	return &p.Status.Conditions[i]
}

// cleanup deletes every pod of the namespace, releasing held ones, and the nodes, so that
// no terminated pod counts towards the next spec's threshold.
func cleanup(ctx context.Context, ns string, nodes []string) {
	pods := &corev1.PodList{}
	Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
	for i := range pods.Items {
		p := &pods.Items[i]
		if len(p.Finalizers) > 0 {
			Expect(client.IgnoreNotFound(env.Client.Patch(ctx, p, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))))).To(Succeed())
		}
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, p, client.GracePeriodSeconds(0)))).To(Succeed())
	}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns))).To(Succeed())
		g.Expect(pods.Items).To(BeEmpty())
	}).Should(Succeed())
	for _, n := range nodes {
		Expect(client.IgnoreNotFound(env.Client.Delete(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: n}}))).To(Succeed())
	}
}
