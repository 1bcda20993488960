package job_test

import (
	"encoding/json"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/pod"
	"github.com/kcm/kcm/internal/testenv"
)

// The shape of upstream's "ReplicaSet Replace and Patch" conformance spec for a Job (whose
// template cannot change): parallelism 1, raised to 2 and at once patched to 3 with a label.
// The patch arrives while the controller still works from its cached copy of the first
// change; its status writes must not take the label back.
var _ = Describe("a Job scaled twice in quick succession", func() {
	It("keeps the patched label and reports the new pods active and ready", func() {
		ns := env.Namespace(ctx, "job-twice")
		j := create(newJob(ns, "twice", ptr.To[int32](5), 1))
		for _, p := range waitActive(j, 1) {
			env.SetPodStatus(ctx, &p, testenv.Running(true))
		}
		Eventually(func(g Gomega) { g.Expect(getJob(g, j).Status.Ready).To(Equal(ptr.To[int32](1))) }).Should(Succeed())

		By("raising parallelism to 2 and at once patching it to 3 with a label")
		updateJob(j, func(cur *batchv1.Job) { cur.Spec.Parallelism = ptr.To[int32](2) })
		patch, err := json.Marshal(map[string]any{
			"metadata": map[string]any{"labels": map[string]string{"test-job": "patched"}},
			"spec":     map[string]any{"parallelism": 3},
		})
		Expect(err).NotTo(HaveOccurred())
		Expect(env.Client.Patch(ctx, j, client.RawPatch(types.StrategicMergePatchType, patch))).To(Succeed())

		Eventually(func(g Gomega) {
			active := activePods(g, j)
			for i := range active {
				if !pod.IsReady(&active[i]) {
					env.SetPodStatus(ctx, &active[i], testenv.Running(true))
				}
			}
			g.Expect(active).To(HaveLen(3))
			for _, p := range active {
				g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
			}
			got := getJob(g, j)
			g.Expect(got.Labels).To(HaveKeyWithValue("test-job", "patched"))
			g.Expect(got.Status.Active).To(BeEquivalentTo(3))
			g.Expect(got.Status.Ready).To(Equal(ptr.To[int32](3)))
		}).Should(Succeed())
	})
})
