package rootcapublisher_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/controller/rootcapublisher"
)

var _ = Describe("root-ca-certificate-publisher-controller", func() {
	ctx := context.Background()
	key := func(ns string) types.NamespacedName {
		return types.NamespacedName{Namespace: ns, Name: rootcapublisher.ConfigMapName}
	}
	published := func(g Gomega, ns string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{}
		g.Expect(env.Client.Get(ctx, key(ns), cm)).To(Succeed())
		g.Expect(cm.Data).To(Equal(map[string]string{"ca.crt": string(publishedCA)}))
		g.Expect(cm.Annotations).To(HaveKeyWithValue(rootcapublisher.DescriptionAnnotation, rootcapublisher.Description))
		return cm
	}

	It("publishes the --root-ca-file bundle into the namespaces that existed before it started", func() {
		for _, ns := range []string{"default", "kube-system", "kube-public", "kube-node-lease"} {
			Eventually(func(g Gomega) { published(g, ns) }).Should(Succeed(), "namespace %s", ns)
		}
	})

	It("publishes into a new namespace", func() {
		ns := env.Namespace(ctx, "rootca")
		Eventually(func(g Gomega) { published(g, ns) }).Should(Succeed())
	})

	It("reverts edits to the data and keeps other annotations and labels", func() {
		ns := env.Namespace(ctx, "rootca")
		var cm *corev1.ConfigMap
		Eventually(func(g Gomega) { cm = published(g, ns) }).Should(Succeed())

		cm.Data["ca.crt"] = "tampered"
		cm.Data["extra"] = "value"
		cm.Labels = map[string]string{"team": "a"}
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			repaired := published(g, ns)
			g.Expect(repaired.Labels).To(HaveKeyWithValue("team", "a"))
		}).Should(Succeed())
	})

	It("restores the description annotation when it is removed", func() {
		ns := env.Namespace(ctx, "rootca")
		var cm *corev1.ConfigMap
		Eventually(func(g Gomega) { cm = published(g, ns) }).Should(Succeed())
		delete(cm.Annotations, rootcapublisher.DescriptionAnnotation)
		Expect(env.Client.Update(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) { published(g, ns) }).Should(Succeed())
	})

	It("recreates the ConfigMap when it is deleted", func() {
		ns := env.Namespace(ctx, "rootca")
		var cm *corev1.ConfigMap
		Eventually(func(g Gomega) { cm = published(g, ns) }).Should(Succeed())
		Expect(env.Client.Delete(ctx, cm)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(published(g, ns).UID).NotTo(Equal(cm.UID))
		}).Should(Succeed())
	})
})
