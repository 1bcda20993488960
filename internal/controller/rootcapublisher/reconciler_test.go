package rootcapublisher_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/kcm/kcm/internal/controller/rootcapublisher"
	"github.com/kcm/kcm/internal/testenv"
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

	It("publishes into a new namespace, counting the sync in upstream's metrics", func() {
		ok := syncs(Default)["200"]
		ns := env.Namespace(ctx, "rootca")
		Eventually(func(g Gomega) { published(g, ns) }).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(syncs(g)["200"]).To(BeNumerically(">", ok)) }).Should(Succeed())
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

	It("retries a failed create without an Event, as upstream", func() {
		ns := env.Namespace(ctx, "rootca")
		var cm *corev1.ConfigMap
		Eventually(func(g Gomega) { cm = published(g, ns) }).Should(Succeed())
		// The API server refuses the controller's create.
		lift := env.DenyCreates(ctx, ns, "configmaps", func() error {
			return env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "probe-"}})
		})
		failures := testenv.ReconcileErrors(rootcapublisher.ControllerName)()
		failed := nonOK(Default)
		Expect(env.Client.Delete(ctx, cm)).To(Succeed())

		By("the create failing: the sync returns the error and is retried, counted with the API's code")
		Eventually(testenv.ReconcileErrors(rootcapublisher.ControllerName)).Should(BeNumerically(">", failures))
		Eventually(nonOK).Should(BeNumerically(">", failed))

		By("the policy lifted: the retry creates it")
		lift()
		Eventually(func(g Gomega) {
			g.Expect(published(g, ns).UID).NotTo(Equal(cm.UID))
		}).Should(Succeed())
		events := &eventsv1.EventList{}
		Expect(env.Client.List(ctx, events)).To(Succeed())
		for _, e := range events.Items {
			Expect(e.Regarding.Name == ns && e.Reason == "FailedCreate").To(BeFalse(), "Event %s/%s: %s", e.Namespace, e.Name, e.Note)
		}
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
