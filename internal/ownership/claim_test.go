package ownership

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// Claim is given the cache's own objects (listed without copies): what it adopts or
// releases it patches as a copy, never the object it was given.
func TestClaimLeavesTheGivenObjectsAlone(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = appsv1.AddToScheme(scheme)
	_ = corev1.AddToScheme(scheme)
	gvk := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-1"}}
	ref := *metav1.NewControllerRef(rs, gvk)
	pod := func(name string, lbls map[string]string, refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID("uid-" + name), Labels: lbls, OwnerReferences: refs}}
	}
	kept := pod("kept", map[string]string{"app": "web"}, ref)
	orphan := pod("orphan", map[string]string{"app": "web"})
	relabelled := pod("relabelled", map[string]string{"app": "other"}, ref)
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rs, kept.DeepCopy(), orphan.DeepCopy(), relabelled.DeepCopy()).Build()
	claimer := &Claimer{Client: c, Fresh: c, Owner: rs, OwnerGVK: gvk, Selector: labels.SelectorFromSet(labels.Set{"app": "web"})}

	claimed, err := Claim(context.Background(), claimer, []*corev1.Pod{kept, orphan, relabelled})
	if err != nil {
		t.Fatal(err)
	}
	if len(claimed) != 2 || claimed[0] != kept || claimed[1].Name != "orphan" {
		t.Fatalf("claimed %v, want kept (the given object) and the adopted orphan", claimed)
	}
	if got := metav1.GetControllerOf(claimed[1]); got == nil || got.UID != rs.UID {
		t.Errorf("the adopted orphan is returned without its new controller: %v", claimed[1].OwnerReferences)
	}
	if len(orphan.OwnerReferences) != 0 {
		t.Errorf("the given orphan was changed: %v", orphan.OwnerReferences)
	}
	if len(relabelled.OwnerReferences) != 1 {
		t.Errorf("the given released pod was changed: %v", relabelled.OwnerReferences)
	}
	live := &corev1.Pod{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(relabelled), live); err != nil {
		t.Fatal(err)
	}
	if len(live.OwnerReferences) != 0 {
		t.Errorf("the relabelled pod was not released: %v", live.OwnerReferences)
	}
}
