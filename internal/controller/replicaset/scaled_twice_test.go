package replicaset_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/pod"
)

// Upstream's conformance spec "[sig-apps] ReplicaSet Replace and Patch tests": a ReplicaSet of
// one, scaled to two and at once patched to three (a label, another image, a grace period of
// 0). The second change arrives while the guard still holds the first one's syncs back.
var _ = Describe("a ReplicaSet scaled twice in quick succession (upstream's Replace and Patch conformance spec)", func() {
	It("reports the new pods ready and available once they are", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "twice")
		rs := newReplicaSet(ns, "test-rs", 1)
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		key := client.ObjectKeyFromObject(rs)
		Eventually(func(g Gomega) {
			running := kubelet(ctx, g, ns)
			g.Expect(running).To(HaveLen(1))
			got := &appsv1.ReplicaSet{}
			g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(1))
		}).Should(Succeed())

		By("scaling to 2 and at once patching to 3 with a label and a template change")
		Expect(env.Client.Get(ctx, key, rs)).To(Succeed())
		rs.Spec.Replicas = ptrTo(int32(2))
		Expect(env.Client.Update(ctx, rs)).To(Succeed())
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"labels": map[string]string{"test-rs": "patched"}},
			"spec": map[string]any{
				"replicas": 3,
				"template": map[string]any{"spec": map[string]any{
					"terminationGracePeriodSeconds": 0,
					"containers":                    []map[string]any{{"name": "test-rs", "image": "registry.k8s.io/pause:3.10.1"}},
				}},
			},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Patch(ctx, rs, client.RawPatch(types.StrategicMergePatchType, patch))).To(Succeed())

		Eventually(func(g Gomega) {
			g.Expect(kubelet(ctx, g, ns)).To(HaveLen(3))
			got := &appsv1.ReplicaSet{}
			g.Expect(env.Client.Get(ctx, key, got)).To(Succeed())
			g.Expect(got.Labels).To(HaveKeyWithValue("test-rs", "patched"))
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.ReadyReplicas).To(BeEquivalentTo(3))
			g.Expect(got.Status.AvailableReplicas).To(BeEquivalentTo(3))
		}).Should(Succeed())
	})
})

// kubelet plays the kubelet for a namespace: each pod not yet Ready is made Running and Ready.
// It returns the namespace's pods.
func kubelet(ctx SpecContext, g Gomega, ns string) []corev1.Pod {
	live := pods(ctx, g, ns)
	for i := range live {
		p := &live[i]
		if pod.IsReady(p) {
			continue
		}
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
		g.Expect(env.Client.Status().Update(ctx, p)).To(Succeed())
	}
	return live
}
