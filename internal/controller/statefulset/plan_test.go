package statefulset

import (
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
)

var now = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

type setOpt func(*appsv1.StatefulSet)

func testSet(replicas int32, opts ...setOpt) *appsv1.StatefulSet {
	s := &appsv1.StatefulSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "set-uid"},
		Spec: appsv1.StatefulSetSpec{
			Replicas:            &replicas,
			Selector:            &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
			PodManagementPolicy: appsv1.OrderedReadyPodManagement,
			UpdateStrategy: appsv1.StatefulSetUpdateStrategy{
				Type:          appsv1.RollingUpdateStatefulSetStrategyType,
				RollingUpdate: &appsv1.RollingUpdateStatefulSetStrategy{Partition: ptr.To[int32](0)},
			},
		},
	}
	for _, o := range opts {
		o(s)
	}
	return s
}

func parallel(s *appsv1.StatefulSet) { s.Spec.PodManagementPolicy = appsv1.ParallelPodManagement }
func onDelete(s *appsv1.StatefulSet) {
	s.Spec.UpdateStrategy = appsv1.StatefulSetUpdateStrategy{Type: appsv1.OnDeleteStatefulSetStrategyType}
}
func partition(n int32) setOpt {
	return func(s *appsv1.StatefulSet) { s.Spec.UpdateStrategy.RollingUpdate.Partition = &n }
}
func startAt(n int32) setOpt {
	return func(s *appsv1.StatefulSet) { s.Spec.Ordinals = &appsv1.StatefulSetOrdinals{Start: n} }
}

// state: "R" running and ready, "P" pending, "U" running not ready, "T" terminating (ready),
// "F" failed; revision "a" (current) or "b" (update).
func testPod(ordinal int, state, revision string) *corev1.Pod {
	name := fmt.Sprintf("web-%d", ordinal)
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name),
		Labels: map[string]string{appsv1.ControllerRevisionHashLabelKey: revision,
			appsv1.StatefulSetPodNameLabel: name, appsv1.PodIndexLabel: fmt.Sprint(ordinal)}}}
	ready := func() {
		p.Status.Phase = corev1.PodRunning
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now.Add(-time.Hour))}}
	}
	switch state {
	case "R":
		ready()
	case "P":
		p.Status.Phase = corev1.PodPending
	case "U":
		p.Status.Phase = corev1.PodRunning
	case "T":
		ready()
		p.DeletionTimestamp = &metav1.Time{Time: now}
	case "F":
		p.Status.Phase = corev1.PodFailed
	}
	return p
}

// describe renders a plan as "create 1@b | claims 0 ; delete 2 (scale down)".
func describe(stages [][]step) string {
	var out []string
	for _, st := range stages {
		var parts []string
		for _, s := range st {
			switch s.kind {
			case stepCreate:
				parts = append(parts, fmt.Sprintf("create %d@%s", s.ordinal, s.revision))
			case stepDelete:
				parts = append(parts, fmt.Sprintf("delete %d (%s)", s.ordinal, s.reason))
			case stepRelabel:
				parts = append(parts, fmt.Sprintf("relabel %d", s.ordinal))
			case stepClaims:
				if s.createClaims {
					parts = append(parts, fmt.Sprintf("claims+ %d", s.ordinal))
				} else {
					parts = append(parts, fmt.Sprintf("claims %d", s.ordinal))
				}
			}
		}
		out = append(out, strings.Join(parts, ", "))
	}
	return strings.Join(out, " ; ")
}

func TestPlan(t *testing.T) {
	tests := []struct {
		name string
		set  *appsv1.StatefulSet
		pods []*corev1.Pod
		want string
	}{
		{"ordered: empty set creates ordinal 0 only", testSet(3), nil, "create 0@b"},
		{"ordered: waits for a pending pod", testSet(3), []*corev1.Pod{testPod(0, "P", "b")}, "claims+ 0"},
		{"ordered: waits for a running unready pod", testSet(3), []*corev1.Pod{testPod(0, "U", "b")}, ""},
		{"ordered: next after ready", testSet(3), []*corev1.Pod{testPod(0, "R", "b")}, "claims 0, create 1@b"},
		{"ordered: halts at an unready middle pod", testSet(3),
			[]*corev1.Pod{testPod(0, "R", "b"), testPod(1, "U", "b")}, "claims 0"},
		{"ordered: failed pod is deleted and waited for", testSet(2),
			[]*corev1.Pod{testPod(0, "F", "b"), testPod(1, "R", "b")}, "delete 0 (failed)"},
		{"ordered: scale down deletes the highest first, one at a time", testSet(1),
			[]*corev1.Pod{testPod(0, "R", "b"), testPod(1, "R", "b"), testPod(2, "R", "b")},
			"claims 0 ; claims 2, claims 1 ; delete 2 (scale down)"},
		{"ordered: scale down waits for a terminating pod", testSet(1),
			[]*corev1.Pod{testPod(0, "R", "b"), testPod(1, "R", "b"), testPod(2, "T", "b")},
			"claims 0 ; claims 2, claims 1 ; "},
		{"ordered: scale down may delete the first unhealthy pod", testSet(1),
			[]*corev1.Pod{testPod(0, "R", "b"), testPod(1, "U", "b")},
			"claims 0 ; claims 1 ; delete 1 (scale down)"},
		{"ordered: scale down waits for an unhealthy pod other than the first", testSet(1),
			[]*corev1.Pod{testPod(0, "R", "b"), testPod(1, "U", "b"), testPod(2, "U", "b")},
			"claims 0 ; claims 2, claims 1 ; "},
		{"parallel: creates all at once", testSet(3, parallel), nil, "create 0@b, create 1@b, create 2@b ; ; ; "},
		{"parallel: deletes all condemned at once", testSet(1, parallel),
			[]*corev1.Pod{testPod(0, "U", "b"), testPod(1, "U", "b"), testPod(2, "R", "b")},
			"claims 0 ; claims 2, claims 1 ; delete 2 (scale down), delete 1 (scale down) ; "},
		{"ordinals.start", testSet(2, startAt(5)), []*corev1.Pod{testPod(5, "R", "b"), testPod(0, "R", "b")},
			"claims 5, create 6@b"},
		{"rolling update: highest old ordinal first", testSet(3),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "R", "a")},
			"claims 0, claims 1, claims 2 ; ; ; delete 2 (update)"},
		{"rolling update: next once the updated pod is ready", testSet(3),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "R", "b")},
			"claims 0, claims 1, claims 2 ; ; ; delete 1 (update)"},
		{"rolling update: partition keeps lower ordinals", testSet(3, partition(2)),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "R", "b")},
			"claims 0, claims 1, claims 2 ; ; ; "},
		{"rolling update: recreated pod below the partition gets the current revision", testSet(3, partition(2)),
			[]*corev1.Pod{testPod(1, "R", "a"), testPod(2, "R", "b")}, "create 0@a"},
		{"rolling update: maxUnavailable 2 deletes two", testSet(3, func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(2))
		}), []*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "R", "a")},
			"claims 0, claims 1, claims 2 ; ; ; delete 2 (update), delete 1 (update)"},
		{"on delete: old pods stay", testSet(2, onDelete),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a")}, "claims 0, claims 1 ; ; "},
		{"on delete: new pods get the update revision", testSet(2, onDelete),
			[]*corev1.Pod{testPod(0, "R", "a")}, "claims 0, create 1@b"},
		{"identity repaired", testSet(1), []*corev1.Pod{func() *corev1.Pod {
			p := testPod(0, "R", "b")
			delete(p.Labels, appsv1.StatefulSetPodNameLabel)
			return p
		}()}, "relabel 0, claims 0 ; ; ; "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describe(plan(planInput{set: tt.set, currentRevision: "a", updateRevision: "b", pods: tt.pods, now: now}))
			if got, want := strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(tt.want), " "); got != want {
				t.Errorf("plan =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

// Without MaxUnavailableStatefulSet, upstream ignores maxUnavailable and, in either pod
// management policy, replaces one pod at a time, the highest first, waiting for each.
func TestPlanWithoutMaxUnavailableStatefulSet(t *testing.T) {
	maxUnavailable := func(n int32) setOpt {
		return func(s *appsv1.StatefulSet) {
			s.Spec.UpdateStrategy.RollingUpdate.MaxUnavailable = ptr.To(intstr.FromInt32(n))
		}
	}
	old3 := []*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "R", "a")}
	tests := []struct {
		name string
		set  *appsv1.StatefulSet
		pods []*corev1.Pod
		want string
	}{
		{"maxUnavailable 2 deletes one", testSet(3, maxUnavailable(2)), old3,
			"claims 0, claims 1, claims 2 ; ; ; delete 2 (update)"},
		{"parallel, maxUnavailable 3 deletes one", testSet(3, parallel, maxUnavailable(3)), old3,
			"claims 0, claims 1, claims 2 ; ; ; delete 2 (update)"},
		{"waits for the updated pod to be available", testSet(3, parallel, maxUnavailable(3)),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "U", "b")},
			"claims 0, claims 1, claims 2 ; ; ; "},
		{"waits for a terminating old pod", testSet(3, parallel, maxUnavailable(3)),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "T", "a")},
			"claims 0, claims 1, claims 2 ; ; ; "},
		{"next once the updated pod is available", testSet(3, maxUnavailable(2)),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "R", "b")},
			"claims 0, claims 1, claims 2 ; ; ; delete 1 (update)"},
		{"partition keeps lower ordinals", testSet(3, partition(2), maxUnavailable(2)),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "a"), testPod(2, "R", "b")},
			"claims 0, claims 1, claims 2 ; ; ; "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := describe(plan(planInput{set: tt.set, currentRevision: "a", updateRevision: "b", pods: tt.pods, now: now, oneAtATime: true}))
			if got, want := strings.Join(strings.Fields(got), " "), strings.Join(strings.Fields(tt.want), " "); got != want {
				t.Errorf("plan =\n  %q\nwant\n  %q", got, tt.want)
			}
		})
	}
}

func TestComputeStatus(t *testing.T) {
	set := testSet(4)
	pods := []*corev1.Pod{testPod(0, "R", "a"), testPod(1, "R", "b"), testPod(2, "P", "b"), testPod(3, "T", "a")}
	got := computeStatus(set, pods, "a", "b", now)
	want := appsv1.StatefulSetStatus{Replicas: 4, ReadyReplicas: 3, AvailableReplicas: 3, CurrentReplicas: 1, UpdatedReplicas: 2}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("computeStatus = %+v, want %+v", got, want)
	}
	// minReadySeconds: ready an hour ago counts; a 2-hour window does not.
	set.Spec.MinReadySeconds = 7200
	if got := computeStatus(set, pods, "a", "b", now); got.AvailableReplicas != 0 || got.ReadyReplicas != 3 {
		t.Errorf("with minReadySeconds: %+v", got)
	}
}

func TestCompleteUpdate(t *testing.T) {
	tests := []struct {
		name        string
		st          appsv1.StatefulSetStatus
		wantCurrent string
	}{
		{"all updated and ready", appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"}, "b"},
		{"one not ready", appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 1, UpdatedReplicas: 2, CurrentRevision: "a", UpdateRevision: "b"}, "a"},
		{"one not updated", appsv1.StatefulSetStatus{Replicas: 2, ReadyReplicas: 2, UpdatedReplicas: 1, CurrentRevision: "a", UpdateRevision: "b"}, "a"},
	}
	for _, tt := range tests {
		completeUpdate(testSet(2), &tt.st)
		if tt.st.CurrentRevision != tt.wantCurrent {
			t.Errorf("%s: currentRevision %q, want %q", tt.name, tt.st.CurrentRevision, tt.wantCurrent)
		}
	}
}

func TestTruncatable(t *testing.T) {
	rev := func(name string) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name}}
	}
	revs := []*appsv1.ControllerRevision{rev("r1"), rev("r2"), rev("r3"), rev("r4"), rev("r5")}
	set := testSet(1)
	set.Spec.RevisionHistoryLimit = ptr.To[int32](1)
	got := truncatable(set, revs, []*corev1.Pod{testPod(0, "R", "r2")}, "r4", "r5")
	// Live: r2 (a pod's), r4, r5; old: r1, r3; keep 1 → delete r1.
	if len(got) != 1 || got[0].Name != "r1" {
		t.Errorf("truncatable = %v", got)
	}
}

func TestNewPodRevision(t *testing.T) {
	tests := []struct {
		set     *appsv1.StatefulSet
		ordinal int
		want    string
	}{
		{testSet(3), 0, "b"},
		{testSet(3, partition(2)), 1, "a"},
		{testSet(3, partition(2)), 2, "b"},
		{testSet(3, partition(2), startAt(10)), 11, "a"},
		{testSet(3, partition(2), startAt(10)), 12, "b"},
		{testSet(3, onDelete), 0, "b"},
	}
	for i, tt := range tests {
		if got := newPodRevision(tt.set, tt.ordinal, "a", "b"); got != tt.want {
			t.Errorf("%d: newPodRevision = %q, want %q", i, got, tt.want)
		}
	}
}

// TestPlanReportsUnavailable: the rolling update reports its count of unavailable pods
// (upstream's statefulset_unavailable_replicas) only when the plan reaches it with
// maxUnavailable honoured; -1: no report.
func TestPlanReportsUnavailable(t *testing.T) {
	tests := []struct {
		name       string
		set        *appsv1.StatefulSet
		pods       []*corev1.Pod
		oneAtATime bool
		want       int
	}{
		{"all available", testSet(3), []*corev1.Pod{testPod(0, "R", "b"), testPod(1, "R", "b"), testPod(2, "R", "b")}, false, 0},
		{"parallel: missing, pending and unready count", testSet(4, parallel),
			[]*corev1.Pod{testPod(0, "R", "a"), testPod(1, "P", "b"), testPod(2, "U", "a")}, false, 3},
		{"parallel: a terminating pod counts", testSet(2, parallel),
			[]*corev1.Pod{testPod(0, "R", "b"), testPod(1, "T", "b")}, false, 1},
		{"ordered: halted before the rolling update", testSet(3), []*corev1.Pod{testPod(0, "U", "b")}, false, -1},
		{"on delete", testSet(1, onDelete), []*corev1.Pod{testPod(0, "R", "b")}, false, -1},
		{"without MaxUnavailableStatefulSet", testSet(1), []*corev1.Pod{testPod(0, "R", "b")}, true, -1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := -1
			for _, stage := range plan(planInput{set: tt.set, currentRevision: "a", updateRevision: "b", pods: tt.pods, now: now, oneAtATime: tt.oneAtATime}) {
				for _, s := range stage {
					if s.kind == stepReportUnavailable {
						got = s.unavailable
					}
				}
			}
			if got != tt.want {
				t.Errorf("reported %d unavailable, want %d", got, tt.want)
			}
		})
	}
}
