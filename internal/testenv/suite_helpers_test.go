package testenv_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("Get and RestartManager", func() {
	It("Get reads the object afresh each call, and fails its Gomega when it is missing", func() {
		ctx := context.Background()
		n := env.Node(ctx, "get-node", testenv.NodeLabels(map[string]string{"v": "1"}))
		env.Cleanup(n)
		get := testenv.Get[corev1.Node](ctx, env, "", n.Name)
		Expect(get(Default).Labels).To(HaveKeyWithValue("v", "1"))
		n.Labels["v"] = "2"
		Expect(env.Client.Update(ctx, n)).To(Succeed())
		Expect(get(Default).Labels).To(HaveKeyWithValue("v", "2"))
		failures := InterceptGomegaFailures(func() { testenv.Get[corev1.Node](ctx, env, "", "absent")(Default) })
		Expect(failures).To(ContainElement(ContainSubstring("not found")))
	})

	It("RestartManager runs the named controllers on the environment", func() {
		ctx := context.Background()
		env.RestartManager([]string{"ttl-controller"}, nil)
		DeferCleanup(env.StopManager)
		n := env.Node(ctx, "restart-node")
		env.Cleanup(n)
		// ttl-controller's witness: the node's TTL annotation (0 s in a small cluster).
		Eventually(func(g Gomega) map[string]string {
			return testenv.Get[corev1.Node](ctx, env, "", n.Name)(g).Annotations
		}).Should(HaveKeyWithValue("node.alpha.kubernetes.io/ttl", "0"))
	})
})
