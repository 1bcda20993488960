package podautoscaler

import (
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)

func ago(d time.Duration) time.Time { return t0.Add(-d) }

func recs(rs ...recommendation) *history { return &history{Recommendations: rs} }

// HPAs without behavior: the downscale stabilization window (the flag, 5m by default) keeps
// the highest recent recommendation, and upstream's fixed rate bounds scale-ups.
func TestNormalizeWithoutBehavior(t *testing.T) {
	window := 5 * time.Minute
	cases := []struct {
		name                string
		h                   *history
		lim                 limits
		desired             int32
		want                int32
		ableReason          string
		limited             bool
		limitedReason       string
		wantRecommendations int
	}{
		{name: "within range", h: recs(), lim: limits{Current: 3, Min: 1, Max: 10}, desired: 5,
			want: 5, ableReason: reasonReady, limitedReason: reasonWithinRange, wantRecommendations: 1},
		{name: "scale-down waits for the highest recommendation of the window",
			h:   recs(recommendation{10, ago(4 * time.Minute)}, recommendation{8, ago(2 * time.Minute)}),
			lim: limits{Current: 10, Min: 1, Max: 20}, desired: 5,
			want: 10, ableReason: reasonDownStabilized, limitedReason: reasonWithinRange, wantRecommendations: 3},
		{name: "recommendations older than the window are ignored and their slot reused",
			h:   recs(recommendation{12, ago(6 * time.Minute)}, recommendation{8, ago(2 * time.Minute)}),
			lim: limits{Current: 10, Min: 1, Max: 20}, desired: 5,
			want: 8, ableReason: reasonDownStabilized, limitedReason: reasonWithinRange, wantRecommendations: 2},
		{name: "scale-up at most doubles", h: recs(), lim: limits{Current: 3, Min: 1, Max: 20}, desired: 10,
			want: 6, ableReason: reasonReady, limited: true, limitedReason: reasonUpLimit, wantRecommendations: 1},
		{name: "scale-up may always reach 4", h: recs(), lim: limits{Current: 1, Min: 1, Max: 20}, desired: 10,
			want: 4, ableReason: reasonReady, limited: true, limitedReason: reasonUpLimit, wantRecommendations: 1},
		{name: "maxReplicas below the rate limit", h: recs(), lim: limits{Current: 3, Min: 1, Max: 5}, desired: 10,
			want: 5, ableReason: reasonReady, limited: true, limitedReason: reasonTooMany, wantRecommendations: 1},
		{name: "below minReplicas", h: recs(), lim: limits{Current: 3, Min: 2, Max: 5}, desired: 1,
			want: 2, ableReason: reasonReady, limited: true, limitedReason: reasonTooFew, wantRecommendations: 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := normalize(tc.h, tc.lim, tc.desired, window, t0)
			if n.Replicas != tc.want || n.AbleReason != tc.ableReason || n.Limited != tc.limited || n.LimitedReason != tc.limitedReason {
				t.Errorf("got %+v, want replicas %d, able %s, limited %v %s", n, tc.want, tc.ableReason, tc.limited, tc.limitedReason)
			}
			if len(tc.h.Recommendations) != tc.wantRecommendations {
				t.Errorf("recommendations kept: %d, want %d", len(tc.h.Recommendations), tc.wantRecommendations)
			}
			last := false
			for _, r := range tc.h.Recommendations {
				last = last || (r.Replicas == tc.desired && r.At.Equal(t0))
			}
			if !last {
				t.Errorf("the proposal %d was not recorded: %+v", tc.desired, tc.h.Recommendations)
			}
		})
	}
}

func rules(window int32, sel autoscalingv2.ScalingPolicySelect, policies ...autoscalingv2.HPAScalingPolicy) *autoscalingv2.HPAScalingRules {
	return &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(window), SelectPolicy: ptr.To(sel), Policies: policies}
}

func pods(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PodsScalingPolicy, Value: n, PeriodSeconds: period}
}

func percent(n, period int32) autoscalingv2.HPAScalingPolicy {
	return autoscalingv2.HPAScalingPolicy{Type: autoscalingv2.PercentScalingPolicy, Value: n, PeriodSeconds: period}
}

// The API server's default behavior: scale up by 100% or 4 pods per 15s (the larger), scale
// down by 100% per 15s after a 300s window.
func defaultBehavior() *autoscalingv2.HorizontalPodAutoscalerBehavior {
	return &autoscalingv2.HorizontalPodAutoscalerBehavior{
		ScaleUp:   rules(0, autoscalingv2.MaxChangePolicySelect, percent(100, 15), pods(4, 15)),
		ScaleDown: rules(300, autoscalingv2.MaxChangePolicySelect, percent(100, 15)),
	}
}

// The kubernetes.io HPA documentation's examples of scaling policies, select policies and
// stabilization windows, and upstream's scenarios of rescales within a policy's period.
func TestNormalizeWithBehavior(t *testing.T) {
	// The documentation's scale-down example: 4 pods or 10% per minute, the larger change.
	docDown := func(sel autoscalingv2.ScalingPolicySelect) *autoscalingv2.HorizontalPodAutoscalerBehavior {
		b := defaultBehavior()
		b.ScaleDown = rules(0, sel, pods(4, 60), percent(10, 60))
		return b
	}
	cases := []struct {
		name          string
		b             *autoscalingv2.HorizontalPodAutoscalerBehavior
		h             *history
		lim           limits
		desired       int32
		want          int32
		ableReason    string
		limitedReason string
	}{
		{name: "default scale-up: 4 pods beat 100% of 1", b: defaultBehavior(), h: &history{},
			lim: limits{1, 1, 100}, desired: 10, want: 5, ableReason: reasonReady, limitedReason: reasonUpLimit},
		{name: "default scale-up: 100% beats 4 pods of 10", b: defaultBehavior(), h: &history{},
			lim: limits{10, 1, 100}, desired: 50, want: 20, ableReason: reasonReady, limitedReason: reasonUpLimit},
		{name: "scale-up within the rate is not limited", b: defaultBehavior(), h: &history{},
			lim: limits{10, 1, 100}, desired: 15, want: 15, ableReason: reasonReady, limitedReason: reasonWithinRange},
		{name: "scale-up already made within the period counts", b: defaultBehavior(),
			h:   &history{ScaleUp: []scaleEvent{{Change: 5, At: ago(10 * time.Second)}}},
			lim: limits{10, 1, 100}, desired: 50, want: 10, ableReason: reasonReady, limitedReason: reasonUpLimit},
		{name: "scale-up made before the period does not count", b: defaultBehavior(),
			h:   &history{ScaleUp: []scaleEvent{{Change: 5, At: ago(20 * time.Second)}}},
			lim: limits{10, 1, 100}, desired: 50, want: 20, ableReason: reasonReady, limitedReason: reasonUpLimit},
		{name: "maxReplicas below the rate", b: defaultBehavior(), h: &history{},
			lim: limits{10, 1, 12}, desired: 50, want: 12, ableReason: reasonReady, limitedReason: reasonTooMany},
		{name: "percent scale-up is rounded up", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: rules(0, autoscalingv2.MaxChangePolicySelect, percent(10, 60)), ScaleDown: rules(0, autoscalingv2.MaxChangePolicySelect, percent(100, 15))},
			h: &history{}, lim: limits{3, 1, 100}, desired: 10, want: 4, ableReason: reasonReady, limitedReason: reasonUpLimit},
		{name: "doc: 80 replicas lose 10% (8) at first", b: docDown(autoscalingv2.MaxChangePolicySelect), h: &history{},
			lim: limits{80, 1, 100}, desired: 10, want: 72, ableReason: reasonReady, limitedReason: reasonDownLimit},
		{name: "doc: 72 replicas lose 8 in the next minute", b: docDown(autoscalingv2.MaxChangePolicySelect),
			h:   &history{ScaleDown: []scaleEvent{{Change: 8, At: ago(61 * time.Second)}}},
			lim: limits{72, 1, 100}, desired: 10, want: 64, ableReason: reasonReady, limitedReason: reasonDownLimit},
		{name: "doc: no more within the same minute", b: docDown(autoscalingv2.MaxChangePolicySelect),
			h:   &history{ScaleDown: []scaleEvent{{Change: 8, At: ago(30 * time.Second)}}},
			lim: limits{72, 1, 100}, desired: 10, want: 72, ableReason: reasonReady, limitedReason: reasonDownLimit},
		{name: "doc: below 40 replicas the 4 pods policy is the larger change", b: docDown(autoscalingv2.MaxChangePolicySelect), h: &history{},
			lim: limits{30, 1, 100}, desired: 10, want: 26, ableReason: reasonReady, limitedReason: reasonDownLimit},
		{name: "selectPolicy Min: the smaller change", b: docDown(autoscalingv2.MinChangePolicySelect), h: &history{},
			lim: limits{80, 1, 100}, desired: 10, want: 76, ableReason: reasonReady, limitedReason: reasonDownLimit},
		{name: "selectPolicy Disabled: no scale-down", b: docDown(autoscalingv2.DisabledPolicySelect), h: &history{},
			lim: limits{80, 1, 100}, desired: 10, want: 80, ableReason: reasonReady, limitedReason: reasonDownLimit},
		{name: "scale-down to minReplicas within the rate", b: docDown(autoscalingv2.MaxChangePolicySelect), h: &history{},
			lim: limits{5, 3, 100}, desired: 1, want: 3, ableReason: reasonReady, limitedReason: reasonTooFew},
		{name: "scale-down window keeps the highest recent recommendation", b: defaultBehavior(),
			h:   recs(recommendation{9, ago(100 * time.Second)}),
			lim: limits{10, 1, 100}, desired: 4, want: 9, ableReason: reasonDownStabilized, limitedReason: reasonWithinRange},
		{name: "scale-down window: older recommendations are ignored", b: defaultBehavior(),
			h:   recs(recommendation{9, ago(301 * time.Second)}),
			lim: limits{10, 1, 100}, desired: 4, want: 4, ableReason: reasonReady, limitedReason: reasonWithinRange},
		{name: "scale-up window keeps the lowest recent recommendation", b: &autoscalingv2.HorizontalPodAutoscalerBehavior{
			ScaleUp: rules(60, autoscalingv2.MaxChangePolicySelect, pods(100, 15)), ScaleDown: rules(0, autoscalingv2.MaxChangePolicySelect, percent(100, 15))},
			h:   recs(recommendation{5, ago(30 * time.Second)}),
			lim: limits{3, 1, 100}, desired: 8, want: 5, ableReason: reasonUpStabilized, limitedReason: reasonWithinRange},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			n := normalizeWithBehavior(tc.h, tc.lim, tc.desired, tc.b, t0)
			if n.Replicas != tc.want || n.AbleReason != tc.ableReason || n.LimitedReason != tc.limitedReason {
				t.Errorf("got %+v, want replicas %d, able %s, limited %s", n, tc.want, tc.ableReason, tc.limitedReason)
			}
			if n.Limited != (tc.limitedReason != reasonWithinRange) {
				t.Errorf("limited %v with reason %s", n.Limited, n.LimitedReason)
			}
		})
	}
}

func TestWithDefaultWindow(t *testing.T) {
	b := defaultBehavior()
	b.ScaleDown.StabilizationWindowSeconds = nil
	got := withDefaultWindow(b, 2*time.Minute)
	if w := got.ScaleDown.StabilizationWindowSeconds; w == nil || *w != 120 {
		t.Errorf("window %v, want the flag's 120s", w)
	}
	if b.ScaleDown.StabilizationWindowSeconds != nil {
		t.Error("the HPA's behavior was changed")
	}
	set := defaultBehavior()
	if w := *withDefaultWindow(set, 2*time.Minute).ScaleDown.StabilizationWindowSeconds; w != 300 {
		t.Errorf("a window set in the spec became %d", w)
	}
}

// Rescales are kept per direction; one older than the longest policy period gives its slot
// to the next, as upstream's storeScaleEvent; HPAs without behavior keep none.
func TestRecordScale(t *testing.T) {
	b := defaultBehavior() // periods of 15s
	h := &history{}
	h.recordScale(b, 2, 5, ago(20*time.Second))
	h.recordScale(b, 5, 8, ago(5*time.Second))
	if len(h.ScaleUp) != 2 || h.ScaleUp[0].Change != 3 {
		t.Fatalf("scale-ups %+v", h.ScaleUp)
	}
	h.recordScale(b, 8, 10, t0)
	if len(h.ScaleUp) != 2 || h.ScaleUp[0].Change != 2 || !h.ScaleUp[0].At.Equal(t0) {
		t.Errorf("the outdated event's slot was not reused: %+v", h.ScaleUp)
	}
	h.recordScale(b, 10, 4, t0)
	if len(h.ScaleDown) != 1 || h.ScaleDown[0].Change != 6 {
		t.Errorf("scale-downs %+v", h.ScaleDown)
	}
	none := &history{}
	none.recordScale(nil, 1, 5, t0)
	if len(none.ScaleUp)+len(none.ScaleDown) != 0 {
		t.Errorf("an HPA without behavior kept events: %+v", none)
	}
}
