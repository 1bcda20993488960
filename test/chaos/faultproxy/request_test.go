package faultproxy

import (
	"net/http/httptest"
	"testing"
)

func TestVerbOf(t *testing.T) {
	for _, c := range []struct {
		method, target, want string
	}{
		{"GET", "/api/v1/pods", VerbList},
		{"GET", "/api/v1/namespaces", VerbList},
		{"GET", "/api/v1/namespaces/default", VerbGet},
		{"GET", "/api/v1/namespaces/default/pods", VerbList},
		{"GET", "/api/v1/namespaces/default/pods/p", VerbGet},
		{"GET", "/api/v1/namespaces/default/pods/p/status", VerbGet},
		{"GET", "/api/v1/nodes/n/status", VerbGet},
		{"GET", "/apis/apps/v1/deployments", VerbList},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments", VerbList},
		{"GET", "/apis/apps/v1/namespaces/ns/deployments/d", VerbGet},
		{"GET", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases?watch=true", VerbWatch},
		{"GET", "/api/v1/pods?watch=1&resourceVersion=5", VerbWatch},
		{"GET", "/api/v1/pods?watch=false", VerbList},
		{"GET", "/api/v1/watch/namespaces/ns/pods", VerbWatch},
		{"GET", "/apis/apps/v1", VerbGet},
		{"GET", "/api", VerbGet},
		{"GET", "/healthz", VerbGet},
		{"POST", "/api/v1/namespaces/ns/pods", VerbPost},
		{"PUT", "/apis/coordination.k8s.io/v1/namespaces/kube-system/leases/kube-controller-manager", VerbPut},
		{"PATCH", "/api/v1/nodes/n/status", VerbPatch},
		{"DELETE", "/api/v1/namespaces/ns/pods/p", VerbDelete},
	} {
		if got := verbOf(httptest.NewRequest(c.method, c.target, nil)); got != c.want {
			t.Errorf("%s %s: %s, want %s", c.method, c.target, got, c.want)
		}
	}
}
