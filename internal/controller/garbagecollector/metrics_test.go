package garbagecollector_test

import (
	"context"

	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/kcm/kcm/internal/testenv"
)

// syncErrors reads upstream's garbagecollector_controller_resources_sync_error_total, a
// counter without labels (its type and labels against upstream's: test/process's families
// test), from the registry kcm's /metrics serves.
func syncErrors() float64 {
	return testenv.Sample("garbagecollector_controller_resources_sync_error_total", nil)
}

// installUnlistableCRD creates a Gadget CRD served as v1, and a Gadget; then it adds v2,
// preferred, converted by a webhook no one serves: the collector's new watch of v2 can never
// list the stored Gadget, so it never syncs.
func installUnlistableCRD(ctx context.Context, ns string) *unstructured.Unstructured {
	version := func(name string, storage bool) map[string]any {
		return map[string]any{
			"name": name, "served": true, "storage": storage,
			"schema": map[string]any{"openAPIV3Schema": map[string]any{
				"type": "object", "x-kubernetes-preserve-unknown-fields": true,
			}},
		}
	}
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets." + widgetGroup},
		"spec": map[string]any{
			"group":    widgetGroup,
			"scope":    "Namespaced",
			"names":    map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{version("v1", true)},
		},
	}}
	Expect(env.Client.Create(ctx, crd)).To(Succeed())
	g := &unstructured.Unstructured{}
	g.SetAPIVersion(widgetGroup + "/v1")
	g.SetKind("Gadget")
	g.SetNamespace(ns)
	g.SetName("unlistable")
	Eventually(func() error { return env.Client.Create(ctx, g.DeepCopy()) }).Should(Succeed())

	Eventually(func(gm Gomega) {
		cur := current(gm, crd)
		gm.Expect(unstructured.SetNestedSlice(cur.Object, []any{version("v1", true), version("v2", false)}, "spec", "versions")).To(Succeed())
		gm.Expect(unstructured.SetNestedMap(cur.Object, map[string]any{
			"strategy": "Webhook",
			"webhook": map[string]any{
				"conversionReviewVersions": []any{"v1"},
				"clientConfig": map[string]any{"service": map[string]any{
					"namespace": "default", "name": "nowhere", "path": "/convert",
				}},
			},
		}, "spec", "conversion")).To(Succeed())
		gm.Expect(env.Client.Update(ctx, cur)).To(Succeed())
	}).Should(Succeed())
	return crd
}
