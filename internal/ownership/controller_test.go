package ownership

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	apitypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestController(t *testing.T) {
	scheme := runtime.NewScheme()
	_ = appsv1.AddToScheme(scheme)
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-1"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(rs).Build()
	rsGVK := appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	pod := func(refs ...metav1.OwnerReference) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", OwnerReferences: refs}}
	}
	ref := func(apiVersion, kind, name, uid string, controller bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: apitypes.UID(uid), Controller: ptr.To(controller)}
	}
	tests := map[string]struct {
		pod  *corev1.Pod
		want bool
	}{
		"controlled":                {pod(ref("apps/v1", "ReplicaSet", "web", "rs-1", true)), true},
		"another API version":       {pod(ref("apps/v1beta2", "ReplicaSet", "web", "rs-1", true)), true},
		"owner, not controller":     {pod(ref("apps/v1", "ReplicaSet", "web", "rs-1", false)), false},
		"another group":             {pod(ref("extensions.example/v1", "ReplicaSet", "web", "rs-1", true)), false},
		"another kind":              {pod(ref("apps/v1", "StatefulSet", "web", "rs-1", true)), false},
		"recreated under that name": {pod(ref("apps/v1", "ReplicaSet", "web", "rs-0", true)), false},
		"gone":                      {pod(ref("apps/v1", "ReplicaSet", "api", "rs-1", true)), false},
		"orphan":                    {pod(), false},
	}
	for name, tt := range tests {
		got, ok := Controller(context.Background(), c, tt.pod, rsGVK, &appsv1.ReplicaSet{})
		if ok != tt.want || (ok && got.Name != "web") {
			t.Errorf("%s: Controller = %s, %v; want %v", name, got.Name, ok, tt.want)
		}
	}
	if _, ok := Controller(context.Background(), c, pod(ref("batch/v1", "Job", "web", "rs-1", true)), batchv1.SchemeGroupVersion.WithKind("Job"), &batchv1.Job{}); ok {
		t.Errorf("a Job the client cannot read is no controller")
	}
}
