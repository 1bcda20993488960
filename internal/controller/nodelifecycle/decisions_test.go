package nodelifecycle

import (
	"maps"
	"slices"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/component-helpers/node/topology"
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
	rates := evictionRates{primary: 0.1, secondary: 0.01, largeClusterThreshold: 50, unhealthyZoneThreshold: 0.55}
	if zoneRate(stateNormal, 10, rates) != 0.1 || zoneRate(stateFullDisruption, 10, rates) != 0.1 ||
		zoneRate(statePartialDisruption, 51, rates) != 0.01 || zoneRate(statePartialDisruption, 50, rates) != 0 {
		t.Errorf("zone rates are wrong")
	}
}

// The zone key is upstream's (component-helpers' GetZoneKey), which prefers the deprecated
// beta labels to the stable ones.
func TestZoneKey(t *testing.T) {
	n := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: "z"}}}
	both := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{
		corev1.LabelTopologyRegion: "r", corev1.LabelTopologyZone: "z",
		corev1.LabelFailureDomainBetaRegion: "old-r", corev1.LabelFailureDomainBetaZone: "old-z",
	}}}
	if topology.GetZoneKey(n) != "r:\x00:z" || topology.GetZoneKey(both) != "old-r:\x00:old-z" || topology.GetZoneKey(&corev1.Node{}) != "" {
		t.Errorf("zone keys are wrong")
	}
}

func TestPlanZones(t *testing.T) {
	T, F, U := corev1.ConditionTrue, corev1.ConditionFalse, corev1.ConditionUnknown
	type ready = map[string][]corev1.ConditionStatus
	type states = map[string]zoneState
	type rates = map[string]float32
	const primary, secondary = 10, 0.5
	settings := evictionRates{primary: primary, secondary: secondary, largeClusterThreshold: 5, unhealthyZoneThreshold: 0.55}
	allDown := states{"a": stateFullDisruption, "b": stateFullDisruption}
	tests := []struct {
		name    string
		prev    states
		ready   ready
		want    states
		rates   rates
		mode    disruptionMode
		changed []string
	}{
		{name: "no node at all: nothing", prev: states{}, ready: ready{}, want: states{}, rates: rates{}},
		{name: "first pass, healthy: Initial to Normal at the primary rate",
			prev: states{}, ready: ready{"a": {T, T}, "b": {T}},
			want: states{"a": stateNormal, "b": stateNormal}, rates: rates{"a": primary, "b": primary}, changed: []string{"a", "b"}},
		{name: "unchanged: no rate set",
			prev: states{"a": stateNormal}, ready: ready{"a": {T, F}},
			want: states{"a": stateNormal}, rates: rates{}},
		{name: "partial disruption of a large zone: the secondary rate",
			prev: states{"a": stateNormal, "b": stateNormal}, ready: ready{"a": {T, T, U, U, U, F}, "b": {T}},
			want: states{"a": statePartialDisruption, "b": stateNormal}, rates: rates{"a": secondary}, changed: []string{"a"}},
		{name: "partial disruption of a small zone (not above --large-cluster-size-threshold): no tainting",
			prev: states{"a": stateNormal, "b": stateNormal}, ready: ready{"a": {T, U, U, U}, "b": {T}},
			want: states{"a": statePartialDisruption, "b": stateNormal}, rates: rates{"a": 0}, changed: []string{"a"}},
		{name: "two unready nodes are never a partial disruption",
			prev: states{"a": stateNormal, "b": stateNormal}, ready: ready{"a": {T, F, U}, "b": {T}},
			want: states{"a": stateNormal, "b": stateNormal}, rates: rates{}},
		{name: "below --unhealthy-zone-threshold: normal",
			prev: states{"a": stateNormal}, ready: ready{"a": {T, T, T, U, U, U}},
			want: states{"a": stateNormal}, rates: rates{}},
		{name: "a fully disrupted zone beside a healthy one taints at the primary rate",
			prev: states{"a": stateNormal, "b": stateNormal}, ready: ready{"a": {U}, "b": {T}},
			want: states{"a": stateFullDisruption, "b": stateNormal}, rates: rates{"a": primary}, changed: []string{"a"}},
		{name: "back to normal from a partial disruption: the primary rate again",
			prev: states{"a": statePartialDisruption, "b": stateNormal}, ready: ready{"a": {T, T, T, T, T, U}, "b": {T}},
			want: states{"a": stateNormal, "b": stateNormal}, rates: rates{"a": primary}, changed: []string{"a"}},
		{name: "every zone fully disrupted: master disruption mode, all tainting stops",
			prev: states{"a": stateNormal, "b": stateFullDisruption}, ready: ready{"a": {U, F}, "b": {U}},
			want: allDown, rates: rates{"a": 0, "b": 0}, mode: modeEnter},
		{name: "still every zone down: nothing changes",
			prev: allDown, ready: ready{"a": {U}, "b": {U}}, want: allDown, rates: rates{}},
		{name: "a node ready again: leaving master disruption mode, every zone's rate reset",
			prev: allDown, ready: ready{"a": {T, U}, "b": {U}},
			want: states{"a": stateNormal, "b": stateFullDisruption}, rates: rates{"a": primary, "b": primary}, mode: modeLeave},
		{name: "leaving into partial disruptions: each zone's rate by its size",
			prev: allDown, ready: ready{"a": {T, U, U, U}, "b": {T, T, U, U, U, U}},
			want: states{"a": statePartialDisruption, "b": statePartialDisruption}, rates: rates{"a": 0, "b": secondary}, mode: modeLeave},
		{name: "a new zone, fully disrupted, in master disruption mode: entered again (new zones start Initial)",
			prev: allDown, ready: ready{"a": {U}, "b": {U}, "c": {U}},
			want:  states{"a": stateFullDisruption, "b": stateFullDisruption, "c": stateFullDisruption},
			rates: rates{"a": 0, "b": 0, "c": 0}, mode: modeEnter},
		{name: "a zone without nodes is gone; the others did not all fall",
			prev: states{"a": stateNormal, "gone": stateFullDisruption}, ready: ready{"a": {T}},
			want: states{"a": stateNormal}, rates: rates{}},
		{name: "the last zone standing goes away: the rest were already down, nothing changes",
			prev: states{"a": stateNormal, "b": stateFullDisruption}, ready: ready{"b": {U}},
			want: states{"b": stateFullDisruption}, rates: rates{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := planZones(tt.prev, tt.ready, settings)
			if !maps.Equal(got.states, tt.want) {
				t.Errorf("states = %v, want %v", got.states, tt.want)
			}
			if !maps.Equal(got.rates, tt.rates) {
				t.Errorf("rates = %v, want %v", got.rates, tt.rates)
			}
			if got.mode != tt.mode {
				t.Errorf("mode = %v, want %v", got.mode, tt.mode)
			}
			if !slices.Equal(got.changed, tt.changed) {
				t.Errorf("changed = %v, want %v", got.changed, tt.changed)
			}
		})
	}
}

func TestNextTickOnTheMonitorGrid(t *testing.T) {
	r := &Reconciler{MonitorPeriod: 5 * time.Second}
	for _, now := range []time.Time{t0, t0.Add(time.Second), t0.Add(4999 * time.Millisecond)} {
		if got := r.nextTick(now); !got.Equal(t0.Add(5*time.Second + time.Millisecond)) {
			t.Errorf("now %v: next tick %v", now.Sub(t0), got.Sub(t0))
		}
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
