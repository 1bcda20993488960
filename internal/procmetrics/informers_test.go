package procmetrics

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
)

// The identity of each informer: upstream's generated informers' group, version and naive
// plural; none for metadata-only and unstructured informers, which upstream leaves unnamed.
func TestInformerResource(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	n := NewInformerNames(scheme)
	defer n.Release()
	for _, c := range []struct {
		obj  runtime.Object
		want schema.GroupVersionResource
		ok   bool
	}{
		{&corev1.Pod{}, schema.GroupVersionResource{Version: "v1", Resource: "pods"}, true},
		{&corev1.Endpoints{}, schema.GroupVersionResource{Version: "v1", Resource: "endpointss"}, true},
		{&networkingv1.IngressClass{}, schema.GroupVersionResource{Group: "networking.k8s.io", Version: "v1", Resource: "ingressclasss"}, true},
		{&metav1.PartialObjectMetadata{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}}, schema.GroupVersionResource{}, false},
		{&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "Pod"}}, schema.GroupVersionResource{}, false},
	} {
		got, ok := n.resource(c.obj)
		if got != c.want || ok != c.ok {
			t.Errorf("%T: %v %v, want %v %v", c.obj, got, ok, c.want, c.ok)
		}
	}
}

// One holder of upstream's name at a time; a second cache's informers go unnamed until the
// first gives it back.
func TestInformerNamesRelease(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	first := NewInformerNames(scheme)
	if _, ok := first.resource(&corev1.Pod{}); !ok {
		t.Fatal("the first holder has no name")
	}
	second := NewInformerNames(scheme)
	if _, ok := second.resource(&corev1.Pod{}); ok {
		t.Error("a second holder got the name while the first held it")
	}
	second.Release()
	first.Release()
	third := NewInformerNames(scheme)
	defer third.Release()
	if _, ok := third.resource(&corev1.Pod{}); !ok {
		t.Error("the name was not given back")
	}
}
