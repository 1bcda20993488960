package garbagecollector

import (
	"errors"
	"maps"
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestDeletableResources(t *testing.T) {
	all := []string{"create", "delete", "get", "list", "patch", "update", "watch"}
	preferred := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Kind: "Pod", Namespaced: true, Verbs: all},
			{Name: "pods/status", Kind: "Pod", Namespaced: true, Verbs: []string{"get", "patch", "update"}},
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: all},
			{Name: "bindings", Kind: "Binding", Namespaced: true, Verbs: []string{"create"}},
			{Name: "componentstatuses", Kind: "ComponentStatus", Verbs: []string{"get", "list"}},
		}},
		{GroupVersion: "events.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "events", Kind: "Event", Namespaced: true, Verbs: all},
		}},
		{GroupVersion: "example.com/v1", APIResources: []metav1.APIResource{
			{Name: "widgets", Kind: "Widget", Namespaced: true, Verbs: all},
			// A resource may say it serves another group/version's kind.
			{Name: "gadgets", Kind: "Gadget", Group: "other.example.com", Version: "v2", Verbs: all},
		}},
		{GroupVersion: "authorization.k8s.io/v1", APIResources: []metav1.APIResource{
			{Name: "subjectaccessreviews", Kind: "SubjectAccessReview", Verbs: []string{"create"}},
		}},
	}
	got := deletableResources(preferred, DefaultIgnoredResources())
	want := map[schema.GroupVersionResource]schema.GroupVersionKind{
		{Version: "v1", Resource: "pods"}:                          {Version: "v1", Kind: "Pod"},
		{Group: "example.com", Version: "v1", Resource: "widgets"}: {Group: "example.com", Version: "v1", Kind: "Widget"},
		{Group: "example.com", Version: "v1", Resource: "gadgets"}: {Group: "other.example.com", Version: "v2", Kind: "Gadget"},
	}
	if !maps.Equal(got, want) {
		t.Errorf("deletable resources =\n %v\nwant\n %v", got, want)
	}
}

func TestResourceChanges(t *testing.T) {
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	cms := schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}
	widgets := schema.GroupVersionResource{Group: "example.com", Version: "v1", Resource: "widgets"}
	podKind := schema.GroupVersionKind{Version: "v1", Kind: "Pod"}
	watched := map[schema.GroupVersionResource]schema.GroupVersionKind{
		pods: podKind,
		cms:  {Version: "v1", Kind: "ConfigMap"},
	}
	wanted := map[schema.GroupVersionResource]schema.GroupVersionKind{
		pods:    podKind,
		widgets: {Group: "example.com", Version: "v1", Kind: "Widget"},
	}
	add, remove := resourceChanges(watched, wanted)
	if !slices.Equal(add, []schema.GroupVersionResource{widgets}) || !slices.Equal(remove, []schema.GroupVersionResource{cms}) {
		t.Errorf("add %v remove %v; want add [widgets] remove [configmaps]", add, remove)
	}
	if add, remove := resourceChanges(wanted, wanted); len(add)+len(remove) != 0 {
		t.Errorf("no change: add %v remove %v", add, remove)
	}
}

func TestKeepFailedGroups(t *testing.T) {
	metrics := schema.GroupVersionResource{Group: "metrics.example.com", Version: "v1", Resource: "things"}
	gone := schema.GroupVersionResource{Group: "gone.example.com", Version: "v1", Resource: "olds"}
	pods := schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	watched := map[schema.GroupVersionResource]schema.GroupVersionKind{
		metrics: {Group: "metrics.example.com", Version: "v1", Kind: "Thing"},
		gone:    {Group: "gone.example.com", Version: "v1", Kind: "Old"},
		pods:    {Version: "v1", Kind: "Pod"},
	}
	found := map[schema.GroupVersionResource]schema.GroupVersionKind{pods: {Version: "v1", Kind: "Pod"}}
	keepFailedGroups(found, watched, map[schema.GroupVersion]error{metrics.GroupVersion(): errors.New("503")})
	if _, ok := found[metrics]; !ok {
		t.Error("the watch of a group discovery failed to list was dropped")
	}
	if _, ok := found[gone]; ok {
		t.Error("a group discovery listed without the resource kept it")
	}
}
