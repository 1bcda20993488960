package replicaset

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/expectations"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/pace"
)

func TestCountsOnly(t *testing.T) {
	base := appsv1.ReplicaSetStatus{Replicas: 2, FullyLabeledReplicas: 2, ObservedGeneration: 1, TerminatingReplicas: new(int32(0))}
	for _, tc := range []struct {
		name   string
		change func(*appsv1.ReplicaSetStatus)
		want   bool
	}{
		{"ready and available", func(s *appsv1.ReplicaSetStatus) { s.ReadyReplicas, s.AvailableReplicas = 1, 1 }, true},
		{"replicas", func(s *appsv1.ReplicaSetStatus) { s.Replicas, s.FullyLabeledReplicas = 3, 3 }, true},
		{"terminating", func(s *appsv1.ReplicaSetStatus) { s.TerminatingReplicas = new(int32(1)) }, true},
		{"observed generation", func(s *appsv1.ReplicaSetStatus) { s.ObservedGeneration, s.ReadyReplicas = 2, 1 }, false},
		{"failure condition", func(s *appsv1.ReplicaSetStatus) {
			s.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate"}}
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			changed := *base.DeepCopy()
			tc.change(&changed)
			if got := countsOnly(base, changed); got != tc.want {
				t.Errorf("countsOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestPodCountWritesArePaced: a ReplicaSet's pod counts are written at most once per
// pace.Interval; the held-back write comes back when the interval is over, and a new
// generation is written at once.
func TestPodCountWritesArePaced(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(time.Unix(1000, 0))
	labels := map[string]string{"app": "web"}
	rs := &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "rs-uid", Generation: 1},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: new(int32(2)), Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}},
		},
	}
	var pods []*corev1.Pod
	for _, name := range []string{"web-a", "web-b"} {
		pods = append(pods, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, Labels: labels,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, ReplicaSetKind.GVK)},
		}})
	}
	c := fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).
		WithObjects(rs, pods[0], pods[1]).
		WithStatusSubresource(&appsv1.ReplicaSet{}, &corev1.Pod{}).
		WithIndex(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf).
		Build()
	r := &Reconciler{Kind: ReplicaSetKind, Client: c, APIReader: c, Recorder: events.NewFakeRecorder(100), Clock: clk,
		expectations: expectations.New(clk), pacer: pace.New(pace.Interval, clk)}
	key := client.ObjectKeyFromObject(rs)
	sync := func() time.Duration {
		t.Helper()
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return res.RequeueAfter
	}
	status := func() appsv1.ReplicaSetStatus {
		t.Helper()
		got := &appsv1.ReplicaSet{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	ready := func(p *corev1.Pod) {
		t.Helper()
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(clk.Now().Add(-time.Minute))}}
		if err := c.Status().Update(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	if after := sync(); after != 0 {
		t.Errorf("first sync: RequeueAfter = %v, want 0", after)
	}
	if st := status(); st.Replicas != 2 || st.ObservedGeneration != 1 {
		t.Fatalf("first sync writes at once: %+v", st)
	}

	ready(pods[0])
	if after := sync(); after != pace.Interval {
		t.Errorf("a count change right after a write: RequeueAfter = %v, want %v", after, pace.Interval)
	}
	clk.Step(400 * time.Millisecond)
	ready(pods[1])
	if after := sync(); after != 600*time.Millisecond {
		t.Errorf("400ms later: RequeueAfter = %v, want 600ms", after)
	}
	if st := status(); st.ReadyReplicas != 0 {
		t.Errorf("held back within the interval, got readyReplicas %d", st.ReadyReplicas)
	}

	clk.Step(600 * time.Millisecond)
	if after := sync(); after != 0 {
		t.Errorf("after the interval: RequeueAfter = %v, want 0", after)
	}
	if st := status(); st.ReadyReplicas != 2 || st.AvailableReplicas != 2 {
		t.Errorf("after the interval both ready pods are written in one write: %+v", st)
	}

	// A new generation right after that write is not held back.
	cur := &appsv1.ReplicaSet{}
	if err := c.Get(ctx, key, cur); err != nil {
		t.Fatal(err)
	}
	cur.Generation = 2
	if err := c.Update(ctx, cur); err != nil {
		t.Fatal(err)
	}
	if after := sync(); after != 0 {
		t.Errorf("new generation: RequeueAfter = %v, want 0", after)
	}
	if st := status(); st.ObservedGeneration != 2 {
		t.Errorf("a new generation is written at once: observedGeneration %d", st.ObservedGeneration)
	}
}
