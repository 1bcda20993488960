//go:build e2e && linux

package e2e_test

import (
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// StorageVersionMigrations (issue 19's storage-version-migrator-controller, as its own
// ServiceAccount under kubeadm's identity): a custom resource whose storage version moved
// from v1 to v2 is migrated, every object stored again, and the CRD keeps only v2 as a stored
// version.
var _ = Describe("StorageVersionMigrations", func() {
	It("migrate a custom resource to its new storage version and drop the old stored version", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		group, plural, kind := ns+".svm.kcm.test", "gadgets", "Gadget"
		crdGVK := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
		crdName := plural + "." + group
		version := func(name string, storage bool) map[string]any {
			return map[string]any{"name": name, "served": true, "storage": storage,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}
		}
		crd := &unstructured.Unstructured{Object: map[string]any{
			"metadata": map[string]any{"name": crdName},
			"spec": map[string]any{
				"group": group, "scope": "Namespaced",
				"names":    map[string]any{"plural": plural, "singular": "gadget", "kind": kind, "listKind": kind + "List"},
				"versions": []any{version("v1", true), version("v2", false)},
			},
		}}
		crd.SetGroupVersionKind(crdGVK)
		Expect(cl.Create(ctx, crd)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, crd))).To(Succeed()) })
		getCRD := func(g Gomega) *unstructured.Unstructured {
			u := &unstructured.Unstructured{}
			u.SetGroupVersionKind(crdGVK)
			g.Expect(cl.Get(ctx, client.ObjectKey{Name: crdName}, u)).To(Succeed())
			return u
		}

		By("objects stored as v1")
		before := map[string]string{}
		for i := range 20 {
			obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"n": int64(i)}}}
			obj.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind})
			obj.SetNamespace(ns)
			obj.SetName(fmt.Sprintf("g-%d", i))
			// The CRD is established once its objects can be created.
			Eventually(ctx, func() error { return cl.Create(ctx, obj) }).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
			before[obj.GetName()] = obj.GetResourceVersion()
		}

		By("v2 made the storage version: stored versions v1 and v2")
		Eventually(ctx, func(g Gomega) {
			u := getCRD(g)
			versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
			versions[0].(map[string]any)["storage"] = false
			versions[1].(map[string]any)["storage"] = true
			g.Expect(unstructured.SetNestedSlice(u.Object, versions, "spec", "versions")).To(Succeed())
			g.Expect(cl.Update(ctx, u)).To(Succeed())
		}).WithTimeout(10 * time.Second).Should(Succeed())
		stored, _, _ := unstructured.NestedStringSlice(getCRD(Default).Object, "status", "storedVersions")
		Expect(stored).To(ConsistOf("v1", "v2"))

		By("a StorageVersionMigration of the resource succeeds")
		svm := &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{Name: ns},
			Spec: svmv1.StorageVersionMigrationSpec{Resource: metav1.GroupResource{Group: group, Resource: plural}}}
		Expect(cl.Create(ctx, svm)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, svm))).To(Succeed()) })
		Eventually(ctx, func(g Gomega) {
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(svm), svm)).To(Succeed())
			succeeded := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationSucceeded))
			g.Expect(succeeded).NotTo(BeNil(), "conditions %v", svm.Status.Conditions)
			g.Expect(succeeded.Status).To(Equal(metav1.ConditionTrue))
			g.Expect(succeeded.Reason).To(Equal("StorageVersionMigrationSucceeded"))
			running := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationRunning))
			g.Expect(running).NotTo(BeNil())
			g.Expect(running.Status).To(Equal(metav1.ConditionFalse))
			g.Expect(running.Reason).To(Equal("MigrationCompleted"))
		}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		Expect(meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed))).To(BeNil())

		By("every object rewritten, and v2 the only stored version")
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: group, Version: "v2", Kind: kind + "List"})
		Expect(cl.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(len(before)))
		for _, obj := range list.Items {
			Expect(obj.GetResourceVersion()).NotTo(Equal(before[obj.GetName()]), "%s not rewritten", obj.GetName())
		}
		Eventually(ctx, func(g Gomega) {
			stored, _, _ := unstructured.NestedStringSlice(getCRD(g).Object, "status", "storedVersions")
			g.Expect(stored).To(Equal([]string{"v2"}))
		}).WithTimeout(30 * time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
	})
})
