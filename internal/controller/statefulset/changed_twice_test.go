package statefulset_test

import (
	"context"
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/pod"
)

// Upstream's "ReplicaSet Replace and Patch" conformance spec, for a StatefulSet: one replica,
// scaled to two and at once patched to three with a label and another template. The patch
// arrives while the controller still works from its cached copy of the scale; its status
// writes must not take the label back.
var _ = Describe("a StatefulSet scaled twice in quick succession", func() {
	It("keeps the patched label and reports the new pods ready and available", func() {
		ctx := context.Background()
		ns := env.Namespace(ctx, "sts-twice")
		set := newStatefulSet(ns, "twice", 1)
		Expect(env.Client.Create(ctx, set)).To(Succeed())
		readyAll(ctx, ns, 1)

		By("scaling to 2 and at once patching to 3 with a label and another image")
		update(ctx, ns, set.Name, func(s *appsv1.StatefulSet) { s.Spec.Replicas = new(int32(2)) })
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"labels": map[string]string{"test-sts": "patched"}},
			"spec": map[string]any{
				"replicas": 3,
				"template": map[string]any{"spec": map[string]any{
					"containers": []map[string]any{{"name": "app", "image": "registry.k8s.io/pause:3.10.1"}},
				}},
			},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Patch(ctx, set, client.RawPatch(types.StrategicMergePatchType, patch))).To(Succeed())

		Eventually(func(g Gomega) {
			ps := pods(ctx, g, ns)
			for name, p := range ps {
				if !pod.IsReady(p) {
					makeReady(ctx, ns, name)
				}
			}
			g.Expect(podNames(ps)).To(Equal([]string{podName(set.Name, 0), podName(set.Name, 1), podName(set.Name, 2)}))
			for _, p := range ps {
				g.Expect(p.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.10.1"), "pod %s", p.Name)
			}
			got := getSet(ctx, g, ns, set.Name)
			g.Expect(got.Labels).To(HaveKeyWithValue("test-sts", "patched"))
			s := got.Status
			g.Expect(s.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(s.ReadyReplicas).To(BeEquivalentTo(3))
			g.Expect(s.AvailableReplicas).To(BeEquivalentTo(3))
			g.Expect(s.UpdatedReplicas).To(BeEquivalentTo(3))
		}).Should(Succeed())
	})
})
