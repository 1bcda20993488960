package daemonset

import (
	"context"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	"k8s.io/client-go/util/flowcontrol"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

// TestFailedPodBackoff runs Reconcile against the fake client (no watch events: the test
// forgets the expectations between syncs) with an injected backoff clock.
func TestFailedPodBackoff(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ds := dsWith(nil)
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	ds.Spec.UpdateStrategy.Type = appsv1.RollingUpdateDaemonSetStrategyType
	node := nodeWith("n1", nil)
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(ds, node).
		WithStatusSubresource(&appsv1.DaemonSet{}).
		WithIndex(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf).
		WithIndex(&appsv1.ControllerRevision{}, index.ControllerUID, index.ControllerUIDOf).
		Build()
	clk := clocktesting.NewFakeClock(t0)
	recorder := events.NewFakeRecorder(100)
	r := &Reconciler{Client: c, APIReader: c, Recorder: recorder, Clock: clk,
		FailedPodsBackoff: flowcontrol.NewFakeBackOff(time.Second, 15*time.Minute, clk)}
	r.init()
	key := client.ObjectKeyFromObject(ds)
	sync := func() reconcile.Result {
		t.Helper()
		r.creations.Forget(key)
		r.deletions.Forget(key)
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return res
	}
	failedPod := func(name string) *corev1.Pod {
		t.Helper()
		if err := c.Get(ctx, key, ds); err != nil {
			t.Fatal(err)
		}
		p := newPod(ds, "n1", "")
		p.GenerateName, p.Name = "", name
		p.Spec.NodeName = "n1"
		p.Status.Phase = corev1.PodFailed
		if err := c.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
		return p
	}
	exists := func(p *corev1.Pod) bool {
		err := c.Get(ctx, client.ObjectKeyFromObject(p), &corev1.Pod{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	p1 := failedPod("p1")
	sync()
	if exists(p1) {
		t.Fatalf("first failed pod not deleted")
	}
	if e := <-recorder.Events; !strings.Contains(e, "FailedDaemonPod") || !strings.Contains(e, "Found failed daemon pod ns/p1 on node n1") {
		t.Fatalf("first event = %q, want FailedDaemonPod", e)
	}

	p2 := failedPod("p2")
	if res := sync(); res.RequeueAfter != time.Second || !exists(p2) {
		t.Fatalf("second failure within 1s: RequeueAfter %v, pod exists %v; want 1s, true", res.RequeueAfter, exists(p2))
	}
	clk.Step(2 * time.Second)
	sync()
	if exists(p2) {
		t.Fatalf("failed pod not deleted after the backoff")
	}
	p3 := failedPod("p3")
	if res := sync(); res.RequeueAfter != 2*time.Second || !exists(p3) {
		t.Fatalf("third failure: RequeueAfter %v, pod exists %v; want 2s (doubled), true", res.RequeueAfter, exists(p3))
	}
}
