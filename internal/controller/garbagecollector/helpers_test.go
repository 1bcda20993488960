package garbagecollector_test

import (
	"context"
	"fmt"
	"slices"

	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// holdFinalizer keeps a deleted object readable until the spec lets it go.
const holdFinalizer = "kcm.test/hold"

// refTo is an owner reference to obj; block sets blockOwnerDeletion.
func refTo(obj client.Object, block bool) metav1.OwnerReference {
	gvk, err := apiutil.GVKForObject(obj, env.Client.Scheme())
	Expect(err).NotTo(HaveOccurred())
	ref := metav1.OwnerReference{APIVersion: gvk.GroupVersion().String(), Kind: gvk.Kind, Name: obj.GetName(), UID: obj.GetUID()}
	if block {
		ref.BlockOwnerDeletion = ptr.To(true)
	}
	return ref
}

// configMap creates a ConfigMap with the given owners.
func configMap(ctx context.Context, ns, name string, owners ...metav1.OwnerReference) *corev1.ConfigMap {
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners}}
	Expect(env.Client.Create(ctx, cm)).To(Succeed())
	return cm
}

// exists reads obj's current state into a copy; false when it is gone (or replaced).
func exists(g Gomega, obj client.Object) bool {
	cur := obj.DeepCopyObject().(client.Object)
	err := env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur)
	if apierrors.IsNotFound(err) {
		return false
	}
	g.Expect(err).NotTo(HaveOccurred())
	return cur.GetUID() == obj.GetUID()
}

// current reads obj's current state; it must exist.
func current[T client.Object](g Gomega, obj T) T {
	cur := obj.DeepCopyObject().(T)
	g.Expect(env.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), cur)).To(Succeed())
	return cur
}

func ownerUIDs(obj client.Object) []types.UID {
	var out []types.UID
	for _, ref := range obj.GetOwnerReferences() {
		out = append(out, ref.UID)
	}
	return out
}

// release removes holdFinalizer from obj.
func release(ctx context.Context, obj client.Object) {
	Eventually(func(g Gomega) {
		cur := current(g, obj)
		orig := cur.DeepCopyObject().(client.Object)
		cur.SetFinalizers(slices.DeleteFunc(cur.GetFinalizers(), func(f string) bool { return f == holdFinalizer }))
		g.Expect(env.Client.Patch(ctx, cur, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	}).Should(Succeed())
}

// hold adds holdFinalizer to obj.
func hold(ctx context.Context, obj client.Object) {
	Eventually(func(g Gomega) {
		cur := current(g, obj)
		orig := cur.DeepCopyObject().(client.Object)
		cur.SetFinalizers(append(cur.GetFinalizers(), holdFinalizer))
		g.Expect(env.Client.Patch(ctx, cur, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{}))).To(Succeed())
	}).Should(Succeed())
}

func deployment(ns, name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
			},
		},
	}
}

func pod(ns, name string, owners ...metav1.OwnerReference) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, OwnerReferences: owners},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
}

func listPods(g Gomega, ns string) []corev1.Pod {
	list := &corev1.PodList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

func listReplicaSets(g Gomega, ns string) []appsv1.ReplicaSet {
	list := &appsv1.ReplicaSetList{}
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	return list.Items
}

// Custom resources: a namespaced Widget of group gc.kcm.test.
const widgetGroup = "gc.kcm.test"

// installWidgetCRD creates the Widget CRD and waits until it is established.
func installWidgetCRD(ctx context.Context) *unstructured.Unstructured {
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets." + widgetGroup},
		"spec": map[string]any{
			"group": widgetGroup,
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
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
		cur := current(g, crd)
		conds, _, _ := unstructured.NestedSlice(cur.Object, "status", "conditions")
		established := false
		for _, c := range conds {
			m, _ := c.(map[string]any)
			if m["type"] == "Established" && m["status"] == "True" {
				established = true
			}
		}
		g.Expect(established).To(BeTrue(), "CRD not established")
	}).Should(Succeed())
	return crd
}

// widget creates a Widget with the given owners; the API server may take a moment to serve
// a just-established kind.
func widget(ctx context.Context, ns, name string, owners ...metav1.OwnerReference) *unstructured.Unstructured {
	w := &unstructured.Unstructured{}
	w.SetAPIVersion(widgetGroup + "/v1")
	w.SetKind("Widget")
	w.SetNamespace(ns)
	w.SetName(name)
	w.SetOwnerReferences(owners)
	Eventually(func() error { return env.Client.Create(ctx, w.DeepCopy()) }).Should(Succeed())
	Eventually(func(g Gomega) { w = current(g, w) }).Should(Succeed())
	return w
}

// eventsFor lists the events.k8s.io Events of namespace ns regarding the named object with
// the given reason, as "reason: note".
func eventsFor(g Gomega, ns, name, reason string) []string {
	list := &unstructured.UnstructuredList{}
	list.SetAPIVersion("events.k8s.io/v1")
	list.SetKind("EventList")
	g.Expect(env.Client.List(context.Background(), list, client.InNamespace(ns))).To(Succeed())
	var out []string
	for _, e := range list.Items {
		r, _, _ := unstructured.NestedString(e.Object, "reason")
		n, _, _ := unstructured.NestedString(e.Object, "regarding", "name")
		note, _, _ := unstructured.NestedString(e.Object, "note")
		if r == reason && n == name {
			out = append(out, fmt.Sprintf("%s: %s", r, note))
		}
	}
	return out
}
