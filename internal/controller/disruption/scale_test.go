package disruption

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestControllerScaleFromCache(t *testing.T) {
	meta := func(name string, uid types.UID) metav1.ObjectMeta {
		return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: uid}
	}
	dep := &appsv1.Deployment{ObjectMeta: meta("dep", "dep-uid"), Spec: appsv1.DeploymentSpec{Replicas: new(int32(7))}}
	depRS := &appsv1.ReplicaSet{ObjectMeta: meta("dep-rs", "dep-rs-uid"), Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(2))}}
	depRS.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(dep, appsv1.SchemeGroupVersion.WithKind("Deployment"))}
	rs := &appsv1.ReplicaSet{ObjectMeta: meta("rs", "rs-uid"), Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(3))}}
	rc := &corev1.ReplicationController{ObjectMeta: meta("rc", "rc-uid"), Spec: corev1.ReplicationControllerSpec{Replicas: new(int32(4))}}
	ss := &appsv1.StatefulSet{ObjectMeta: meta("ss", "ss-uid"), Spec: appsv1.StatefulSetSpec{Replicas: new(int32(5))}}
	r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(dep, depRS, rs, rc, ss).Build()}

	ref := func(gv schema.GroupVersion, kind, name string, uid types.UID) *metav1.OwnerReference {
		return &metav1.OwnerReference{APIVersion: gv.String(), Kind: kind, Name: name, UID: uid, Controller: new(true)}
	}
	apps, ext, core := appsv1.SchemeGroupVersion, schema.GroupVersion{Group: "extensions", Version: "v1beta1"}, corev1.SchemeGroupVersion
	cases := []struct {
		name  string
		ref   *metav1.OwnerReference
		uid   types.UID
		scale int32
	}{
		{"ReplicationController", ref(core, "ReplicationController", "rc", "rc-uid"), "rc-uid", 4},
		{"ReplicaSet of a Deployment counts the Deployment", ref(apps, "ReplicaSet", "dep-rs", "dep-rs-uid"), "dep-uid", 7},
		{"ReplicaSet", ref(apps, "ReplicaSet", "rs", "rs-uid"), "rs-uid", 3},
		{"extensions ReplicaSet", ref(ext, "ReplicaSet", "rs", "rs-uid"), "rs-uid", 3},
		{"StatefulSet", ref(apps, "StatefulSet", "ss", "ss-uid"), "ss-uid", 5},
	}
	for _, tc := range cases {
		uid, scale, found, err := r.controllerScale(context.Background(), tc.ref, "ns")
		if err != nil || !found || uid != tc.uid || scale != tc.scale {
			t.Errorf("%s: uid, scale, found, err = %q, %d, %v, %v; want %q, %d", tc.name, uid, scale, found, err, tc.uid, tc.scale)
		}
	}

	// A kind no REST mapping knows is an error (upstream's SyncFailed), not "no controller".
	if _, _, _, err := r.controllerScale(context.Background(), ref(schema.GroupVersion{Group: "example.com", Version: "v1"}, "Widget", "w", "w-uid"), "ns"); err == nil {
		t.Error("unknown kind: no error")
	}
}
