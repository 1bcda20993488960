package tainteviction

import (
	"context"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

const (
	markEvent   = "Normal TaintManagerEviction Marking for deletion Pod default/p"
	cancelEvent = "Normal TaintManagerEviction Cancelling deletion of Pod default/p"
)

var broken = noExecute("example.com/broken", "")

// harness drives the Reconciler against a fake client with a fake clock.
type harness struct {
	t      *testing.T
	r      *Reconciler
	clock  *clocktesting.FakePassiveClock
	events *events.FakeRecorder
	fails  int // Deletes to fail before one succeeds
}

func newHarness(t *testing.T, objs ...client.Object) *harness {
	h := &harness{t: t, clock: clocktesting.NewFakePassiveClock(time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)), events: events.NewFakeRecorder(100)}
	cl := fake.NewClientBuilder().
		WithScheme(scheme.Scheme).
		WithObjects(objs...).
		WithStatusSubresource(&corev1.Pod{}).
		WithIndex(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameOf).
		WithInterceptorFuncs(interceptor.Funcs{Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
			if h.fails > 0 {
				h.fails--
				return apierrors.NewServiceUnavailable("try again")
			}
			return c.Delete(ctx, obj, opts...)
		}}).
		Build()
	h.r = &Reconciler{Client: cl, Recorder: h.events, Clock: h.clock, pending: newPendingEvictions()}
	return h
}

func (h *harness) reconcile() reconcile.Result {
	h.t.Helper()
	res, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "p"}})
	if err != nil {
		h.t.Fatalf("Reconcile: %v", err)
	}
	return res
}

func (h *harness) step(d time.Duration) { h.clock.SetTime(h.clock.Now().Add(d)) }

// pod returns the pod, nil once it is being deleted or gone.
func (h *harness) pod() *corev1.Pod {
	h.t.Helper()
	p := &corev1.Pod{}
	err := h.r.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "p"}, p)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		h.t.Fatal(err)
	}
	if p.DeletionTimestamp != nil {
		return nil
	}
	return p
}

func (h *harness) update(obj client.Object, mutate func()) {
	h.t.Helper()
	if err := h.r.Client.Get(context.Background(), client.ObjectKeyFromObject(obj), obj); err != nil {
		h.t.Fatal(err)
	}
	mutate()
	if err := h.r.Client.Update(context.Background(), obj); err != nil {
		h.t.Fatal(err)
	}
}

// expectEvents checks the Events recorded since the last call.
func (h *harness) expectEvents(want ...string) {
	h.t.Helper()
	var got []string
	for {
		select {
		case e := <-h.events.Events:
			got = append(got, e)
			continue
		default:
		}
		break
	}
	if !slices.Equal(got, want) {
		h.t.Errorf("events = %q, want %q", got, want)
	}
}

func (h *harness) expectRequeue(res reconcile.Result, want time.Duration) {
	h.t.Helper()
	if res.RequeueAfter != want {
		h.t.Errorf("RequeueAfter = %v, want %v", res.RequeueAfter, want)
	}
}

func node(taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n1"}, Spec: corev1.NodeSpec{Taints: taints}}
}

func pod(nodeName string, tolerations ...corev1.Toleration) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "default", Name: "p", UID: "uid-1", Finalizers: []string{"example.com/keep"}},
		Spec:       corev1.PodSpec{NodeName: nodeName, Tolerations: tolerations},
	}
}

func TestReconcileUntoleratedTaintDeletesAtOnceAfterMarking(t *testing.T) {
	h := newHarness(t, node(broken), pod("n1"))
	h.expectRequeue(h.reconcile(), 0)
	p := &corev1.Pod{}
	if err := h.r.Client.Get(context.Background(), types.NamespacedName{Namespace: "default", Name: "p"}, p); err != nil {
		t.Fatal(err)
	}
	if p.DeletionTimestamp == nil {
		t.Fatal("pod not deleted")
	}
	if len(p.Status.Conditions) != 1 || p.Status.Conditions[0].Type != corev1.DisruptionTarget ||
		p.Status.Conditions[0].Reason != "DeletionByTaintManager" || p.Status.Conditions[0].Status != corev1.ConditionTrue {
		t.Errorf("conditions = %+v, want DisruptionTarget/DeletionByTaintManager", p.Status.Conditions)
	}
	h.expectEvents(markEvent)
	if _, ok := h.r.pending.get(client.ObjectKeyFromObject(p)); ok {
		t.Error("eviction still pending after the deletion")
	}
}

func TestReconcileNothingToDo(t *testing.T) {
	for name, objs := range map[string][]client.Object{
		"no taint":                {node(), pod("n1")},
		"NoSchedule taint":        {node(corev1.Taint{Key: "example.com/broken", Effect: corev1.TaintEffectNoSchedule}), pod("n1")},
		"tolerated forever":       {node(broken), pod("n1", tolerate("example.com/broken", nil))},
		"unbound pod":             {node(broken), pod("")},
		"node unknown":            {pod("n1")},
		"pod unknown":             {node(broken)},
		"taint on another node":   {&corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n2"}, Spec: corev1.NodeSpec{Taints: []corev1.Taint{broken}}}, node(), pod("n1")},
		"NoExecute value differs": {node(noExecute("example.com/zone", "a")), pod("n1", corev1.Toleration{Key: "example.com/zone", Value: "a"})},
	} {
		t.Run(name, func(t *testing.T) {
			h := newHarness(t, objs...)
			h.expectRequeue(h.reconcile(), 0)
			h.expectEvents()
			if h.r.pending.len() != 0 {
				t.Error("an eviction is pending")
			}
			if slices.ContainsFunc(objs, func(o client.Object) bool { _, ok := o.(*corev1.Pod); return ok }) && h.pod() == nil {
				t.Error("pod deleted")
			}
		})
	}
}

func TestReconcileTimedEviction(t *testing.T) {
	h := newHarness(t, node(broken), pod("n1", tolerate("example.com/broken", ptr.To[int64](10))))
	h.expectRequeue(h.reconcile(), 10*time.Second)
	h.step(4 * time.Second)
	h.expectRequeue(h.reconcile(), 6*time.Second)
	if h.pod() == nil {
		t.Fatal("pod deleted before its time")
	}
	h.expectEvents()
	h.step(6 * time.Second)
	h.expectRequeue(h.reconcile(), 0)
	if h.pod() != nil {
		t.Fatal("pod not deleted at its time")
	}
	h.expectEvents(markEvent)
}

func TestReconcileLengtheningTolerationDoesNotPostpone(t *testing.T) {
	p := pod("n1", tolerate("example.com/broken", ptr.To[int64](10)))
	h := newHarness(t, node(broken), p)
	h.reconcile()
	h.step(5 * time.Second)
	h.update(p, func() { p.Spec.Tolerations[0].TolerationSeconds = ptr.To[int64](100) })
	h.expectRequeue(h.reconcile(), 5*time.Second)
	h.step(5 * time.Second)
	h.reconcile()
	if h.pod() != nil {
		t.Fatal("pod not deleted at the time first scheduled")
	}
}

func TestReconcileCancellations(t *testing.T) {
	tolerated := tolerate("example.com/broken", ptr.To[int64](10))
	tests := []struct {
		name   string
		change func(h *harness, n *corev1.Node, p *corev1.Pod)
		// then: the pod survives past the old time, or is deleted at once
		deletedAtOnce bool
		events        []string
	}{
		{name: "taint removed", change: func(h *harness, n *corev1.Node, _ *corev1.Pod) {
			h.update(n, func() { n.Spec.Taints = nil })
		}, events: []string{cancelEvent}},
		{name: "taint now NoSchedule", change: func(h *harness, n *corev1.Node, _ *corev1.Pod) {
			h.update(n, func() { n.Spec.Taints[0].Effect = corev1.TaintEffectNoSchedule })
		}, events: []string{cancelEvent}},
		{name: "pod now tolerates forever", change: func(h *harness, _ *corev1.Node, p *corev1.Pod) {
			h.update(p, func() {
				p.Spec.Tolerations = append([]corev1.Toleration{tolerate("example.com/broken", nil)}, p.Spec.Tolerations...)
			})
		}, events: []string{cancelEvent}},
		{name: "another taint untolerated: at once", change: func(h *harness, n *corev1.Node, _ *corev1.Pod) {
			h.update(n, func() { n.Spec.Taints = append(n.Spec.Taints, noExecute("example.com/other", "")) })
		}, deletedAtOnce: true, events: []string{cancelEvent, markEvent}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, p := node(broken), pod("n1", tolerated)
			h := newHarness(t, n, p)
			h.expectRequeue(h.reconcile(), 10*time.Second)
			h.step(3 * time.Second)
			tt.change(h, n, p)
			h.reconcile()
			h.expectEvents(tt.events...)
			if tt.deletedAtOnce {
				if h.pod() != nil {
					t.Fatal("pod not deleted at once")
				}
				return
			}
			h.step(time.Minute)
			h.expectRequeue(h.reconcile(), 0)
			if h.pod() == nil {
				t.Fatal("pod deleted after its eviction was cancelled")
			}
			h.expectEvents()
		})
	}
}

func TestReconcileTaintBackStartsAfresh(t *testing.T) {
	n := node(broken)
	h := newHarness(t, n, pod("n1", tolerate("example.com/broken", ptr.To[int64](10))))
	h.reconcile()
	h.step(8 * time.Second)
	h.update(n, func() { n.Spec.Taints = nil })
	h.reconcile()
	h.update(n, func() { n.Spec.Taints = []corev1.Taint{broken} })
	h.expectRequeue(h.reconcile(), 10*time.Second)
	h.expectEvents(cancelEvent)
}

func TestReconcilePodGoneCancels(t *testing.T) {
	p := pod("n1", tolerate("example.com/broken", ptr.To[int64](10)))
	h := newHarness(t, node(broken), p)
	h.reconcile()
	h.update(p, func() { p.Finalizers = nil })
	if err := h.r.Client.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	h.reconcile()
	h.expectEvents(cancelEvent)
	if h.r.pending.len() != 0 {
		t.Error("eviction still pending")
	}
}

func TestReconcileRecreatedPodStartsAfresh(t *testing.T) {
	p := pod("n1", tolerate("example.com/broken", ptr.To[int64](10)))
	h := newHarness(t, node(broken), p)
	h.reconcile()
	// The pod is replaced by another of the same name before the controller hears of it.
	h.update(p, func() { p.Finalizers = nil })
	if err := h.r.Client.Delete(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	again := pod("n1", tolerate("example.com/broken", ptr.To[int64](30)))
	again.UID = "uid-2"
	if err := h.r.Client.Create(context.Background(), again); err != nil {
		t.Fatal(err)
	}
	h.step(5 * time.Second)
	h.expectRequeue(h.reconcile(), 30*time.Second)
	h.expectEvents(cancelEvent)
}

func TestReconcileNodeGoneKeepsScheduledEviction(t *testing.T) {
	n := node(broken)
	h := newHarness(t, n, pod("n1", tolerate("example.com/broken", ptr.To[int64](10))))
	h.reconcile()
	if err := h.r.Client.Delete(context.Background(), n); err != nil {
		t.Fatal(err)
	}
	h.step(4 * time.Second)
	h.expectRequeue(h.reconcile(), 6*time.Second)
	h.step(6 * time.Second)
	h.reconcile()
	if h.pod() != nil {
		t.Fatal("scheduled eviction did not happen after the node went away")
	}
	h.expectEvents(markEvent)
}

func TestReconcileRetriesFailedDeletionAtOnceWithoutAnotherEvent(t *testing.T) {
	h := newHarness(t, node(broken), pod("n1", tolerate("example.com/broken", ptr.To[int64](10))))
	h.reconcile()
	h.step(10 * time.Second)
	h.fails = 1
	_, err := h.r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "default", Name: "p"}})
	if err == nil {
		t.Fatal("a failed deletion is no error")
	}
	h.step(time.Second)
	h.expectRequeue(h.reconcile(), 0)
	if h.pod() != nil {
		t.Fatal("retry did not delete the pod")
	}
	h.expectEvents(markEvent)
}

func TestPodsOnNode(t *testing.T) {
	other := pod("n2")
	other.Name, other.UID = "q", "uid-q"
	unbound := pod("")
	unbound.Name, unbound.UID = "u", "uid-u"
	h := newHarness(t, node(), pod("n1"), other, unbound)
	got := h.r.podsOnNode(context.Background(), node())
	if len(got) != 1 || got[0].Name != "p" || got[0].Namespace != "default" {
		t.Errorf("podsOnNode = %v, want default/p", got)
	}
}

func TestPredicates(t *testing.T) {
	bound, unbound := pod("n1"), pod("")
	tolerating := pod("n1", tolerate("example.com/broken", nil))
	relabelled := pod("n1")
	relabelled.Labels = map[string]string{"a": "b"}
	for name, tt := range map[string]struct {
		got, want bool
	}{
		"bound pod created":          {podChanges.Create(event.CreateEvent{Object: bound}), true},
		"unbound pod created":        {podChanges.Create(event.CreateEvent{Object: unbound}), false},
		"pod bound":                  {podChanges.Update(event.UpdateEvent{ObjectOld: unbound, ObjectNew: bound}), true},
		"tolerations changed":        {podChanges.Update(event.UpdateEvent{ObjectOld: bound, ObjectNew: tolerating}), true},
		"labels changed":             {podChanges.Update(event.UpdateEvent{ObjectOld: bound, ObjectNew: relabelled}), false},
		"bound pod deleted":          {podChanges.Delete(event.DeleteEvent{Object: bound}), true},
		"unbound pod deleted":        {podChanges.Delete(event.DeleteEvent{Object: unbound}), false},
		"node created":               {nodeChanges.Create(event.CreateEvent{Object: node()}), true},
		"NoExecute taint added":      {nodeChanges.Update(event.UpdateEvent{ObjectOld: node(), ObjectNew: node(broken)}), true},
		"NoExecute taint removed":    {nodeChanges.Update(event.UpdateEvent{ObjectOld: node(broken), ObjectNew: node()}), true},
		"NoSchedule taint added":     {nodeChanges.Update(event.UpdateEvent{ObjectOld: node(broken), ObjectNew: node(broken, corev1.Taint{Key: "x", Effect: corev1.TaintEffectNoSchedule})}), false},
		"node deleted":               {nodeChanges.Delete(event.DeleteEvent{Object: node(broken)}), false},
		"NoExecute taint value edit": {nodeChanges.Update(event.UpdateEvent{ObjectOld: node(broken), ObjectNew: node(noExecute("example.com/broken", "v"))}), true},
	} {
		if tt.got != tt.want {
			t.Errorf("%s: passes = %v, want %v", name, tt.got, tt.want)
		}
	}
}

func TestSetupNeedsClientAndRecorder(t *testing.T) {
	if err := (&Reconciler{}).SetupWithManager(nil, 1); err == nil {
		t.Error("SetupWithManager accepted a Reconciler without Client and Recorder")
	}
}
