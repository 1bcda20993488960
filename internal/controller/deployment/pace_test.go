package deployment

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/pace"
)

func TestCountsOnly(t *testing.T) {
	progressing := appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue,
		Reason: reasonReplicaSetUpdated, Message: `ReplicaSet "web-1" is progressing.`,
		LastUpdateTime: metav1.NewTime(epoch), LastTransitionTime: metav1.NewTime(epoch)}
	written := newDeployment("web", 4)
	written.Annotations = map[string]string{"deployment.kubernetes.io/revision": "1"}
	written.Status = appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: 4, UpdatedReplicas: 2, UnavailableReplicas: 4,
		Conditions: []appsv1.DeploymentCondition{progressing}}
	for _, tc := range []struct {
		name   string
		change func(*appsv1.Deployment)
		want   bool
	}{
		{"nothing", func(*appsv1.Deployment) {}, false},
		{"ready and available, progress time", func(d *appsv1.Deployment) {
			d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.UnavailableReplicas = 1, 1, 3
			d.Status.Conditions[0].LastUpdateTime = metav1.NewTime(epoch.Add(time.Second))
		}, true},
		{"updated replicas", func(d *appsv1.Deployment) { d.Status.UpdatedReplicas = 3 }, true},
		{"progress time alone", func(d *appsv1.Deployment) {
			d.Status.Conditions[0].LastUpdateTime = metav1.NewTime(epoch.Add(time.Second))
		}, false},
		{"observed generation", func(d *appsv1.Deployment) { d.Status.ObservedGeneration, d.Status.UpdatedReplicas = 2, 3 }, false},
		{"collision count", func(d *appsv1.Deployment) { d.Status.CollisionCount, d.Status.UpdatedReplicas = new(int32(1)), 3 }, false},
		{"annotation", func(d *appsv1.Deployment) {
			d.Annotations["deployment.kubernetes.io/revision"], d.Status.UpdatedReplicas = "2", 3
		}, false},
		{"condition reason", func(d *appsv1.Deployment) {
			d.Status.Conditions[0].Reason, d.Status.UpdatedReplicas = reasonNewRSAvailable, 4
		}, false},
		{"new condition", func(d *appsv1.Deployment) {
			d.Status.Conditions = append(d.Status.Conditions, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue})
			d.Status.AvailableReplicas = 3
		}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := written.DeepCopy()
			tc.change(d)
			if got := countsOnly(written, d); got != tc.want {
				t.Errorf("countsOnly = %v, want %v", got, tc.want)
			}
		})
	}
}

// TestReplicaCountWritesArePaced: a Deployment's replica counts are written at most once per
// pace.Interval, the held-back write coming back when the interval is over.
func TestReplicaCountWritesArePaced(t *testing.T) {
	ctx := context.Background()
	clk := clocktesting.NewFakeClock(epoch)
	d := newDeployment("web", 2)
	// The fake client's status writes drop annotations, which the API server's take: the
	// revision the first sync sets is there already.
	d.Annotations = map[string]string{RevisionAnnotation: "1"}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).
		WithObjects(d).
		WithStatusSubresource(&appsv1.Deployment{}, &appsv1.ReplicaSet{}).
		WithIndex(&appsv1.ReplicaSet{}, index.ControllerUID, index.ControllerUIDOf).
		WithIndex(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf).
		Build()
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(100), Clock: clk, pacer: pace.New(pace.Interval, clk)}
	key := client.ObjectKeyFromObject(d)
	sync := func() time.Duration {
		t.Helper()
		res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key})
		if err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
		return res.RequeueAfter
	}
	status := func() appsv1.DeploymentStatus {
		t.Helper()
		got := &appsv1.Deployment{}
		if err := c.Get(ctx, key, got); err != nil {
			t.Fatal(err)
		}
		return got.Status
	}
	// setRS plays the ReplicaSet controller: its status counts replicas pods, ready of them
	// ready and available.
	setRS := func(replicas, ready int32) {
		t.Helper()
		list := &appsv1.ReplicaSetList{}
		if err := c.List(ctx, list); err != nil || len(list.Items) != 1 {
			t.Fatalf("want the one ReplicaSet: %v, %d", err, len(list.Items))
		}
		rs := &list.Items[0]
		rs.Status = appsv1.ReplicaSetStatus{ObservedGeneration: rs.Generation, Replicas: replicas, FullyLabeledReplicas: replicas,
			ReadyReplicas: ready, AvailableReplicas: ready}
		if err := c.Status().Update(ctx, rs); err != nil {
			t.Fatal(err)
		}
	}

	sync() // creates the ReplicaSet and writes the first status at once
	if st := status(); st.ObservedGeneration != 1 || len(st.Conditions) == 0 {
		t.Fatalf("first sync writes at once: %+v", st)
	}
	// The pods' first count moves Progressing to ReplicaSetUpdated: written at once.
	setRS(2, 0)
	sync()
	if st := status(); st.Replicas != 2 || progressingReason(st) != reasonReplicaSetUpdated {
		t.Fatalf("a new Progressing reason is written at once: %+v", st)
	}
	setRS(2, 1)
	clk.Step(100 * time.Millisecond)
	if after := sync(); after != 900*time.Millisecond {
		t.Errorf("a pod ready 100ms after a write: RequeueAfter = %v, want 900ms", after)
	}
	if st := status(); st.ReadyReplicas != 0 {
		t.Errorf("held back within the interval: readyReplicas %d", st.ReadyReplicas)
	}
	clk.Step(900 * time.Millisecond)
	sync()
	if st := status(); st.ReadyReplicas != 1 || st.AvailableReplicas != 1 {
		t.Errorf("after the interval the counts are written: %+v", st)
	}

	// The rollout's end changes Progressing's reason: written at once.
	setRS(2, 2)
	clk.Step(10 * time.Millisecond)
	if after := sync(); after == pace.Interval-10*time.Millisecond {
		t.Errorf("the end of the rollout was held back")
	}
	st := status()
	if st.AvailableReplicas != 2 || progressingReason(st) != reasonNewRSAvailable {
		t.Errorf("the end of the rollout is written at once: %+v", st)
	}
}

func progressingReason(st appsv1.DeploymentStatus) string {
	for _, c := range st.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			return c.Reason
		}
	}
	return ""
}
