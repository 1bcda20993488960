package podautoscaler

import (
	"errors"
	"fmt"
	"reflect"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The sync's decision: from what was observed (the target's count, the metrics' proposal),
// the count to write, the conditions and the status, as upstream's reconcileAutoscaler.

var (
	cpuMetric      = autoscalingv2.MetricSpec{Type: autoscalingv2.ResourceMetricSourceType}
	externalMetric = autoscalingv2.MetricSpec{Type: autoscalingv2.ExternalMetricSourceType}
	earlier        = metav1.NewTime(t0.Add(-time.Hour))
)

func spec(minReplicas, maxReplicas int32, metrics ...autoscalingv2.MetricSpec) *autoscalingv2.HorizontalPodAutoscalerSpec {
	return &autoscalingv2.HorizontalPodAutoscalerSpec{MinReplicas: &minReplicas, MaxReplicas: maxReplicas, Metrics: metrics}
}

func cond(t autoscalingv2.HorizontalPodAutoscalerConditionType, s corev1.ConditionStatus, reason string) autoscalingv2.HorizontalPodAutoscalerCondition {
	return autoscalingv2.HorizontalPodAutoscalerCondition{Type: t, Status: s, Reason: reason, LastTransitionTime: earlier}
}

func findCondition(st autoscalingv2.HorizontalPodAutoscalerStatus, t autoscalingv2.HorizontalPodAutoscalerConditionType) (autoscalingv2.HorizontalPodAutoscalerCondition, bool) {
	for _, c := range st.Conditions {
		if c.Type == t {
			return c, true
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}, false
}

// reasons lists the conditions as "Type=Status/Reason", in the list's order.
func reasons(st autoscalingv2.HorizontalPodAutoscalerStatus) []string {
	var out []string
	for _, c := range st.Conditions {
		out = append(out, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	return out
}

func TestByCount(t *testing.T) {
	scaledToZero := &autoscalingv2.HorizontalPodAutoscalerStatus{Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
		cond(autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero")}}
	cases := []struct {
		name string
		in   syncInput
		want countDecision
	}{
		{name: "a target at zero is left alone",
			in:   syncInput{Spec: spec(1, 5, externalMetric), Status: &autoscalingv2.HorizontalPodAutoscalerStatus{}, ScaleToZero: true},
			want: countDecision{Disabled: true}},
		{name: "a target the HPA scaled to zero is the External metric's to scale back",
			in:   syncInput{Spec: spec(0, 5, externalMetric), Status: scaledToZero, ScaleToZero: true},
			want: countDecision{Metrics: true, ScaledToZero: true}},
		{name: "a target the HPA scaled to zero goes back when minReplicas was raised",
			in:   syncInput{Spec: spec(2, 5, cpuMetric), Status: scaledToZero, ScaleToZero: true},
			want: countDecision{Metrics: true, ScaledToZero: true}},
		{name: "without HPAScaleToZero the ScaledToZero condition does not count",
			in:   syncInput{Spec: spec(0, 5, externalMetric), Status: scaledToZero},
			want: countDecision{Disabled: true}},
		{name: "above maxReplicas",
			in:   syncInput{Spec: spec(1, 5, cpuMetric), Status: &autoscalingv2.HorizontalPodAutoscalerStatus{}, Current: 8},
			want: countDecision{Desired: 5, Reason: "Current number of replicas above Spec.MaxReplicas"}},
		{name: "below minReplicas",
			in:   syncInput{Spec: spec(3, 5, cpuMetric), Status: &autoscalingv2.HorizontalPodAutoscalerStatus{}, Current: 2},
			want: countDecision{Desired: 3, Reason: "Current number of replicas below Spec.MinReplicas"}},
		{name: "minReplicas unset is 1",
			in:   syncInput{Spec: &autoscalingv2.HorizontalPodAutoscalerSpec{MaxReplicas: 5}, Status: &autoscalingv2.HorizontalPodAutoscalerStatus{}, Current: 1},
			want: countDecision{Metrics: true}},
		{name: "within the bounds the metrics decide",
			in:   syncInput{Spec: spec(1, 5, cpuMetric), Status: &autoscalingv2.HorizontalPodAutoscalerStatus{}, Current: 3},
			want: countDecision{Metrics: true}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := byCount(tc.in); got != tc.want {
				t.Errorf("byCount = %+v, want %+v", got, tc.want)
			}
		})
	}
}

func TestDecide(t *testing.T) {
	old := func() *autoscalingv2.HorizontalPodAutoscalerStatus {
		return &autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 7, LastScaleTime: &earlier,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"),
				cond(autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero"),
			},
		}
	}
	cpuStatus := []autoscalingv2.MetricStatus{{Type: autoscalingv2.ResourceMetricSourceType}}
	valid := &autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "found"}
	failedMetric := &autoscalingv2.HorizontalPodAutoscalerCondition{Type: autoscalingv2.ScalingActive, Status: corev1.ConditionFalse, Reason: "FailedGetResourceMetric", Message: "no metrics"}
	cpu := "cpu resource utilization (percentage of request)"
	gen := int64(4)
	scaleErr := &scaleError{Cause: errors.New("not found"), err: errors.New("failed to query scale subresource for Deployment/ns/web: not found")}

	cases := []struct {
		name string
		in   syncInput
		// want: the plan's decision, its status' counts, and its conditions in order.
		rescale, metricsFailed bool
		desired                int32
		reason                 string
		current, statusDesired int32
		metrics                int
		conditions             []string
		history                bool
	}{
		{name: "the scale cannot be read: only AbleToScale changes",
			in:      syncInput{Spec: spec(1, 10, cpuMetric), ScaleErr: scaleErr, Generation: &gen},
			current: 3, statusDesired: 7,
			conditions: []string{"AbleToScale=False/FailedGetScale", "ScaledToZero=False/NotScaledToZero"}},
		{name: "a target at zero: scaling disabled, ScaledToZero dropped without HPAScaleToZero",
			in:         syncInput{Spec: spec(1, 10, cpuMetric), Current: 0},
			conditions: []string{"AbleToScale=True/SucceededGetScale", "ScalingActive=False/ScalingDisabled"},
			history:    true},
		{name: "a target at zero keeps ScaledToZero with HPAScaleToZero",
			in:         syncInput{Spec: spec(1, 10, cpuMetric), Current: 0, ScaleToZero: true},
			conditions: []string{"AbleToScale=True/SucceededGetScale", "ScaledToZero=False/NotScaledToZero", "ScalingActive=False/ScalingDisabled"},
			history:    true},
		{name: "above maxReplicas: brought down without reading the metrics",
			in:      syncInput{Spec: spec(1, 10, cpuMetric), Current: 12},
			rescale: true, desired: 10, reason: "Current number of replicas above Spec.MaxReplicas",
			current: 12, statusDesired: 10,
			conditions: []string{"AbleToScale=True/SucceededGetScale", "ScaledToZero=False/NotScaledToZero"},
			history:    true},
		{name: "below minReplicas: brought up",
			in:      syncInput{Spec: spec(4, 10, cpuMetric), Current: 2},
			rescale: true, desired: 4, reason: "Current number of replicas below Spec.MinReplicas",
			current: 2, statusDesired: 4,
			conditions: []string{"AbleToScale=True/SucceededGetScale", "ScaledToZero=False/NotScaledToZero"},
			history:    true},
		{name: "no metric computed: the last desired count is kept, ScalingActive says why",
			in: syncInput{Spec: spec(1, 10, cpuMetric), Current: 3,
				Proposal: &proposal{Replicas: -1, Statuses: cpuStatus, Active: failedMetric}, MetricsErr: errors.New("no metrics")},
			metricsFailed: true, desired: 3, current: 3, statusDesired: 7, metrics: 1,
			conditions: []string{"AbleToScale=True/SucceededGetScale", "ScaledToZero=False/NotScaledToZero", "ScalingActive=False/FailedGetResourceMetric"},
			history:    true},
		{name: "a metric above target scales up",
			in:      syncInput{Spec: spec(1, 10, cpuMetric), Current: 3, Proposal: &proposal{Replicas: 5, Metric: cpu, Statuses: cpuStatus, Active: valid}},
			rescale: true, desired: 5, reason: cpu + " above target", current: 3, statusDesired: 5, metrics: 1,
			conditions: []string{"AbleToScale=True/ReadyForNewScale", "ScaledToZero=False/NotScaledToZero", "ScalingActive=True/ValidMetricFound", "ScalingLimited=False/DesiredWithinRange"},
			history:    true},
		{name: "a scale-up at most doubles without behavior",
			in:      syncInput{Spec: spec(1, 20, cpuMetric), Current: 3, Proposal: &proposal{Replicas: 15, Metric: cpu, Statuses: cpuStatus, Active: valid}},
			rescale: true, desired: 6, reason: cpu + " above target", current: 3, statusDesired: 6, metrics: 1,
			conditions: []string{"AbleToScale=True/ReadyForNewScale", "ScaledToZero=False/NotScaledToZero", "ScalingActive=True/ValidMetricFound", "ScalingLimited=True/ScaleUpLimit"},
			history:    true},
		{name: "some metrics failed but the others scale up: scaled",
			in: syncInput{Spec: spec(1, 10, cpuMetric, externalMetric), Current: 3,
				Proposal: &proposal{Replicas: 4, Metric: cpu, Statuses: append(cpuStatus, autoscalingv2.MetricStatus{}), Active: valid}, MetricsErr: errors.New("external failed")},
			rescale: true, desired: 4, reason: cpu + " above target", current: 3, statusDesired: 4, metrics: 2,
			conditions: []string{"AbleToScale=True/ReadyForNewScale", "ScaledToZero=False/NotScaledToZero", "ScalingActive=True/ValidMetricFound", "ScalingLimited=False/DesiredWithinRange"},
			history:    true},
		{name: "a scale-down waits for the window's highest recommendation",
			in: syncInput{Spec: spec(1, 10, cpuMetric), Current: 3, Window: 5 * time.Minute,
				History:  recs(recommendation{3, ago(time.Minute)}),
				Proposal: &proposal{Replicas: 1, Metric: cpu, Statuses: cpuStatus, Active: valid}},
			desired: 3, reason: "All metrics below target", current: 3, statusDesired: 3, metrics: 1,
			conditions: []string{"AbleToScale=True/ScaleDownStabilized", "ScaledToZero=False/NotScaledToZero", "ScalingActive=True/ValidMetricFound", "ScalingLimited=False/DesiredWithinRange"},
			history:    true},
		{name: "a scale-down once the window is past",
			in: syncInput{Spec: spec(1, 10, cpuMetric), Current: 3, Window: 5 * time.Minute,
				History:  recs(recommendation{3, ago(10 * time.Minute)}),
				Proposal: &proposal{Replicas: 1, Metric: cpu, Statuses: cpuStatus, Active: valid}},
			rescale: true, desired: 1, reason: "All metrics below target", current: 3, statusDesired: 1, metrics: 1,
			conditions: []string{"AbleToScale=True/ReadyForNewScale", "ScaledToZero=False/NotScaledToZero", "ScalingActive=True/ValidMetricFound", "ScalingLimited=False/DesiredWithinRange"},
			history:    true},
		{name: "scaled to zero, back up on an External metric (HPAScaleToZero)",
			in: syncInput{Spec: spec(0, 10, externalMetric), Current: 0, ScaleToZero: true,
				Status: &autoscalingv2.HorizontalPodAutoscalerStatus{Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
					cond(autoscalingv2.ScaledToZero, corev1.ConditionTrue, "ScaledToZero")}},
				Proposal: &proposal{Replicas: 2, Metric: "external metric queue(nil)", Active: valid}},
			rescale: true, desired: 2, reason: "external metric queue(nil) above target", current: 0, statusDesired: 2,
			conditions: []string{"ScaledToZero=True/ScaledToZero", "AbleToScale=True/ReadyForNewScale", "ScalingActive=True/ValidMetricFound", "ScalingLimited=False/DesiredWithinRange"},
			history:    true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			in := tc.in
			in.Now = t0
			if in.Status == nil {
				in.Status = old()
			}
			before, beforeHistory := in.Status.DeepCopy(), in.History.clone()
			p := decide(in)
			if p.Rescale != tc.rescale || p.MetricsFailed != tc.metricsFailed || p.Desired != tc.desired || p.Reason != tc.reason {
				t.Errorf("plan: rescale %v, metrics failed %v, desired %d, reason %q; want %v, %v, %d, %q",
					p.Rescale, p.MetricsFailed, p.Desired, p.Reason, tc.rescale, tc.metricsFailed, tc.desired, tc.reason)
			}
			st := p.Status
			if st.CurrentReplicas != tc.current || st.DesiredReplicas != tc.statusDesired || len(st.CurrentMetrics) != tc.metrics {
				t.Errorf("status: current %d, desired %d, %d metrics; want %d, %d, %d",
					st.CurrentReplicas, st.DesiredReplicas, len(st.CurrentMetrics), tc.current, tc.statusDesired, tc.metrics)
			}
			if got := reasons(st); !reflect.DeepEqual(got, tc.conditions) {
				t.Errorf("conditions %v, want %v", got, tc.conditions)
			}
			if (p.History != nil) != tc.history {
				t.Errorf("history kept: %v, want %v", p.History != nil, tc.history)
			}
			if !reflect.DeepEqual(in.Status, before) || !reflect.DeepEqual(in.History.clone(), beforeHistory) {
				t.Error("decide changed its input")
			}
		})
	}
}

// The status is rebuilt from the sync: observedGeneration only with HPAGeneration (and not
// when the scale could not be read), the last scale time kept, transition times moved only
// by a change of status.
func TestDecideStatus(t *testing.T) {
	gen := int64(4)
	in := syncInput{Spec: spec(1, 10, cpuMetric), Current: 3, Now: t0, Generation: &gen,
		Status: &autoscalingv2.HorizontalPodAutoscalerStatus{
			CurrentReplicas: 3, DesiredReplicas: 3, LastScaleTime: &earlier,
			Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
				cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"),
				cond(autoscalingv2.ScalingActive, corev1.ConditionFalse, "FailedGetResourceMetric"),
			}},
		Proposal: &proposal{Replicas: 3, Metric: "cpu", Active: &autoscalingv2.HorizontalPodAutoscalerCondition{
			Type: autoscalingv2.ScalingActive, Status: corev1.ConditionTrue, Reason: "ValidMetricFound", Message: "the HPA was able to successfully calculate a replica count from cpu"}}}
	p := decide(in)
	if p.Rescale {
		t.Fatalf("rescale at the current count")
	}
	st := p.Status
	if st.ObservedGeneration == nil || *st.ObservedGeneration != 4 {
		t.Errorf("observedGeneration %v, want 4", st.ObservedGeneration)
	}
	if st.LastScaleTime == nil || !st.LastScaleTime.Equal(&earlier) {
		t.Errorf("lastScaleTime %v, want the one read", st.LastScaleTime)
	}
	able, _ := findCondition(st, autoscalingv2.AbleToScale)
	if !able.LastTransitionTime.Equal(&earlier) {
		t.Errorf("AbleToScale stayed True, its transition time moved to %v", able.LastTransitionTime)
	}
	active, _ := findCondition(st, autoscalingv2.ScalingActive)
	if !active.LastTransitionTime.Time.Equal(t0) || active.Message != "the HPA was able to successfully calculate a replica count from cpu" {
		t.Errorf("ScalingActive turned True: %+v, want its transition at %v", active, t0)
	}

	in.Generation = nil
	if p := decide(in); p.Status.ObservedGeneration != nil {
		t.Errorf("observedGeneration written without HPAGeneration")
	}
	in.Generation = &gen
	in.ScaleErr = &scaleError{Cause: errors.New("no such kind"), err: errors.New("unable to determine resource for scale target reference: no such kind")}
	p = decide(in)
	if p.Status.ObservedGeneration != nil {
		t.Errorf("observedGeneration written on a failed scale read")
	}
	able, _ = findCondition(p.Status, autoscalingv2.AbleToScale)
	if want := "the HPA controller was unable to get the target's current scale: no such kind"; able.Message != want {
		t.Errorf("AbleToScale message %q, want %q (the cause, as upstream)", able.Message, want)
	}
}

// After the /scale write: its outcome in AbleToScale, the rescale in the history and the last
// scale time, and ScaledToZero set on every rescale with HPAScaleToZero.
func TestRescaled(t *testing.T) {
	rules := &autoscalingv2.HPAScalingRules{Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 4, PeriodSeconds: 60}}}
	behavior := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: rules, ScaleDown: rules}
	now := t0.Add(time.Second)
	cases := []struct {
		name             string
		spec             *autoscalingv2.HorizontalPodAutoscalerSpec
		current, desired int32
		scaleToZero      bool
		err              error

		statusDesired int32
		scaled        bool
		conditions    []string
		ableMessage   string
		up, down      int
	}{
		{name: "a failed write keeps the last desired count and the history", spec: spec(1, 10, cpuMetric), current: 3, desired: 5,
			err: errors.New("conflict"), statusDesired: 7,
			conditions:  []string{"AbleToScale=False/FailedUpdateScale", "ScaledToZero=False/NotScaledToZero"},
			ableMessage: "the HPA controller was unable to update the target scale: conflict"},
		{name: "a scale-up is recorded; ScaledToZero is dropped without HPAScaleToZero", spec: spec(1, 10, cpuMetric), current: 3, desired: 5,
			statusDesired: 5, scaled: true, up: 1,
			conditions:  []string{"AbleToScale=True/SucceededRescale"},
			ableMessage: "the HPA controller was able to update the target scale to 5"},
		{name: "HPAScaleToZero: a scale-down not to zero", spec: spec(1, 10, cpuMetric), current: 5, desired: 3, scaleToZero: true,
			statusDesired: 3, scaled: true, down: 1,
			conditions:  []string{"AbleToScale=True/SucceededRescale", "ScaledToZero=False/NotScaledToZero"},
			ableMessage: "the HPA controller was able to update the target scale to 3"},
		{name: "HPAScaleToZero: scaled to zero on an External metric", spec: spec(0, 10, externalMetric), current: 2, desired: 0, scaleToZero: true,
			statusDesired: 0, scaled: true, down: 1,
			conditions:  []string{"AbleToScale=True/SucceededRescale", "ScaledToZero=True/ScaledToZero"},
			ableMessage: "the HPA controller was able to update the target scale to 0"},
		{name: "HPAScaleToZero: to zero without an Object or External metric is not ScaledToZero", spec: spec(0, 10, cpuMetric), current: 2, desired: 0, scaleToZero: true,
			statusDesired: 0, scaled: true, down: 1,
			conditions:  []string{"AbleToScale=True/SucceededRescale", "ScaledToZero=False/NotScaledToZero"},
			ableMessage: "the HPA controller was able to update the target scale to 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.spec.Behavior = behavior
			in := syncInput{Spec: tc.spec, Current: tc.current, ScaleToZero: tc.scaleToZero, Now: t0,
				Status: &autoscalingv2.HorizontalPodAutoscalerStatus{DesiredReplicas: 7, LastScaleTime: &earlier,
					Conditions: []autoscalingv2.HorizontalPodAutoscalerCondition{
						cond(autoscalingv2.AbleToScale, corev1.ConditionTrue, "ReadyForNewScale"),
						cond(autoscalingv2.ScaledToZero, corev1.ConditionFalse, "NotScaledToZero")}}}
			p := plan{Status: rebuilt(*in.Status.DeepCopy(), in, tc.desired, nil), History: &history{}, Rescale: true, Desired: tc.desired}
			before := p.Status.DeepCopy()
			got := rescaled(in, p, tc.err, now)
			if !reflect.DeepEqual(&p.Status, before) || len(p.History.ScaleUp)+len(p.History.ScaleDown) != 0 {
				t.Error("rescaled changed the plan it was given")
			}
			st := got.Status
			if st.DesiredReplicas != tc.statusDesired {
				t.Errorf("desired %d, want %d", st.DesiredReplicas, tc.statusDesired)
			}
			if r := reasons(st); !reflect.DeepEqual(r, tc.conditions) {
				t.Errorf("conditions %v, want %v", r, tc.conditions)
			}
			able, _ := findCondition(st, autoscalingv2.AbleToScale)
			if able.Message != tc.ableMessage {
				t.Errorf("AbleToScale message %q, want %q", able.Message, tc.ableMessage)
			}
			wantScaleTime := earlier
			if tc.scaled {
				wantScaleTime = metav1.NewTime(now)
			}
			if st.LastScaleTime == nil || !st.LastScaleTime.Equal(&wantScaleTime) {
				t.Errorf("lastScaleTime %v, want %v", st.LastScaleTime, wantScaleTime)
			}
			if len(got.History.ScaleUp) != tc.up || len(got.History.ScaleDown) != tc.down {
				t.Errorf("rescales recorded: %d up, %d down; want %d, %d", len(got.History.ScaleUp), len(got.History.ScaleDown), tc.up, tc.down)
			}
		})
	}
}

// getScale's one error carries the cause the condition and the Event report, and the
// context the sync returns, errSpec among it for a spec error.
func TestScaleCause(t *testing.T) {
	cause := errors.New("unexpected GroupVersion string: a/b/c")
	err := error(&scaleError{Cause: cause, err: fmt.Errorf("invalid API version in scale target reference: %v%w", cause, errSpec)})
	if scaleCause(err) != cause {
		t.Errorf("scaleCause = %v, want %v", scaleCause(err), cause)
	}
	if !errors.Is(err, errSpec) {
		t.Error("a spec error is not errSpec")
	}
	if want := "invalid API version in scale target reference: unexpected GroupVersion string: a/b/c"; err.Error() != want {
		t.Errorf("error %q, want %q", err.Error(), want)
	}
}
