package job

import (
	"context"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

// fakeReconciler runs the Reconciler against controller-runtime's fake client: no cache
// lag and no watch events, so expectations are never met by an event.
func fakeReconciler(t *testing.T, objs ...client.Object) (*Reconciler, client.Client) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(objs...).
		WithStatusSubresource(&batchv1.Job{}).
		WithIndex(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf).
		Build()
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(2000), Clock: clocktesting.NewFakePassiveClock(t0)}
	r.init()
	return r, c
}

func reconcileJob(t *testing.T, r *Reconciler, job *batchv1.Job) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKeyFromObject(job)}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
}

func countPods(t *testing.T, c client.Client, active bool) int {
	t.Helper()
	list := &corev1.PodList{}
	if err := c.List(context.Background(), list, client.InNamespace("ns")); err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, p := range list.Items {
		if !active || p.DeletionTimestamp == nil {
			n++
		}
	}
	return n
}

func TestAtMost500PodCreationsPerSync(t *testing.T) {
	job := plainJob(ptr.To[int32](1000), 600)
	r, c := fakeReconciler(t, job)
	reconcileJob(t, r, job)
	if n := countPods(t, c, false); n != MaxPodCreateDeletePerSync {
		t.Fatalf("created %d pods, want %d", n, MaxPodCreateDeletePerSync)
	}
	got := &batchv1.Job{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Active != MaxPodCreateDeletePerSync || got.Status.StartTime == nil {
		t.Errorf("status: active %d, startTime %v", got.Status.Active, got.Status.StartTime)
	}
	// The 500 creations were never observed (no watch here): the next sync must not
	// create more from a view that may lag.
	reconcileJob(t, r, job)
	if n := countPods(t, c, false); n != MaxPodCreateDeletePerSync {
		t.Errorf("with unmet expectations: %d pods", n)
	}
	// Observed: the remaining 100 follow.
	for range MaxPodCreateDeletePerSync {
		r.expectations.CreationObserved(client.ObjectKeyFromObject(job))
	}
	reconcileJob(t, r, job)
	if n := countPods(t, c, false); n != 600 {
		t.Errorf("after the creations were observed: %d pods, want 600", n)
	}
}

func TestAtMost500PodDeletionsPerSync(t *testing.T) {
	job := plainJob(ptr.To[int32](1000), 600)
	job.Spec.Suspend = ptr.To(true)
	var objs []client.Object
	objs = append(objs, job)
	for range 600 {
		p := newPod(corev1.PodRunning)
		p.OwnerReferences = podForJob(job, unknownCompletionIndex, nil).OwnerReferences
		p.Labels = job.Spec.Template.Labels
		objs = append(objs, p)
	}
	r, c := fakeReconciler(t, objs...)
	reconcileJob(t, r, job)
	if n := countPods(t, c, true); n != 100 {
		t.Errorf("%d pods left, want 100 (500 deleted)", n)
	}
	got := &batchv1.Job{}
	if err := c.Get(context.Background(), client.ObjectKeyFromObject(job), got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Active != 100 || got.Status.Failed != 0 {
		t.Errorf("status: active %d failed %d", got.Status.Active, got.Status.Failed)
	}
}
