package storageversionmigrator_test

import (
	"context"
	"fmt"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/storageversionmigrator"
	"github.com/kcm/kcm/internal/testenv"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// twoVersionCRD is a namespaced custom resource served at v1 and v2 with identical schemas
// (no conversion webhook needed), stored as v1.
func twoVersionCRD(group, plural, kind string) *unstructured.Unstructured {
	version := func(name string, storage bool) map[string]any {
		return map[string]any{
			"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		}
	}
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": plural + "." + group},
		"spec": map[string]any{
			"group":    group,
			"scope":    "Namespaced",
			"names":    map[string]any{"plural": plural, "singular": strings.ToLower(kind), "kind": kind, "listKind": kind + "List"},
			"versions": []any{version("v1", true), version("v2", false)},
		},
	}}
	u.SetGroupVersionKind(crdGVK)
	return u
}

func getCRD(ctx context.Context, name string) *unstructured.Unstructured {
	GinkgoHelper()
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(crdGVK)
	Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, u)).To(Succeed())
	return u
}

func storedVersions(u *unstructured.Unstructured) []string {
	v, _, _ := unstructured.NestedStringSlice(u.Object, "status", "storedVersions")
	return v
}

func crdCondition(u *unstructured.Unstructured, t string) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conds {
		if m, _ := c.(map[string]any); m["type"] == t {
			return m
		}
	}
	return nil
}

func createMigration(ctx context.Context, gr metav1.GroupResource) *svmv1.StorageVersionMigration {
	GinkgoHelper()
	svm := &svmv1.StorageVersionMigration{ObjectMeta: metav1.ObjectMeta{GenerateName: "migrate-"},
		Spec: svmv1.StorageVersionMigrationSpec{Resource: gr}}
	Expect(env.Client.Create(ctx, svm)).To(Succeed())
	return svm
}

// finished waits until the migration has succeeded or failed and its Running condition has
// been closed, and returns it.
func finished(ctx context.Context, name string) *svmv1.StorageVersionMigration {
	GinkgoHelper()
	svm := &svmv1.StorageVersionMigration{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, svm)).To(Succeed())
		g.Expect(meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded)) ||
			meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationFailed))).To(BeTrue(), "conditions %v", svm.Status.Conditions)
		g.Expect(meta.IsStatusConditionFalse(svm.Status.Conditions, string(svmv1.MigrationRunning))).To(BeTrue(), "conditions %v", svm.Status.Conditions)
	}).Should(Succeed())
	return svm
}

var _ = Describe("storage-version-migrator-controller", func() {
	It("rewrites every object of a custom resource after its storage version changed, then keeps only that stored version", func(ctx SpecContext) {
		const group, plural, kind = "svm.kcm.test", "widgets", "Widget"
		crd := twoVersionCRD(group, plural, kind)
		Expect(env.Client.Create(ctx, crd)).To(Succeed())
		ns := env.Namespace(ctx, "svm-crd")
		gvk := schema.GroupVersionKind{Group: group, Version: "v1", Kind: kind}
		// The CRD is established once an object can be created.
		before := map[string]string{}
		for i := range 5 {
			obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"size": int64(i)}}}
			obj.SetGroupVersionKind(gvk)
			obj.SetNamespace(ns)
			obj.SetName(fmt.Sprintf("w-%d", i))
			Eventually(func() error { return env.Client.Create(ctx, obj) }).Should(Succeed())
			before[obj.GetName()] = obj.GetResourceVersion()
		}

		// The storage version moves to v2: the objects are still stored as v1.
		Eventually(func() error {
			crd := getCRD(ctx, plural+"."+group)
			versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
			versions[0].(map[string]any)["storage"] = false
			versions[1].(map[string]any)["storage"] = true
			Expect(unstructured.SetNestedSlice(crd.Object, versions, "spec", "versions")).To(Succeed())
			return env.Client.Update(ctx, crd)
		}).Should(Succeed())
		Expect(storedVersions(getCRD(ctx, plural+"."+group))).To(ConsistOf("v1", "v2"))

		svm := finished(ctx, createMigration(ctx, metav1.GroupResource{Group: group, Resource: plural}).Name)

		succeeded := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationSucceeded))
		Expect(succeeded).NotTo(BeNil())
		Expect(succeeded.Reason).To(Equal("StorageVersionMigrationSucceeded"))
		Expect(succeeded.Message).To(Equal("Migration completed"))
		running := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationRunning))
		Expect(running.Reason).To(Equal("MigrationCompleted"))
		Expect(running.Message).To(Equal("Migration completed"))
		Expect(meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed))).To(BeNil())
		Expect(svm.Status.ResourceVersion).NotTo(BeEmpty())

		// Every object was rewritten (stored again, as v2): its resource version changed.
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(gvk.GroupVersion().WithKind(kind + "List"))
		Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		Expect(list.Items).To(HaveLen(len(before)))
		for _, obj := range list.Items {
			Expect(obj.GetResourceVersion()).NotTo(Equal(before[obj.GetName()]), "object %s not rewritten", obj.GetName())
		}

		// The CRD's stored versions are the storage version alone, and its StorageMigrating
		// condition tells.
		Eventually(func(g Gomega) {
			crd := getCRD(ctx, plural+"."+group)
			g.Expect(storedVersions(crd)).To(Equal([]string{"v2"}))
			cond := crdCondition(crd, "StorageMigrating")
			g.Expect(cond).NotTo(BeNil())
			g.Expect(cond["status"]).To(Equal("False"))
			g.Expect(cond["reason"]).To(Equal("MigrationSucceeded"))
			g.Expect(cond["message"]).To(Equal("The migration has succeeded and the stored versions have been updated"))
		}).Should(Succeed())
	})

	It("migrates a built-in resource, which has no CustomResourceDefinition", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "svm-cm")
		for i := range 3 {
			Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("cm-%d", i)},
				Data: map[string]string{"k": "v"}})).To(Succeed())
		}
		svm := finished(ctx, createMigration(ctx, metav1.GroupResource{Resource: "configmaps"}).Name)
		Expect(meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded))).To(BeTrue(), "conditions %v", svm.Status.Conditions)
		Expect(svm.Status.ResourceVersion).NotTo(BeEmpty())
	})

	It("reports its work queues under upstream's names", func(ctx SpecContext) {
		// upstream's storageversionmigrator.go:93 (the migration controller's queue),
		// resourceversion.go:89 and migrationrunner.go:81 (both resource-version-controller).
		adds := func(name string) float64 {
			return testenv.Sample("workqueue_adds_total", map[string]string{"name": name})
		}
		migrations, resourceVersions := adds(storageversionmigrator.ControllerName), adds("resource-version-controller")
		finished(ctx, createMigration(ctx, metav1.GroupResource{Resource: "secrets"}).Name)
		Expect(storageversionmigrator.ControllerName).To(Equal("storage-version-migrator-controller"))
		Expect(adds(storageversionmigrator.ControllerName)).To(BeNumerically(">", migrations))
		Expect(adds("resource-version-controller")).To(BeNumerically(">", resourceVersions))
	})

	It("fails the migration of a resource that cannot be listed, patched and updated", func(ctx SpecContext) {
		// TokenReviews can only be created.
		svm := finished(ctx, createMigration(ctx, metav1.GroupResource{Group: "authentication.k8s.io", Resource: "tokenreviews"}).Name)
		failed := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed))
		Expect(failed).NotTo(BeNil())
		Expect(failed.Reason).To(Equal("StorageVersionMigrationFailed"))
		Expect(failed.Message).To(Equal(`resource "authentication.k8s.io/v1, Resource=tokenreviews" does not support discovery operations: [update patch list]`))
		Expect(svm.Status.ResourceVersion).To(BeEmpty())
	})

	It("refuses to start without the garbage collector, as upstream's constructor", func() {
		// A second manager, never started: its Setup fails.
		err := env.StartManager([]string{storageversionmigrator.ControllerName}, "--enable-garbage-collector=false")
		Expect(err).To(MatchError(ContainSubstring("setting up storage-version-migrator-controller: storage version migrator requires garbage collector")))
	})

	It("fails the migration of a resource that does not exist, once discovery has had a minute to find it", func(ctx SpecContext) {
		svm := createMigration(ctx, metav1.GroupResource{Group: "nothing.kcm.test", Resource: "ghosts"})
		// Within the minute the migration is only Running, retried.
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svm), svm)).To(Succeed())
			g.Expect(meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationRunning))).To(BeTrue())
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(svm), svm)).To(Succeed())
			g.Expect(meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed))).To(BeNil())
		}).Should(Succeed())

		clock.Set(2 * time.Minute)
		DeferCleanup(clock.Set, time.Duration(0))
		svm = finished(ctx, svm.Name)
		failed := meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationFailed))
		Expect(failed).NotTo(BeNil())
		Expect(failed.Status).To(Equal(metav1.ConditionTrue))
		Expect(failed.Reason).To(Equal("StorageVersionMigrationFailed"))
		Expect(failed.Message).To(Equal("resource does not exist in discovery"))
		Expect(svm.Status.ResourceVersion).To(BeEmpty())
		Expect(meta.FindStatusCondition(svm.Status.Conditions, string(svmv1.MigrationSucceeded))).To(BeNil())
	})
})
