package pod

import (
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// TestServicesToSync covers the reading of Services from the cache the library's pod
// projection is given: the projection itself is k8s.io/endpointslice's and tested there.
func TestServicesToSync(t *testing.T) {
	svc := func(ns, name string, selector map[string]string) *corev1.Service {
		return &corev1.Service{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}, Spec: corev1.ServiceSpec{Selector: selector}}
	}
	cl := fake.NewClientBuilder().WithObjects(
		svc("ns", "web", map[string]string{"app": "web"}),
		svc("ns", "db", map[string]string{"app": "db"}),
		svc("ns", "manual", nil), // a nil selector selects nothing
		svc("other", "web", map[string]string{"app": "web"}),
	).Build()
	pod := func(rv, app string, ready corev1.ConditionStatus) *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", ResourceVersion: rv, Labels: map[string]string{"app": app}},
			Status: corev1.PodStatus{PodIPs: []corev1.PodIP{{IP: "10.0.0.1"}},
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: ready}}},
		}
	}
	web := pod("1", "web", corev1.ConditionTrue)
	tests := map[string]struct {
		old, cur *corev1.Pod
		want     string
	}{
		"created":                   {nil, web, "[ns/web]"},
		"deleted":                   {web, nil, "[ns/web]"},
		"resync (same version)":     {web, pod("1", "web", corev1.ConditionFalse), "[]"},
		"irrelevant change":         {web, pod("2", "web", corev1.ConditionTrue), "[]"},
		"readiness changed":         {web, pod("2", "web", corev1.ConditionFalse), "[ns/web]"},
		"labels changed":            {web, pod("2", "db", corev1.ConditionTrue), "[ns/db ns/web]"},
		"labels and readiness":      {web, pod("2", "db", corev1.ConditionFalse), "[ns/db ns/web]"},
		"selected by none any more": {web, pod("2", "none", corev1.ConditionTrue), "[ns/web]"},
	}
	for name, tt := range tests {
		got, err := ServicesToSync(cl, tt.old, tt.cur)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if fmt.Sprint(got) != tt.want {
			t.Errorf("%s: %v, want %s", name, got, tt.want)
		}
	}
}
