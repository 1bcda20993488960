package deployment

import (
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func progressing(reason string, status corev1.ConditionStatus, updated time.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: status, Reason: reason,
		LastUpdateTime: metav1.NewTime(updated), LastTransitionTime: metav1.NewTime(updated)}
}

func TestSetCondition(t *testing.T) {
	t0, t1 := metav1.NewTime(epoch), metav1.NewTime(epoch.Add(time.Minute))
	status := appsv1.DeploymentStatus{}
	setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "A", "m", t0))
	setCondition(&status, newCondition(appsv1.DeploymentProgressing, corev1.ConditionTrue, "P", "m", t0))
	// Same status and reason: nothing changes.
	setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "A", "other", t1))
	if c := getCondition(status, appsv1.DeploymentAvailable); c.Message != "m" || !c.LastUpdateTime.Equal(&t0) {
		t.Errorf("unchanged condition was rewritten: %+v", c)
	}
	// Same status, new reason: replaced, transition time kept, moved last.
	setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionTrue, "B", "m2", t1))
	c := status.Conditions[1]
	if c.Type != appsv1.DeploymentAvailable || c.Reason != "B" || !c.LastTransitionTime.Equal(&t0) || !c.LastUpdateTime.Equal(&t1) {
		t.Errorf("condition = %+v", c)
	}
	// New status: transition time changes.
	setCondition(&status, newCondition(appsv1.DeploymentAvailable, corev1.ConditionFalse, "C", "m3", t1))
	if c := getCondition(status, appsv1.DeploymentAvailable); !c.LastTransitionTime.Equal(&t1) {
		t.Errorf("transition time not updated: %+v", c)
	}
	removeCondition(&status, appsv1.DeploymentAvailable)
	if len(status.Conditions) != 1 || getCondition(status, appsv1.DeploymentAvailable) != nil {
		t.Errorf("conditions after remove = %+v", status.Conditions)
	}
}

func TestCalculateStatus(t *testing.T) {
	d := rolling(newDeployment("d", 10), intstr.FromInt32(2), intstr.FromInt32(2))
	d.Generation = 4
	d.Status.CollisionCount = new(int32(1))
	newOne := newRS("new", 4, 3, 2)
	newOne.Status.Replicas, newOne.Status.ReadyReplicas = 4, 4
	newOne.Status.TerminatingReplicas, newOne.Status.ObservedGeneration = new(int32(1)), 1
	old := newRS("old", 6, 5, 1)
	old.Status.TerminatingReplicas, old.Status.ObservedGeneration = new(int32(2)), 1
	st := calculateStatus([]*appsv1.ReplicaSet{old, newOne}, newOne, d, metav1.NewTime(epoch))
	if st.ObservedGeneration != 4 || st.Replicas != 10 || st.UpdatedReplicas != 4 || st.ReadyReplicas != 9 ||
		st.AvailableReplicas != 8 || st.UnavailableReplicas != 2 || *st.TerminatingReplicas != 3 || *st.CollisionCount != 1 {
		t.Errorf("status = %+v", st)
	}
	if c := getCondition(st, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionTrue || c.Reason != reasonMinimumReplicasAvailable {
		t.Errorf("Available = %+v", c)
	}
	old.Status.AvailableReplicas = 4
	st = calculateStatus([]*appsv1.ReplicaSet{old, newOne}, newOne, d, metav1.NewTime(epoch))
	if c := getCondition(st, appsv1.DeploymentAvailable); c == nil || c.Status != corev1.ConditionFalse || c.Reason != reasonMinimumReplicasUnavailable {
		t.Errorf("Available = %+v", c)
	}
	// More available than the ReplicaSets want (scaling down): unavailable floors at 0.
	st = calculateStatus([]*appsv1.ReplicaSet{newRS("a", 1, 3, 1)}, nil, d, metav1.NewTime(epoch))
	if st.UnavailableReplicas != 0 || st.UpdatedReplicas != 0 {
		t.Errorf("status = %+v", st)
	}
}

func TestRolloutStatusProgressing(t *testing.T) {
	now := epoch.Add(time.Hour)
	complete := func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
		d := newDeployment("d", 2)
		n := newRS("d-new", 2, 2, 1)
		return d, []*appsv1.ReplicaSet{n}, n
	}
	tests := []struct {
		name       string
		setup      func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet)
		wantReason string
		wantStatus corev1.ConditionStatus
		wantMsg    string
		wantAfter  time.Duration
	}{
		{name: "complete", setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
			d, rss, n := complete()
			d.Status.Conditions = []appsv1.DeploymentCondition{progressing(reasonReplicaSetUpdated, corev1.ConditionTrue, now.Add(-time.Minute))}
			return d, rss, n
		}, wantReason: reasonNewRSAvailable, wantStatus: corev1.ConditionTrue, wantMsg: `ReplicaSet "d-new" has successfully progressed.`},
		{name: "progress refreshes the condition", setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
			d := newDeployment("d", 4)
			d.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{
				progressing(reasonNewReplicaSet, corev1.ConditionTrue, now.Add(-5*time.Minute))}}
			n, o := newRS("d-new", 2, 0, 2), newRS("d-old", 3, 3, 1)
			return d, []*appsv1.ReplicaSet{o, n}, n
		}, wantReason: reasonReplicaSetUpdated, wantStatus: corev1.ConditionTrue, wantMsg: `ReplicaSet "d-new" is progressing.`,
			wantAfter: 601 * time.Second},
		{name: "stuck past the deadline", setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
			d := newDeployment("d", 2)
			d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, Conditions: []appsv1.DeploymentCondition{
				progressing(reasonReplicaSetUpdated, corev1.ConditionTrue, now.Add(-11*time.Minute))}}
			n := newRS("d-new", 2, 0, 2)
			return d, []*appsv1.ReplicaSet{n}, n
		}, wantReason: reasonTimedOut, wantStatus: corev1.ConditionFalse, wantMsg: `ReplicaSet "d-new" has timed out progressing.`},
		{name: "stuck within the deadline: check when it passes", setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
			d := newDeployment("d", 2)
			d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, Conditions: []appsv1.DeploymentCondition{
				progressing(reasonReplicaSetUpdated, corev1.ConditionTrue, now.Add(-4*time.Minute))}}
			n := newRS("d-new", 2, 0, 2)
			return d, []*appsv1.ReplicaSet{n}, n
		}, wantReason: reasonReplicaSetUpdated, wantStatus: corev1.ConditionTrue, wantAfter: 6*time.Minute + time.Second},
		{name: "a resync after completion estimates nothing", setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
			d := newDeployment("d", 2)
			d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, Conditions: []appsv1.DeploymentCondition{
				progressing(reasonNewRSAvailable, corev1.ConditionTrue, now.Add(-time.Hour))}}
			n := newRS("d-new", 2, 1, 2)
			return d, []*appsv1.ReplicaSet{n}, n
		}, wantReason: reasonNewRSAvailable, wantStatus: corev1.ConditionTrue},
		{name: "a timeout stays", setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
			d := newDeployment("d", 2)
			d.Status = appsv1.DeploymentStatus{Replicas: 2, UpdatedReplicas: 2, Conditions: []appsv1.DeploymentCondition{
				progressing(reasonTimedOut, corev1.ConditionFalse, now.Add(-time.Hour))}}
			n := newRS("d-new", 2, 0, 2)
			return d, []*appsv1.ReplicaSet{n}, n
		}, wantReason: reasonTimedOut, wantStatus: corev1.ConditionFalse},
		{name: "without a deadline: no Progressing condition", setup: func() (*appsv1.Deployment, []*appsv1.ReplicaSet, *appsv1.ReplicaSet) {
			d, rss, n := complete()
			d.Spec.ProgressDeadlineSeconds = new(int32(2147483647))
			d.Status.Conditions = []appsv1.DeploymentCondition{progressing(reasonReplicaSetUpdated, corev1.ConditionTrue, now)}
			return d, rss, n
		}, wantReason: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d, rss, n := tt.setup()
			st := rolloutStatus(rss, n, d, now)
			c := getCondition(st, appsv1.DeploymentProgressing)
			if tt.wantReason == "" {
				if c != nil {
					t.Fatalf("Progressing = %+v, want none", c)
				}
				return
			}
			if c == nil || c.Reason != tt.wantReason || c.Status != tt.wantStatus || (tt.wantMsg != "" && c.Message != tt.wantMsg) {
				t.Fatalf("Progressing = %+v, want %s/%s %q", c, tt.wantStatus, tt.wantReason, tt.wantMsg)
			}
			if got := progressCheckAfter(d, &st, now); got != tt.wantAfter {
				t.Errorf("progressCheckAfter = %v, want %v", got, tt.wantAfter)
			}
		})
	}
}

func TestRolloutStatusKeepsTransitionTimeOnProgress(t *testing.T) {
	now := epoch.Add(time.Hour)
	d := newDeployment("d", 4)
	start := now.Add(-5 * time.Minute)
	d.Status = appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 1, Conditions: []appsv1.DeploymentCondition{
		progressing(reasonReplicaSetUpdated, corev1.ConditionTrue, start)}}
	n, o := newRS("d-new", 2, 0, 2), newRS("d-old", 3, 3, 1)
	c := getCondition(rolloutStatus([]*appsv1.ReplicaSet{o, n}, n, d, now), appsv1.DeploymentProgressing)
	if !c.LastTransitionTime.Time.Equal(start) || !c.LastUpdateTime.Time.Equal(now) {
		t.Errorf("Progressing = %+v: want transition %v, update %v", c, start, now)
	}
}

func TestRolloutStatusReplicaFailure(t *testing.T) {
	now := epoch
	failure := func(rs *appsv1.ReplicaSet, msg string) *appsv1.ReplicaSet {
		rs.Status.Conditions = []appsv1.ReplicaSetCondition{{Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			Reason: "FailedCreate", Message: msg, LastTransitionTime: metav1.NewTime(now)}}
		return rs
	}
	d := newDeployment("d", 2)
	n, o := failure(newRS("d-new", 2, 0, 2), "quota"), failure(newRS("d-old", 1, 1, 1), "old")
	st := rolloutStatus([]*appsv1.ReplicaSet{o, n}, n, d, now)
	if c := getCondition(st, appsv1.DeploymentReplicaFailure); c == nil || c.Message != "quota" || c.Reason != "FailedCreate" {
		t.Errorf("ReplicaFailure = %+v, want the new ReplicaSet's", c)
	}
	st = rolloutStatus([]*appsv1.ReplicaSet{o, newRS("d-new", 2, 0, 2)}, newRS("d-new", 2, 0, 2), d, now)
	if c := getCondition(st, appsv1.DeploymentReplicaFailure); c == nil || c.Message != "old" {
		t.Errorf("ReplicaFailure = %+v, want the old ReplicaSet's", c)
	}
	d.Status = st
	st = rolloutStatus([]*appsv1.ReplicaSet{newRS("d-new", 2, 0, 2)}, newRS("d-new", 2, 0, 2), d, now)
	if c := getCondition(st, appsv1.DeploymentReplicaFailure); c != nil {
		t.Errorf("ReplicaFailure = %+v, want it gone", c)
	}
}

func TestPausedCondition(t *testing.T) {
	now := metav1.NewTime(epoch)
	tests := []struct {
		name       string
		paused     bool
		cur        string
		noDeadline bool
		want       string
	}{
		{name: "pausing", paused: true, cur: reasonReplicaSetUpdated, want: reasonPaused},
		{name: "still paused", paused: true, cur: reasonPaused, want: ""},
		{name: "resuming", paused: false, cur: reasonPaused, want: reasonResumed},
		{name: "running", paused: false, cur: reasonReplicaSetUpdated, want: ""},
		{name: "a timeout stays", paused: true, cur: reasonTimedOut, want: ""},
		{name: "no deadline: nothing", paused: true, noDeadline: true, want: ""},
		{name: "pausing without a condition", paused: true, want: reasonPaused},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("d", 1)
			d.Spec.Paused = tt.paused
			if tt.noDeadline {
				d.Spec.ProgressDeadlineSeconds = nil
			}
			if tt.cur != "" {
				d.Status.Conditions = []appsv1.DeploymentCondition{progressing(tt.cur, corev1.ConditionTrue, epoch)}
			}
			c := pausedCondition(d, now)
			switch {
			case tt.want == "" && c != nil:
				t.Errorf("pausedCondition = %+v, want none", c)
			case tt.want != "" && (c == nil || c.Reason != tt.want || c.Status != corev1.ConditionUnknown):
				t.Errorf("pausedCondition = %+v, want Unknown/%s", c, tt.want)
			}
		})
	}
}

func TestDeploymentComplete(t *testing.T) {
	d := newDeployment("d", 3)
	d.Generation = 2
	tests := []struct {
		name   string
		status appsv1.DeploymentStatus
		want   bool
	}{
		{name: "done", status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 2}, want: true},
		{name: "old generation", status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 1}},
		{name: "old pods left", status: appsv1.DeploymentStatus{Replicas: 4, UpdatedReplicas: 3, AvailableReplicas: 3, ObservedGeneration: 2}},
		{name: "not available", status: appsv1.DeploymentStatus{Replicas: 3, UpdatedReplicas: 3, AvailableReplicas: 2, ObservedGeneration: 2}},
	}
	for _, tt := range tests {
		if got := deploymentComplete(d, &tt.status); got != tt.want {
			t.Errorf("%s: deploymentComplete = %v, want %v", tt.name, got, tt.want)
		}
	}
}
