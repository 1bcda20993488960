package garbagecollector_test

import (
	"context"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/component-base/metrics/legacyregistry"
)

// syncErrors reads upstream's garbagecollector_controller_resources_sync_error_total, a
// counter without labels, from the registry kcm's /metrics serves.
func syncErrors(g Gomega) float64 {
	families, err := legacyregistry.DefaultGatherer.Gather()
	g.Expect(err).NotTo(HaveOccurred())
	for _, f := range families {
		if f.GetName() == "garbagecollector_controller_resources_sync_error_total" {
			g.Expect(f.GetType()).To(Equal(dto.MetricType_COUNTER))
			g.Expect(f.GetMetric()).To(HaveLen(1))
			g.Expect(f.GetMetric()[0].GetLabel()).To(BeEmpty())
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	g.Expect("registered").To(Equal("not registered"), "no garbagecollector_controller_resources_sync_error_total")
	return 0
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
