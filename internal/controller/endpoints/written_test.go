package endpoints

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/tools/events"
	endpointsliceutil "k8s.io/endpointslice/util"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// TestSyncFromOwnWrite: a sync that reads the cache before it shows the controller's own
// last write (staleness.Writes) neither creates the Endpoints again nor writes it again from
// the version it replaced.
func TestSyncFromOwnWrite(t *testing.T) {
	ctx := context.Background()
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"},
		Spec: corev1.ServiceSpec{Selector: map[string]string{"app": "web"}, ClusterIP: "10.0.0.1",
			Ports: []corev1.ServicePort{{Name: "http", Port: 80, TargetPort: intstr.FromInt32(8080), Protocol: corev1.ProtocolTCP}}},
	}
	// lagged is what the cache shows of the Endpoints while it lags: nil for nothing yet.
	var lagged *corev1.Endpoints
	lagging := false
	writes := map[string]int{}
	c := fake.NewClientBuilder().WithObjects(svc).WithInterceptorFuncs(interceptor.Funcs{
		Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
			if ep, ok := obj.(*corev1.Endpoints); ok && lagging {
				if lagged == nil {
					return apierrors.NewNotFound(schema.GroupResource{Resource: "endpoints"}, key.Name)
				}
				lagged.DeepCopyInto(ep)
				return nil
			}
			return c.Get(ctx, key, obj, opts...)
		},
		Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
			writes["create"]++
			return c.Create(ctx, obj, opts...)
		},
		Update: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.UpdateOption) error {
			writes["update"]++
			return c.Update(ctx, obj, opts...)
		},
	}).Build()
	r := &Reconciler{Client: c, Recorder: events.NewFakeRecorder(10), triggers: endpointsliceutil.NewTriggerTimeTracker()}
	sync := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(svc)}); err != nil {
			t.Fatal(err)
		}
	}

	sync()
	lagging = true // the cache has not shown the creation yet
	sync()
	if writes["create"] != 1 || writes["update"] != 0 {
		t.Fatalf("the cache behind the creation: %v, want one create", writes)
	}

	lagging = false
	before := &corev1.Endpoints{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(svc), before); err != nil {
		t.Fatal(err)
	}
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{NodeName: "node"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, PodIP: "10.1.0.1", PodIPs: []corev1.PodIP{{IP: "10.1.0.1"}},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}},
	}
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	sync()
	lagged, lagging = before, true // the cache still shows the version the update replaced
	sync()
	if writes["update"] != 1 {
		t.Fatalf("the cache behind the update: %v, want one update", writes)
	}

	lagging = false // caught up: nothing to write
	sync()
	got := &corev1.Endpoints{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(svc), got); err != nil {
		t.Fatal(err)
	}
	if writes["create"] != 2 || writes["update"] != 1 || len(got.Subsets) != 1 {
		t.Fatalf("writes %v (the pod's create included), subsets %v", writes, got.Subsets)
	}
}
