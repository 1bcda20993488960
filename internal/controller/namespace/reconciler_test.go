package namespace_test

import (
	"context"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

const (
	crdGroup = "stable.kcm.test"
	hold     = "kcm.test/hold"
)

var (
	cronTabGVK = schema.GroupVersionKind{Group: crdGroup, Version: "v1", Kind: "CronTab"}
	crdOnce    sync.Once
)

var _ = Describe("namespace-controller", func() {
	ctx := context.Background()

	BeforeEach(func() { crdOnce.Do(func() { installCronTabCRD(ctx) }) })

	It("deletes every object of every resource in a deleted namespace, custom resources included, then the namespace", func() {
		ns, sibling := env.Namespace(ctx, "ns"), env.Namespace(ctx, "ns")
		for i := range 3 {
			create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)}})
		}
		for i := range 2 {
			create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("secret-%d", i)}})
			create(ctx, newPod(ns, fmt.Sprintf("pod-%d", i)))
			create(ctx, newCronTab(ns, fmt.Sprintf("ct-%d", i)))
		}
		create(ctx, &corev1.Service{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec:       corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}},
		})
		survivor := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: sibling, Name: "survivor"}}
		create(ctx, survivor)

		deleteNamespace(ctx, ns)
		Eventually(func() bool { return namespaceGone(ctx, ns) }).Should(BeTrue())

		// The namespace went through its finalizer: nothing of it is left behind.
		Expect(count(ctx, &corev1.ConfigMapList{}, ns)).To(BeZero())
		Expect(count(ctx, &corev1.SecretList{}, ns)).To(BeZero())
		Expect(count(ctx, &corev1.ServiceList{}, ns)).To(BeZero())
		Expect(count(ctx, &corev1.PodList{}, ns)).To(BeZero())
		Expect(count(ctx, cronTabList(), ns)).To(BeZero())
		// Other namespaces are untouched.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(survivor), &corev1.ConfigMap{})).To(Succeed())
		ns2 := &corev1.Namespace{}
		Expect(env.Client.Get(ctx, types.NamespacedName{Name: sibling}, ns2)).To(Succeed())
		Expect(ns2.DeletionTimestamp).To(BeNil())
	})

	It("keeps a namespace whose content a finalizer holds, reporting what remains, and removes it once released", func() {
		ns := env.Namespace(ctx, "ns")
		heldCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "held", Finalizers: []string{hold}}}
		create(ctx, heldCM)
		heldCT := newCronTab(ns, "held")
		heldCT.SetFinalizers([]string{hold})
		create(ctx, heldCT)
		free := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "free"}}
		create(ctx, free)

		deleteNamespace(ctx, ns)
		Eventually(func(g Gomega) {
			conds := conditions(ctx, g, ns)
			g.Expect(conds).To(HaveKeyWithValue(corev1.NamespaceContentRemaining, condition(corev1.ConditionTrue, "SomeResourcesRemain",
				"Some resources are remaining: configmaps. has 1 resource instances, crontabs.stable.kcm.test has 1 resource instances")))
			g.Expect(conds).To(HaveKeyWithValue(corev1.NamespaceFinalizersRemaining, condition(corev1.ConditionTrue, "SomeFinalizersRemain",
				"Some content in the namespace has finalizers remaining: kcm.test/hold in 2 resource instances")))
			g.Expect(conds).To(HaveKeyWithValue(corev1.NamespaceDeletionContentFailure, condition(corev1.ConditionFalse, "ContentDeleted",
				"All content successfully deleted, may be waiting on finalization")))
			g.Expect(conds).To(HaveKeyWithValue(corev1.NamespaceDeletionDiscoveryFailure, condition(corev1.ConditionFalse, "ResourcesDiscovered",
				"All resources successfully discovered")))
			g.Expect(conds).To(HaveKeyWithValue(corev1.NamespaceDeletionGVParsingFailure, condition(corev1.ConditionFalse, "ParsedGroupVersions",
				"All legacy kube types successfully parsed")))
		}).Should(Succeed())
		Expect(apierrors.IsNotFound(env.Client.Get(ctx, client.ObjectKeyFromObject(free), &corev1.ConfigMap{}))).To(BeTrue())
		// Held objects are being deleted, and hold the namespace.
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(heldCM), heldCM)).To(Succeed())
		Expect(heldCM.DeletionTimestamp).NotTo(BeNil())
		Consistently(func(g Gomega) {
			nsObj := &corev1.Namespace{}
			g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: ns}, nsObj)).To(Succeed())
			g.Expect(nsObj.Spec.Finalizers).To(ContainElement(corev1.FinalizerKubernetes))
		}).Should(Succeed())

		release(ctx, heldCM)
		release(ctx, heldCT)
		Eventually(func() bool { return namespaceGone(ctx, ns) }).Should(BeTrue())
	})

	It("deletes pods first and waits for their grace period before deleting the rest", func() {
		ns := env.Namespace(ctx, "ns")
		// Bound to a node, a pod is deleted gracefully; with no kubelet it stays Terminating
		// until the test, playing the kubelet, removes it.
		pod := newPod(ns, "bound")
		pod.Spec.NodeName = "kcm-test-no-such-node"
		pod.Spec.TerminationGracePeriodSeconds = ptr.To[int64](10)
		create(ctx, pod)
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "after-pods"}}
		create(ctx, cm)

		deleteNamespace(ctx, ns)
		Eventually(func(g Gomega) {
			g.Expect(conditions(ctx, g, ns)).To(HaveKeyWithValue(corev1.NamespaceContentRemaining, condition(corev1.ConditionTrue,
				"SomeResourcesRemain", "Some resources are remaining: pods. has 1 resource instances")))
		}).Should(Succeed())
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pod), pod)).To(Succeed())
		Expect(pod.DeletionTimestamp).NotTo(BeNil())
		// Nothing else is deleted while a pod remains.
		Consistently(func() error { return env.Client.Get(ctx, client.ObjectKeyFromObject(cm), &corev1.ConfigMap{}) }).Should(Succeed())

		Expect(env.Client.Delete(ctx, pod, client.GracePeriodSeconds(0))).To(Succeed())
		Eventually(func() bool { return namespaceGone(ctx, ns) }).Should(BeTrue())
		Expect(count(ctx, &corev1.ConfigMapList{}, ns)).To(BeZero())
	})

	It("deletes a namespace holding 1,000 ConfigMaps in well under a minute at the default client rates", func() {
		ns := env.Namespace(ctx, "ns")
		createConfigMaps(ctx, ns, 1000)
		Expect(count(ctx, &corev1.ConfigMapList{}, ns)).To(Equal(1000))

		start := time.Now()
		deleteNamespace(ctx, ns)
		Eventually(func() bool { return namespaceGone(ctx, ns) }, time.Minute).Should(BeTrue())
		elapsed := time.Since(start)
		AddReportEntry("namespace with 1,000 ConfigMaps: delete to gone (includes upstream's 5s grace)", elapsed.Round(10*time.Millisecond).String())
		Expect(elapsed).To(BeNumerically("<", time.Minute))
		Expect(count(ctx, &corev1.ConfigMapList{}, ns)).To(BeZero())
	})
})

func create(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	Expect(env.Client.Create(ctx, obj)).To(Succeed())
}

func newPod(ns, name string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

func deleteNamespace(ctx context.Context, name string) {
	GinkgoHelper()
	Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}})).To(Succeed())
}

func namespaceGone(ctx context.Context, name string) bool {
	return apierrors.IsNotFound(env.Client.Get(ctx, types.NamespacedName{Name: name}, &corev1.Namespace{}))
}

func count(ctx context.Context, list client.ObjectList, ns string) int {
	GinkgoHelper()
	Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	items, err := metaItems(list)
	Expect(err).NotTo(HaveOccurred())
	return items
}

func metaItems(list client.ObjectList) (int, error) {
	switch l := list.(type) {
	case *unstructured.UnstructuredList:
		return len(l.Items), nil
	case *corev1.ConfigMapList:
		return len(l.Items), nil
	case *corev1.SecretList:
		return len(l.Items), nil
	case *corev1.ServiceList:
		return len(l.Items), nil
	case *corev1.PodList:
		return len(l.Items), nil
	}
	return 0, fmt.Errorf("unexpected list %T", list)
}

// conditions returns the namespace's conditions by type, with status, reason and message
// only, to compare with condition().
func conditions(ctx context.Context, g Gomega, name string) map[corev1.NamespaceConditionType]corev1.NamespaceCondition {
	ns := &corev1.Namespace{}
	g.Expect(env.Client.Get(ctx, types.NamespacedName{Name: name}, ns)).To(Succeed())
	out := map[corev1.NamespaceConditionType]corev1.NamespaceCondition{}
	for _, c := range ns.Status.Conditions {
		out[c.Type] = condition(c.Status, c.Reason, c.Message)
	}
	return out
}

func condition(status corev1.ConditionStatus, reason, message string) corev1.NamespaceCondition {
	return corev1.NamespaceCondition{Status: status, Reason: reason, Message: message}
}

func release(ctx context.Context, obj client.Object) {
	GinkgoHelper()
	patch := client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))
	Expect(env.Client.Patch(ctx, obj, patch)).To(Succeed())
}

// createConfigMaps creates n ConfigMaps through a client faster than the test's default.
func createConfigMaps(ctx context.Context, ns string, n int) {
	GinkgoHelper()
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = 1000, 1000
	fast, err := client.New(cfg, client.Options{Scheme: env.Client.Scheme()})
	Expect(err).NotTo(HaveOccurred())
	var wg sync.WaitGroup
	errs := make(chan error, n)
	next := make(chan int)
	for range 16 {
		wg.Go(func() {
			for i := range next {
				errs <- fast.Create(ctx, &corev1.ConfigMap{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%04d", i)},
					Data:       map[string]string{"index": fmt.Sprint(i)},
				})
			}
		})
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		Expect(err).NotTo(HaveOccurred())
	}
}

func newCronTab(ns, name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(cronTabGVK)
	u.SetNamespace(ns)
	u.SetName(name)
	_ = unstructured.SetNestedField(u.Object, "* * * * */5", "spec", "cronSpec")
	return u
}

func cronTabList() *unstructured.UnstructuredList {
	l := &unstructured.UnstructuredList{}
	l.SetGroupVersionKind(cronTabGVK.GroupVersion().WithKind("CronTabList"))
	return l
}

// installCronTabCRD creates a namespaced custom resource and waits until it is served.
func installCronTabCRD(ctx context.Context) {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "crontabs." + crdGroup},
		"spec": map[string]any{
			"group": crdGroup,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "crontabs", "singular": "crontab", "kind": "CronTab", "listKind": "CronTabList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
			}},
		},
	}}
	Expect(env.Client.Create(ctx, crd)).To(Succeed())
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(crd), crd)).To(Succeed())
		conds, _, _ := unstructured.NestedSlice(crd.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				established = true
			}
		}
		g.Expect(established).To(BeTrue())
		// Served: a list works.
		g.Expect(env.Client.List(ctx, cronTabList())).To(Succeed())
	}).Should(Succeed())
}
