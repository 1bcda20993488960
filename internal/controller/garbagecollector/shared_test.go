package garbagecollector

import (
	"fmt"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/cache"
)

// The kinds kcm's controllers keep whole in the shared cache are watched through it (one
// copy of each pod); the others through the collector's metadata informers.
func TestSharedObject(t *testing.T) {
	r := &Reconciler{shared: struct{ cache.Informers }{}, scheme: clientgoscheme.Scheme}
	tests := []struct {
		gvk  schema.GroupVersionKind
		want any // nil: a metadata informer
	}{
		{corev1.SchemeGroupVersion.WithKind("Pod"), &corev1.Pod{}},
		{appsv1.SchemeGroupVersion.WithKind("ReplicaSet"), &appsv1.ReplicaSet{}},
		{appsv1.SchemeGroupVersion.WithKind("Deployment"), &appsv1.Deployment{}},
		// Every node's heartbeat is a Lease update: watched twice, each cost the API server
		// and kcm twice.
		{corev1.SchemeGroupVersion.WithKind("Node"), &corev1.Node{}},
		{coordinationv1.SchemeGroupVersion.WithKind("Lease"), &coordinationv1.Lease{}},
		{corev1.SchemeGroupVersion.WithKind("ConfigMap"), nil},
		{corev1.SchemeGroupVersion.WithKind("Secret"), nil},
		{schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"}, nil},
	}
	for _, tt := range tests {
		obj, ok := r.sharedObject(tt.gvk)
		switch {
		case tt.want == nil && ok:
			t.Errorf("%s: watched through the shared cache (%T), want a metadata informer", tt.gvk, obj)
		case tt.want != nil && !ok:
			t.Errorf("%s: metadata informer, want the shared cache's", tt.gvk)
		case tt.want != nil && fmt.Sprintf("%T", obj) != fmt.Sprintf("%T", tt.want):
			t.Errorf("%s: object %T, want %T", tt.gvk, obj, tt.want)
		}
	}
	// Without a shared cache nothing is shared.
	if _, ok := (&Reconciler{scheme: clientgoscheme.Scheme}).sharedObject(corev1.SchemeGroupVersion.WithKind("Pod")); ok {
		t.Errorf("shared object without a shared cache")
	}
}
