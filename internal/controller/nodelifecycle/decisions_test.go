package nodelifecycle

import (
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var t0 = time.Date(2026, 11, 22, 12, 0, 0, 0, time.UTC)

func nodeWith(ready *corev1.NodeCondition) *corev1.Node {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour))}}
	if ready != nil {
		n.Status.Conditions = []corev1.NodeCondition{*ready}
	}
	return n
}

func readyAt(heartbeat, transition time.Time) *corev1.NodeCondition {
	return &corev1.NodeCondition{Type: corev1.NodeReady, Status: corev1.ConditionTrue,
		LastHeartbeatTime: metav1.NewTime(heartbeat), LastTransitionTime: metav1.NewTime(transition)}
}

func leaseRenewed(at time.Time) *coordinationv1.Lease {
	mt := metav1.NewMicroTime(at)
	return &coordinationv1.Lease{Spec: coordinationv1.LeaseSpec{RenewTime: &mt}}
}

func TestObserve(t *testing.T) {
	now := t0
	later := t0.Add(10 * time.Second)
	never := nodeWith(nil)

	h := observe(nil, never, nil, now)
	if !h.probe.Equal(never.CreationTimestamp.Time) {
		t.Errorf("a node that never reported is probed from its creation, got %v", h.probe)
	}

	cond := readyAt(t0.Add(-time.Minute), t0.Add(-time.Hour))
	h = observe(nil, nodeWith(cond), nil, now)
	if !h.probe.Equal(now) || !h.readyTransition.Equal(now) {
		t.Errorf("first sighting counts as alive now: %+v", h)
	}
	if same := observe(h, nodeWith(cond), nil, later); !same.probe.Equal(now) {
		t.Errorf("no new heartbeat: the probe stays, got %v", same.probe)
	}
	beat := readyAt(t0.Add(5*time.Second), t0.Add(-time.Hour))
	if hb := observe(h, nodeWith(beat), nil, later); !hb.probe.Equal(later) || !hb.readyTransition.Equal(now) {
		t.Errorf("a new heartbeat is a probe, not a transition: %+v", hb)
	}
	flipped := readyAt(t0.Add(5*time.Second), t0.Add(5*time.Second))
	if tr := observe(h, nodeWith(flipped), nil, later); !tr.readyTransition.Equal(later) {
		t.Errorf("a new transition time is a transition: %+v", tr)
	}

	withLease := observe(h, nodeWith(cond), leaseRenewed(t0.Add(-time.Hour)), later)
	if !withLease.probe.Equal(later) {
		t.Errorf("a first-seen lease renewal is a probe, got %v", withLease.probe)
	}
	if again := observe(withLease, nodeWith(cond), leaseRenewed(t0.Add(-time.Hour)), later.Add(time.Minute)); !again.probe.Equal(later) {
		t.Errorf("the same renewal again is no probe, got %v", again.probe)
	}
	// The kubelet's clock does not matter: a renewal stamped in the past still counts now.
	if renewed := observe(withLease, nodeWith(cond), leaseRenewed(t0.Add(-time.Hour+time.Second)), later.Add(time.Minute)); !renewed.probe.Equal(later.Add(time.Minute)) {
		t.Errorf("a newer renewal is a probe at kcm's now, got %v", renewed.probe)
	}
}

func TestConditionsUnknown(t *testing.T) {
	node := nodeWith(readyAt(t0, t0))
	node.Status.Conditions = append(node.Status.Conditions, corev1.NodeCondition{Type: corev1.NodeDiskPressure, Status: corev1.ConditionUnknown, Reason: "Earlier"})
	conds, changed := conditionsUnknown(node, t0)
	if !changed {
		t.Fatal("Ready went Unknown")
	}
	byType := map[corev1.NodeConditionType]corev1.NodeCondition{}
	for _, c := range conds {
		byType[c.Type] = c
	}
	if c := byType[corev1.NodeReady]; c.Status != corev1.ConditionUnknown || c.Reason != "NodeStatusUnknown" || c.Message != "Kubelet stopped posting node status." {
		t.Errorf("Ready = %+v", c)
	}
	if c := byType[corev1.NodeMemoryPressure]; c.Reason != "NodeStatusNeverUpdated" || c.Status != corev1.ConditionUnknown {
		t.Errorf("a missing condition is added as never updated: %+v", c)
	}
	if c := byType[corev1.NodeDiskPressure]; c.Reason != "Earlier" {
		t.Errorf("an Unknown condition is kept as it is: %+v", c)
	}
	if len(node.Status.Conditions) != 2 {
		t.Errorf("the input was modified")
	}
	node.Status.Conditions = conds
	if _, again := conditionsUnknown(node, t0); again {
		t.Errorf("already Unknown: nothing changes")
	}
}

func TestNoScheduleTaints(t *testing.T) {
	node := &corev1.Node{}
	node.Spec.Unschedulable = true
	node.Status.Conditions = []corev1.NodeCondition{
		{Type: corev1.NodeReady, Status: corev1.ConditionFalse},
		{Type: corev1.NodeDiskPressure, Status: corev1.ConditionTrue},
		{Type: corev1.NodePIDPressure, Status: corev1.ConditionFalse},
	}
	node.Spec.Taints = []corev1.Taint{
		{Key: "custom", Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeMemoryPressure, Effect: corev1.TaintEffectNoSchedule},
		{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute},
	}
	taints, changed := noScheduleTaints(node)
	var got []string
	for _, tn := range taints {
		got = append(got, tn.Key+":"+string(tn.Effect))
	}
	want := []string{"custom:NoSchedule", corev1.TaintNodeNotReady + ":NoExecute", corev1.TaintNodeDiskPressure + ":NoSchedule",
		corev1.TaintNodeNotReady + ":NoSchedule", corev1.TaintNodeUnschedulable + ":NoSchedule"}
	if !changed || !slices.Equal(got, want) {
		t.Errorf("taints = %v (changed %v), want %v", got, changed, want)
	}
	node.Spec.Taints = taints
	if _, again := noScheduleTaints(node); again {
		t.Errorf("in line: nothing to change")
	}
}

func TestWithNoExecute(t *testing.T) {
	custom := corev1.Taint{Key: "custom", Effect: corev1.TaintEffectNoExecute}
	notReady := corev1.Taint{Key: corev1.TaintNodeNotReady, Effect: corev1.TaintEffectNoExecute}
	taints, changed := withNoExecute([]corev1.Taint{custom, notReady}, corev1.TaintNodeUnreachable, t0)
	if !changed || len(taints) != 2 || taints[0] != custom || taints[1].Key != corev1.TaintNodeUnreachable || !taints[1].TimeAdded.Time.Equal(t0) {
		t.Errorf("swap: %+v", taints)
	}
	if _, again := withNoExecute(taints, corev1.TaintNodeUnreachable, t0.Add(time.Hour)); again {
		t.Errorf("already present: no change (and timeAdded kept)")
	}
	if cleared, _ := withNoExecute(taints, "", t0); len(cleared) != 1 || cleared[0] != custom {
		t.Errorf("ready: only others' taints stay, got %+v", cleared)
	}
}

func TestZones(t *testing.T) {
	T, F, U := corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	states := []struct {
		ready []corev1.ConditionStatus
		want  zoneState
	}{
		{[]corev1.ConditionStatus{T, T, T}, stateNormal},
		{[]corev1.ConditionStatus{U, F}, stateFullDisruption},
		{[]corev1.ConditionStatus{T, U, U}, stateNormal},               // two not ready are never a partial outage
		{[]corev1.ConditionStatus{T, U, U, U}, statePartialDisruption}, // 3 of 4 ≥ 55%
		{[]corev1.ConditionStatus{T, T, T, U, U, U}, stateNormal},      // 3 of 6 < 55%
	}
	for _, s := range states {
		if got := computeZoneState(s.ready, 0.55); got != s.want {
			t.Errorf("%v: %s, want %s", s.ready, got, s.want)
		}
	}
	rates := evictionRates{primary: 0.1, secondary: 0.01, largeClusterThreshold: 50}
	if zoneRate(stateNormal, 10, rates) != 0.1 || zoneRate(stateFullDisruption, 10, rates) != 0.1 ||
		zoneRate(statePartialDisruption, 51, rates) != 0.01 || zoneRate(statePartialDisruption, 50, rates) != 0 {
		t.Errorf("zone rates are wrong")
	}
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: "z"}}}
	if zoneKey(n) != "r:\x00:z" || zoneKey(&corev1.Node{}) != "" {
		t.Errorf("zone keys are wrong")
	}
}

func TestBetaLabels(t *testing.T) {
	in := map[string]string{corev1.LabelOSStable: "linux", "beta.kubernetes.io/arch": "amd64"}
	out, changed := betaLabels(in)
	if !changed || out["beta.kubernetes.io/os"] != "linux" || out["beta.kubernetes.io/arch"] != "amd64" || len(in) != 2 {
		t.Errorf("labels = %v (input %v)", out, in)
	}
	if _, again := betaLabels(out); again {
		t.Errorf("in line: nothing to change")
	}
}

func TestDeadlineOnTheMonitorGrid(t *testing.T) {
	r := &Reconciler{MonitorPeriod: 5 * time.Second, MonitorGracePeriod: 50 * time.Second, StartupGracePeriod: time.Minute}
	ready := nodeWith(readyAt(t0, t0))
	for _, tt := range []struct{ probe, want time.Time }{
		{t0, t0.Add(50 * time.Second)},                              // already on the grid
		{t0.Add(time.Second), t0.Add(55 * time.Second)},             // rounded up
		{t0.Add(4900 * time.Millisecond), t0.Add(55 * time.Second)}, // nodes silent within one period
		{t0.Add(5100 * time.Millisecond), t0.Add(60 * time.Second)}, // fall together
	} {
		if got := r.deadline(ready, &health{probe: tt.probe}); !got.Equal(tt.want) {
			t.Errorf("probe %v: deadline %v, want %v", tt.probe.Sub(t0), got.Sub(t0), tt.want.Sub(t0))
		}
	}
	if got := r.deadline(nodeWith(nil), &health{probe: t0}); !got.Equal(t0.Add(time.Minute)) {
		t.Errorf("a node that never reported has the startup grace period, got %v", got.Sub(t0))
	}
}
