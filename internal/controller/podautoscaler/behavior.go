package podautoscaler

import (
	"math"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
)

// This file holds the decisions that turn the metrics' proposal into the replica count to
// write: the stabilization windows and the scaling rates, as upstream's horizontal.go
// (stabilizeRecommendation, normalizeDesiredReplicas, normalizeDesiredReplicasWithBehaviors
// and their helpers). They are pure functions over one HPA's history and the time now; the
// Reconciler keeps each HPA's history in memory, as upstream, and forgets it when the HPA is
// deleted.

// Upstream's rate limit for HPAs without behavior: at most double, and at least 4, per sync.
const (
	scaleUpLimitFactor  = 2.0
	scaleUpLimitMinimum = 4.0
)

// recommendation is one sync's proposal before stabilization.
type recommendation struct {
	Replicas int32
	At       time.Time
}

// scaleEvent is one rescale, by how many replicas (never negative).
type scaleEvent struct {
	Change   int32
	At       time.Time
	Outdated bool // older than the longest policy period: its slot can be reused
}

// history is what upstream keeps per HPA across syncs: the recent recommendations and the
// rescales up and down.
type history struct {
	Recommendations []recommendation
	ScaleUp         []scaleEvent
	ScaleDown       []scaleEvent
}

// limits are the bounds a proposal is normalized within.
type limits struct {
	Current, Min, Max int32
}

// normalized is a normalization's outcome and the conditions it sets: AbleToScale (True, with
// Reason: stabilized or ready) and ScalingLimited (Limited: the count was bounded).
type normalized struct {
	Replicas                      int32
	AbleReason, AbleMessage       string
	Limited                       bool
	LimitedReason, LimitedMessage string
}

const (
	reasonReady          = "ReadyForNewScale"
	messageReady         = "recommended size matches current size"
	reasonDownStabilized = "ScaleDownStabilized"
	messageDown          = "recent recommendations were higher than current one, applying the highest recent recommendation"
	reasonUpStabilized   = "ScaleUpStabilized"
	messageUp            = "recent recommendations were lower than current one, applying the lowest recent recommendation"
	reasonWithinRange    = "DesiredWithinRange"
	messageWithinRange   = "the desired count is within the acceptable range"
	reasonUpLimit        = "ScaleUpLimit"
	messageUpLimit       = "the desired replica count is increasing faster than the maximum scale rate"
	reasonDownLimit      = "ScaleDownLimit"
	messageDownLimit     = "the desired replica count is decreasing faster than the maximum scale rate"
	reasonTooMany        = "TooManyReplicas"
	messageTooMany       = "the desired replica count is more than the maximum replica count"
	reasonTooFew         = "TooFewReplicas"
	messageTooFew        = "the desired replica count is less than the minimum replica count"
)

// recordInitial starts an HPA's recommendations with its current replicas, the first time
// it is synced.
func (h *history) recordInitial(current int32, now time.Time) {
	if h.Recommendations == nil {
		h.Recommendations = []recommendation{{current, now}}
	}
}

// record stores the proposal, in the slot of a sample older than the windows if there is
// one (index >= 0), else appended.
func (h *history) record(oldIndex int, desired int32, now time.Time) {
	if oldIndex >= 0 {
		h.Recommendations[oldIndex] = recommendation{desired, now}
		return
	}
	h.Recommendations = append(h.Recommendations, recommendation{desired, now})
}

// normalize is upstream's normalizeDesiredReplicas, for HPAs without behavior: the highest
// proposal of the downscale stabilization window, bounded by minReplicas, maxReplicas and
// the scale-up rate.
func normalize(h *history, lim limits, desired int32, window time.Duration, now time.Time) normalized {
	stabilized := stabilizeDown(h, desired, window, now)
	n := normalized{AbleReason: reasonReady, AbleMessage: messageReady}
	if stabilized != desired {
		n.AbleReason, n.AbleMessage = reasonDownStabilized, messageDown
	}
	n.Replicas, n.LimitedReason, n.LimitedMessage = boundByRules(lim, stabilized)
	n.Limited = n.Replicas != stabilized
	return n
}

// stabilizeDown records the proposal and returns the highest one not older than the window.
func stabilizeDown(h *history, desired int32, window time.Duration, now time.Time) int32 {
	highest := desired
	old := -1
	cutoff := now.Add(-window)
	for i, rec := range h.Recommendations {
		if rec.At.Before(cutoff) {
			old = i
		} else if rec.Replicas > highest {
			highest = rec.Replicas
		}
	}
	h.record(old, desired, now)
	return highest
}

// boundByRules bounds a count by minReplicas, maxReplicas and upstream's fixed scale-up rate
// (double, at least 4), returning the ScalingLimited reason and message.
func boundByRules(lim limits, desired int32) (int32, string, string) {
	upLimit := scaleUpLimit(lim.Current)
	maxAllowed, reason, message := lim.Max, reasonTooMany, messageTooMany
	if lim.Max > upLimit {
		maxAllowed, reason, message = upLimit, reasonUpLimit, messageUpLimit
	}
	switch {
	case desired < lim.Min:
		return lim.Min, reasonTooFew, messageTooFew
	case desired > maxAllowed:
		return maxAllowed, reason, message
	}
	return desired, reasonWithinRange, messageWithinRange
}

func scaleUpLimit(current int32) int32 {
	return int32(math.Max(scaleUpLimitFactor*float64(current), scaleUpLimitMinimum))
}

// normalizeWithBehavior is upstream's normalizeDesiredReplicasWithBehaviors: the proposal is
// stabilized within the scale-up and scale-down windows, then bounded by the policies' rates
// and minReplicas/maxReplicas. behavior has its defaults filled (withDefaultWindow).
func normalizeWithBehavior(h *history, lim limits, desired int32, behavior *autoscalingv2.HorizontalPodAutoscalerBehavior, now time.Time) normalized {
	stabilized, reason, message := stabilizeWithBehavior(h, lim.Current, desired, behavior, now)
	n := normalized{AbleReason: reasonReady, AbleMessage: messageReady}
	if stabilized != desired {
		n.AbleReason, n.AbleMessage = reason, message
	}
	n.Replicas, n.LimitedReason, n.LimitedMessage = boundByRate(h, lim, stabilized, behavior, now)
	n.Limited = n.Replicas != stabilized
	return n
}

// withDefaultWindow fills scaleDown's missing stabilization window with
// --horizontal-pod-autoscaler-downscale-stabilization, as upstream's
// maybeInitScaleDownStabilizationWindow (the API server defaults the rest of behavior).
func withDefaultWindow(b *autoscalingv2.HorizontalPodAutoscalerBehavior, window time.Duration) *autoscalingv2.HorizontalPodAutoscalerBehavior {
	if b == nil || b.ScaleDown == nil || b.ScaleDown.StabilizationWindowSeconds != nil {
		return b
	}
	b = b.DeepCopy()
	seconds := int32(window.Seconds())
	b.ScaleDown.StabilizationWindowSeconds = &seconds
	return b
}

// stabilizeWithBehavior records the proposal and brings the current count within the lowest
// proposal of the scale-up window and the highest of the scale-down window.
func stabilizeWithBehavior(h *history, current, desired int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, now time.Time) (int32, string, string) {
	upCutoff := now.Add(-windowOf(b.ScaleUp))
	downCutoff := now.Add(-windowOf(b.ScaleDown))
	up, down := desired, desired
	old := -1
	for i, rec := range h.Recommendations {
		if rec.At.After(upCutoff) {
			up = min(up, rec.Replicas)
		}
		if rec.At.After(downCutoff) {
			down = max(down, rec.Replicas)
		}
		if rec.At.Before(upCutoff) && rec.At.Before(downCutoff) {
			old = i
		}
	}
	stabilized := min(max(current, up), down)
	h.record(old, desired, now)
	if desired >= current {
		return stabilized, reasonUpStabilized, messageUp
	}
	return stabilized, reasonDownStabilized, messageDown
}

func windowOf(rules *autoscalingv2.HPAScalingRules) time.Duration {
	if rules == nil || rules.StabilizationWindowSeconds == nil {
		return 0
	}
	return time.Duration(*rules.StabilizationWindowSeconds) * time.Second
}

// boundByRate is upstream's convertDesiredReplicasWithBehaviorRate: the count is bounded by
// what the policies allow from the replicas at the start of each policy's period.
func boundByRate(h *history, lim limits, desired int32, b *autoscalingv2.HorizontalPodAutoscalerBehavior, now time.Time) (int32, string, string) {
	switch {
	case desired > lim.Current:
		upLimit := max(scaleUpLimitWithRules(lim.Current, h, b.ScaleUp, now), lim.Current)
		maxAllowed, reason, message := lim.Max, reasonTooMany, messageTooMany
		if lim.Max > upLimit {
			maxAllowed, reason, message = upLimit, reasonUpLimit, messageUpLimit
		}
		if desired > maxAllowed {
			return maxAllowed, reason, message
		}
	case desired < lim.Current:
		downLimit := min(scaleDownLimitWithRules(lim.Current, h, b.ScaleDown, now), lim.Current)
		minAllowed, reason, message := lim.Min, reasonTooFew, messageTooFew
		if lim.Min < downLimit {
			minAllowed, reason, message = downLimit, reasonDownLimit, messageDownLimit
		}
		if desired < minAllowed {
			return minAllowed, reason, message
		}
	}
	return desired, reasonWithinRange, messageWithinRange
}

// periodStart is the replica count at the start of a policy's period: the current count
// without the rescales made within it.
func periodStart(current int32, h *history, periodSeconds int32, now time.Time) int32 {
	return current - changesWithin(h.ScaleUp, periodSeconds, now) + changesWithin(h.ScaleDown, periodSeconds, now)
}

func changesWithin(events []scaleEvent, periodSeconds int32, now time.Time) int32 {
	cutoff := now.Add(-time.Duration(periodSeconds) * time.Second)
	var n int32
	for _, e := range events {
		if e.At.After(cutoff) {
			n += e.Change
		}
	}
	return n
}

// scaleUpLimitWithRules is the most replicas the scale-up policies allow: the largest
// proposal (selectPolicy Max, the default) or the smallest (Min); Disabled: the current
// count.
func scaleUpLimitWithRules(current int32, h *history, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(rules)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MinInt32), maxInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MaxInt32, minInt32
	}
	for _, p := range rules.Policies {
		start := periodStart(current, h, p.PeriodSeconds, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start + p.Value
		case autoscalingv2.PercentScalingPolicy:
			// Rounded up: a small percentage of few replicas must still add one.
			proposed = int32(math.Ceil(float64(start) * (1 + float64(p.Value)/100)))
		}
		result = pick(result, proposed)
	}
	return result
}

// scaleDownLimitWithRules is the fewest replicas the scale-down policies allow: the
// smallest proposal (selectPolicy Max, the largest change) or the largest (Min); Disabled:
// the current count.
func scaleDownLimitWithRules(current int32, h *history, rules *autoscalingv2.HPAScalingRules, now time.Time) int32 {
	sel := selectPolicy(rules)
	if sel == autoscalingv2.DisabledPolicySelect {
		return current
	}
	result, pick := int32(math.MaxInt32), minInt32
	if sel == autoscalingv2.MinChangePolicySelect {
		result, pick = math.MinInt32, maxInt32
	}
	for _, p := range rules.Policies {
		start := periodStart(current, h, p.PeriodSeconds, now)
		var proposed int32
		switch p.Type {
		case autoscalingv2.PodsScalingPolicy:
			proposed = start - p.Value
		case autoscalingv2.PercentScalingPolicy:
			proposed = int32(float64(start) * (1 - float64(p.Value)/100))
		}
		result = pick(result, proposed)
	}
	return result
}

// selectPolicy is the rules' selectPolicy; the API server defaults it to Max.
func selectPolicy(rules *autoscalingv2.HPAScalingRules) autoscalingv2.ScalingPolicySelect {
	if rules == nil {
		return autoscalingv2.DisabledPolicySelect
	}
	if rules.SelectPolicy == nil {
		return autoscalingv2.MaxChangePolicySelect
	}
	return *rules.SelectPolicy
}

func minInt32(a, b int32) int32 { return min(a, b) }
func maxInt32(a, b int32) int32 { return max(a, b) }

// recordScale stores a rescale from prev to next for an HPA with behavior, in the slot of an
// event older than the direction's longest policy period if there is one, as upstream's
// storeScaleEvent. HPAs without behavior keep no events: nothing reads them.
func (h *history) recordScale(b *autoscalingv2.HorizontalPodAutoscalerBehavior, prev, next int32, now time.Time) {
	if b == nil {
		return
	}
	if next > prev {
		h.ScaleUp = storeEvent(h.ScaleUp, longestPeriod(b.ScaleUp), next-prev, now)
		return
	}
	h.ScaleDown = storeEvent(h.ScaleDown, longestPeriod(b.ScaleDown), prev-next, now)
}

func storeEvent(events []scaleEvent, longest int32, change int32, now time.Time) []scaleEvent {
	cutoff := now.Add(-time.Duration(longest) * time.Second)
	old := -1
	for i := range events {
		if events[i].At.Before(cutoff) {
			events[i].Outdated = true
		}
		if events[i].Outdated {
			old = i
		}
	}
	e := scaleEvent{Change: change, At: now}
	if old >= 0 {
		events[old] = e
		return events
	}
	return append(events, e)
}

func longestPeriod(rules *autoscalingv2.HPAScalingRules) int32 {
	var longest int32
	if rules == nil {
		return 0
	}
	for _, p := range rules.Policies {
		longest = max(longest, p.PeriodSeconds)
	}
	return longest
}
