package podgc

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func testPod(name string, phase corev1.PodPhase, created time.Time) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, CreationTimestamp: metav1.NewTime(created)},
		Status:     corev1.PodStatus{Phase: phase},
	}
}

func evicted(p *corev1.Pod) *corev1.Pod {
	p.Status.Reason = "Evicted"
	return p
}

func names(pods []*corev1.Pod) string {
	var out []string
	for _, p := range pods {
		out = append(out, p.Name)
	}
	return strings.Join(out, ",")
}

func TestTerminatedToDelete(t *testing.T) {
	tests := []struct {
		name      string
		pods      []*corev1.Pod
		threshold int
		want      string
	}{
		{
			name:      "at the threshold: none",
			pods:      []*corev1.Pod{testPod("a", corev1.PodSucceeded, t0), testPod("b", corev1.PodFailed, t0)},
			threshold: 2,
		},
		{
			name: "above the threshold: the oldest",
			pods: []*corev1.Pod{
				testPod("new", corev1.PodSucceeded, t0.Add(2*time.Second)),
				testPod("old", corev1.PodFailed, t0),
				testPod("mid", corev1.PodSucceeded, t0.Add(time.Second)),
			},
			threshold: 1,
			want:      "old,mid",
		},
		{
			name: "evicted first, however new",
			pods: []*corev1.Pod{
				testPod("old", corev1.PodSucceeded, t0),
				evicted(testPod("new-evicted", corev1.PodFailed, t0.Add(time.Hour))),
				testPod("mid", corev1.PodFailed, t0.Add(time.Minute)),
			},
			threshold: 1,
			want:      "new-evicted,old",
		},
		{
			name: "the Evicted reason counts only on failed pods",
			pods: []*corev1.Pod{
				testPod("old", corev1.PodFailed, t0),
				evicted(testPod("new", corev1.PodSucceeded, t0.Add(time.Hour))),
			},
			threshold: 1,
			want:      "old",
		},
		{
			name: "same creation time: by name",
			pods: []*corev1.Pod{
				testPod("c", corev1.PodSucceeded, t0),
				testPod("a", corev1.PodSucceeded, t0),
				testPod("b", corev1.PodSucceeded, t0),
			},
			threshold: 1,
			want:      "a,b",
		},
		{
			name: "pending, running and unknown pods do not count",
			pods: []*corev1.Pod{
				testPod("pending", corev1.PodPending, t0),
				testPod("running", corev1.PodRunning, t0),
				testPod("unknown", corev1.PodUnknown, t0),
				testPod("done", corev1.PodSucceeded, t0.Add(time.Second)),
			},
			threshold: 1,
		},
		{
			name: "a pod without phase counts as terminated, as upstream",
			pods: []*corev1.Pod{
				testPod("nophase", "", t0),
				testPod("done", corev1.PodSucceeded, t0.Add(time.Second)),
			},
			threshold: 1,
			want:      "nophase",
		},
		{
			name:      "threshold 0 disables",
			pods:      []*corev1.Pod{testPod("a", corev1.PodSucceeded, t0)},
			threshold: 0,
		},
		{
			name:      "negative threshold disables",
			pods:      []*corev1.Pod{testPod("a", corev1.PodSucceeded, t0)},
			threshold: -1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := names(terminatedToDelete(tt.pods, tt.threshold)); got != tt.want {
				t.Errorf("terminatedToDelete = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestIsOutOfService(t *testing.T) {
	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
	node := func(ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
		n := &corev1.Node{Spec: corev1.NodeSpec{Taints: taints}}
		if ready != "" {
			n.Status.Conditions = []corev1.NodeCondition{
				{Type: corev1.NodeMemoryPressure, Status: corev1.ConditionFalse},
				{Type: corev1.NodeReady, Status: ready},
			}
		}
		return n
	}
	tests := []struct {
		name string
		node *corev1.Node
		want bool
	}{
		{"not ready and tainted", node(corev1.ConditionFalse, outOfService), true},
		{"ready unknown and tainted", node(corev1.ConditionUnknown, outOfService), true},
		{"no Ready condition and tainted", node("", outOfService), true},
		{"tainted with another effect: the key decides", node(corev1.ConditionFalse, corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoSchedule}), true},
		{"ready and tainted", node(corev1.ConditionTrue, outOfService), false},
		{"not ready, other taint", node(corev1.ConditionFalse, corev1.Taint{Key: corev1.TaintNodeUnreachable, Effect: corev1.TaintEffectNoExecute}), false},
		{"not ready, no taint", node(corev1.ConditionFalse), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isOutOfService(tt.node); got != tt.want {
				t.Errorf("isOutOfService = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestQuarantine(t *testing.T) {
	q := quarantine{}
	q.add("b", t0.Add(40*time.Second))
	q.add("a", t0.Add(40*time.Second))
	// Seen again later: the quarantine that runs keeps its end.
	q.add("a", t0.Add(60*time.Second))
	q.add("c", t0.Add(60*time.Second))
	if due := q.popDue(t0.Add(39 * time.Second)); len(due) != 0 {
		t.Fatalf("due before the quarantine ended: %v", due)
	}
	if due := strings.Join(q.popDue(t0.Add(40*time.Second)), ","); due != "a,b" {
		t.Fatalf("due at 40s = %q, want a,b", due)
	}
	if due := q.popDue(t0.Add(50 * time.Second)); len(due) != 0 {
		t.Fatalf("popped nodes due again: %v", due)
	}
	// A node popped and still missing starts a new quarantine.
	q.add("a", t0.Add(90*time.Second))
	if due := strings.Join(q.popDue(t0.Add(time.Hour)), ","); due != "a,c" {
		t.Fatalf("due later = %q, want a,c", due)
	}
}

func TestFailedStatus(t *testing.T) {
	cond := &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: ReasonDeletionByPodGC, Message: "PodGC: node no longer exists"}
	earlier := metav1.NewTime(t0.Add(-time.Hour))
	tests := []struct {
		name       string
		conditions []corev1.PodCondition
		cond       *corev1.PodCondition
		wantConds  int
		wantLTT    time.Time
	}{
		{name: "no condition", wantConds: 1},
		{name: "condition added", cond: cond, wantConds: 2, wantLTT: t0},
		{
			name:       "same status: transition time kept",
			conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "Other", LastTransitionTime: earlier}},
			cond:       cond, wantConds: 2, wantLTT: earlier.Time,
		},
		{
			name:       "status changed: transition time now",
			conditions: []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionFalse, LastTransitionTime: earlier}},
			cond:       cond, wantConds: 2, wantLTT: t0,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := testPod("p", corev1.PodRunning, t0)
			p.Generation = 3
			p.Status.Conditions = append([]corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}, tt.conditions...)
			orig := p.DeepCopy()
			got := failedStatus(p, tt.cond, t0)
			if got.Phase != corev1.PodFailed || got.ObservedGeneration != 3 {
				t.Errorf("phase %q observedGeneration %d, want Failed 3", got.Phase, got.ObservedGeneration)
			}
			if len(got.Conditions) != tt.wantConds {
				t.Fatalf("conditions = %+v, want %d", got.Conditions, tt.wantConds)
			}
			if tt.cond != nil {
				c := got.Conditions[1]
				if c.Type != corev1.DisruptionTarget || c.Status != corev1.ConditionTrue || c.Reason != ReasonDeletionByPodGC ||
					c.Message != "PodGC: node no longer exists" || c.ObservedGeneration != 3 || !c.LastTransitionTime.Time.Equal(tt.wantLTT) {
					t.Errorf("DisruptionTarget = %+v", c)
				}
			}
			if p.Status.Phase != orig.Status.Phase || len(p.Status.Conditions) != len(orig.Status.Conditions) {
				t.Errorf("failedStatus changed the pod")
			}
		})
	}
}

func TestStatusPatch(t *testing.T) {
	p := testPod("p", corev1.PodRunning, t0)
	p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}}
	data, err := statusPatch("uid-1", p.Status, failedStatus(p, &corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue}, t0))
	if err != nil {
		t.Fatal(err)
	}
	var patch struct {
		Metadata struct{ UID string } `json:"metadata"`
		Status   map[string]any       `json:"status"`
	}
	if err := json.Unmarshal(data, &patch); err != nil {
		t.Fatal(err)
	}
	if patch.Metadata.UID != "uid-1" || patch.Status["phase"] != "Failed" {
		t.Errorf("patch %s lacks the UID precondition or the phase", data)
	}
	if conds, _ := patch.Status["conditions"].([]any); len(conds) != 1 {
		t.Errorf("patch %s should add only the DisruptionTarget condition", data)
	}
}
