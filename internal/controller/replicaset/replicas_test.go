package replicaset

import (
	"errors"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func testPod(name, node string, ready bool) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: name, UID: types.UID(name), Namespace: "ns"}}
	p.Spec.NodeName = node
	p.Status.Phase = corev1.PodRunning
	if ready {
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	}
	return p
}

func TestPodsToDelete(t *testing.T) {
	now := time.Now()
	a, b, c := testPod("a", "n1", true), testPod("b", "n2", false), testPod("c", "n1", true)
	if got := podsToDelete([]*corev1.Pod{a, b, c}, nil, 1, true, now); got[0] != b {
		t.Errorf("the not-ready pod goes first, got %s", got[0].Name)
	}
	// Siblings crowd n1: of two ready pods, the one on n1 goes.
	d := testPod("d", "n3", true)
	related := []*corev1.Pod{testPod("x", "n1", true), testPod("y", "n1", true)}
	if got := podsToDelete([]*corev1.Pod{d, a}, related, 1, true, now); got[0] != a {
		t.Errorf("the pod on the crowded node goes first, got %s", got[0].Name)
	}
	if got := podsToDelete([]*corev1.Pod{a, b}, nil, 5, true, now); len(got) != 2 {
		t.Errorf("n beyond the pods returns them all")
	}
}

func TestCalculateStatus(t *testing.T) {
	now := time.Now()
	rs := &appsv1.ReplicaSet{Spec: appsv1.ReplicaSetSpec{Replicas: new(int32(3)), MinReadySeconds: 10}}
	rs.Spec.Template.Labels = map[string]string{"app": "x", "tier": "y"}
	fully := testPod("a", "n", true)
	fully.Labels = map[string]string{"app": "x", "tier": "y"}
	fully.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now.Add(-time.Minute))
	partly := testPod("b", "n", true)
	partly.Labels = map[string]string{"app": "x"}
	partly.Status.Conditions[0].LastTransitionTime = metav1.NewTime(now)

	st := calculateStatus(rs, []*corev1.Pod{fully, partly}, []*corev1.Pod{testPod("t", "n", false)}, errors.New("exceeded quota"), true, now)
	if st.Replicas != 2 || st.FullyLabeledReplicas != 1 || st.ReadyReplicas != 2 || st.AvailableReplicas != 1 || *st.TerminatingReplicas != 1 {
		t.Errorf("counts wrong: %+v", st)
	}
	if len(st.Conditions) != 1 || st.Conditions[0].Reason != "FailedCreate" || st.Conditions[0].Message != "exceeded quota" {
		t.Errorf("conditions = %+v", st.Conditions)
	}

	rs.Status = st
	rs.Spec.Replicas = new(int32(1))
	st = calculateStatus(rs, []*corev1.Pod{fully, partly}, nil, errors.New("forbidden"), false, now)
	if st.Conditions[0].Reason != "FailedCreate" || st.Conditions[0].Message != "exceeded quota" {
		t.Errorf("an existing failure condition is kept as it is: %+v", st.Conditions)
	}
	if st.TerminatingReplicas != nil {
		t.Errorf("no terminatingReplicas for kinds without the field")
	}
	rs.Status.Conditions = nil
	st = calculateStatus(rs, []*corev1.Pod{fully, partly}, nil, errors.New("forbidden"), false, now)
	if st.Conditions[0].Reason != "FailedDelete" {
		t.Errorf("too many pods: FailedDelete, got %+v", st.Conditions)
	}
	rs.Status = st
	if st = calculateStatus(rs, nil, nil, nil, false, now); len(st.Conditions) != 0 {
		t.Errorf("success clears ReplicaFailure: %+v", st.Conditions)
	}
}

func TestReplicationControllerView(t *testing.T) {
	tmpl := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}}}
	rc := &corev1.ReplicationController{
		ObjectMeta: metav1.ObjectMeta{Name: "rc", UID: "u", Generation: 3},
		Spec:       corev1.ReplicationControllerSpec{Replicas: new(int32(2)), Selector: map[string]string{"app": "x"}, Template: &tmpl, MinReadySeconds: 4},
		Status: corev1.ReplicationControllerStatus{Conditions: []corev1.ReplicationControllerCondition{{
			Type: corev1.ReplicationControllerReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate",
		}}},
	}
	rs := ReplicationControllerKind.View(rc)
	if *rs.Spec.Replicas != 2 || rs.Spec.Selector.MatchLabels["app"] != "x" || rs.Spec.Template.Labels["app"] != "x" || rs.Spec.MinReadySeconds != 4 || rs.UID != "u" {
		t.Errorf("view = %+v", rs)
	}
	*rs.Spec.Replicas = 9
	rs.Spec.Selector.MatchLabels["app"] = "changed"
	if *rc.Spec.Replicas != 2 || rc.Spec.Selector["app"] != "x" {
		t.Errorf("the view shares memory with the ReplicationController")
	}
	status := rs.Status
	status.Replicas = 5
	ReplicationControllerKind.SetStatus(rc, status)
	if rc.Status.Replicas != 5 || len(rc.Status.Conditions) != 1 || rc.Status.Conditions[0].Reason != "FailedCreate" {
		t.Errorf("status = %+v", rc.Status)
	}
	noSelector := &corev1.ReplicationController{}
	if ReplicationControllerKind.View(noSelector).Spec.Selector != nil {
		t.Errorf("a nil selector must stay nil (selects nothing)")
	}
}
