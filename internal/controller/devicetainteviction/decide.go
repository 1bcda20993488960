package devicetainteviction

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
)

// reason is one NoExecute taint behind an eviction: a DeviceTaintRule (Rule set) or a taint
// of a device in a ResourceSlice (Slice set, TaintIndex its place in the device's taints).
type reason struct {
	Rule    string
	RuleUID types.UID

	Slice                string
	Driver, Pool, Device string
	TaintIndex           int
}

func (r reason) String() string {
	if r.Rule != "" {
		return fmt.Sprintf("DeviceTaintRule %s", r.Rule)
	}
	return fmt.Sprintf("ResourceSlice %s %s/%s/%s taint #%d", r.Slice, r.Driver, r.Pool, r.Device, r.TaintIndex)
}

// compare orders reasons as upstream: rules first by name, then slice taints by driver,
// pool, device and taint index.
func (r reason) compare(o reason) int {
	switch {
	case r.Rule != "" && o.Rule == "":
		return -1
	case r.Rule == "" && o.Rule != "":
		return 1
	case r.Rule != "":
		return strings.Compare(r.Rule, o.Rule)
	}
	if c := strings.Compare(r.Driver, o.Driver); c != 0 {
		return c
	}
	if c := strings.Compare(r.Pool, o.Pool); c != 0 {
		return c
	}
	if c := strings.Compare(r.Device, o.Device); c != 0 {
		return c
	}
	return r.TaintIndex - o.TaintIndex
}

// eviction is when a pod (or a claim's consumers) must go, and every taint that says so.
type eviction struct {
	When    time.Time
	Reasons []reason
}

// join is the earlier of two evictions with the reasons of both.
func join(a, b *eviction) *eviction {
	if a == nil {
		return b
	}
	if b == nil {
		return a
	}
	out := &eviction{When: a.When, Reasons: slices.Clone(a.Reasons)}
	if b.When.Before(out.When) {
		out.When = b.When
	}
	for _, r := range b.Reasons {
		if i, found := slices.BinarySearchFunc(out.Reasons, r, reason.compare); !found {
			out.Reasons = slices.Insert(out.Reasons, i, r)
		}
	}
	return out
}

// ruleNames are the DeviceTaintRules among the reasons.
func (e *eviction) ruleNames() []string {
	if e == nil {
		return nil
	}
	var names []string
	for _, r := range e.Reasons {
		if r.Rule != "" {
			names = append(names, r.Rule)
		}
	}
	return names
}

// hasRule tells whether the rule with this UID is among the reasons.
func (e *eviction) hasRule(uid types.UID) bool {
	if e == nil {
		return false
	}
	return slices.ContainsFunc(e.Reasons, func(r reason) bool { return r.Rule != "" && r.RuleUID == uid })
}

// findDevice looks a device up in the slices of its pool, as upstream: only the slices of
// the pool's newest generation count.
func findDevice(pool []resourceapi.ResourceSlice, name string) (*resourceapi.ResourceSlice, *resourceapi.Device) {
	newest := int64(math.MinInt64)
	for i := range pool {
		newest = max(newest, pool[i].Spec.Pool.Generation)
	}
	for i := range pool {
		s := &pool[i]
		if s.Spec.Pool.Generation != newest {
			continue
		}
		for j := range s.Spec.Devices {
			if s.Spec.Devices[j].Name == name {
				return s, &s.Spec.Devices[j]
			}
		}
	}
	return nil, nil
}

// ruleMatchesDevice: a rule selects a device when each of its selector's fields that is set
// names it; a rule without a selector selects nothing.
func ruleMatchesDevice(rule *resourceapi.DeviceTaintRule, driver, pool, device string) bool {
	sel := rule.Spec.DeviceSelector
	if sel == nil {
		return false
	}
	return (sel.Driver == nil || *sel.Driver == driver) &&
		(sel.Pool == nil || *sel.Pool == pool) &&
		(sel.Device == nil || *sel.Device == device)
}

// ruleTaint is a rule's taint as a device taint, for matching tolerations.
func ruleTaint(rule *resourceapi.DeviceTaintRule) resourceapi.DeviceTaint {
	return resourceapi.DeviceTaint{Key: rule.Spec.Taint.Key, Value: rule.Spec.Taint.Value,
		Effect: rule.Spec.Taint.Effect, TimeAdded: rule.Spec.Taint.TimeAdded}
}

// deviceLookup finds an allocated device's slice and device among the published slices
// (nil, nil when none publishes it).
type deviceLookup func(driver, pool, device string) (*resourceapi.ResourceSlice, *resourceapi.Device)

// claimEviction is upstream's eviction time of an allocated claim: for each NoExecute taint
// of an allocated device (the device's own in its ResourceSlice, or a NoExecute
// DeviceTaintRule selecting it) that the device's NoExecute tolerations do not tolerate
// forever, the taint's timeAdded plus the smallest tolerationSeconds of the tolerations that
// match it (none: at once); the claim's time is the earliest of them. Nil when no taint
// evicts.
func claimEviction(claim *resourceapi.ResourceClaim, lookup deviceLookup, rules []*resourceapi.DeviceTaintRule) *eviction {
	if claim.Status.Allocation == nil {
		return nil
	}
	var out *eviction
	for _, result := range claim.Status.Allocation.Devices.Results {
		type tainted struct {
			taint  resourceapi.DeviceTaint
			reason reason
		}
		var taints []tainted
		if slice, device := lookup(result.Driver, result.Pool, result.Device); device != nil {
			for i, t := range device.Taints {
				if t.Effect == resourceapi.DeviceTaintEffectNoExecute {
					taints = append(taints, tainted{t, reason{Slice: slice.Name, Driver: result.Driver,
						Pool: result.Pool, Device: result.Device, TaintIndex: i}})
				}
			}
		}
		for _, rule := range rules {
			if rule.Spec.Taint.Effect == resourceapi.DeviceTaintEffectNoExecute &&
				ruleMatchesDevice(rule, result.Driver, result.Pool, result.Device) {
				taints = append(taints, tainted{ruleTaint(rule), reason{Rule: rule.Name, RuleUID: rule.UID}})
			}
		}
		for _, t := range taints {
			when, ok := taintEviction(t.taint, result.Tolerations)
			if ok {
				out = join(out, &eviction{When: when, Reasons: []reason{t.reason}})
			}
		}
	}
	return out
}

// taintEviction is when one NoExecute taint evicts the users of a device with these
// tolerations: false when a matching NoExecute toleration has no tolerationSeconds.
func taintEviction(taint resourceapi.DeviceTaint, tolerations []resourceapi.DeviceToleration) (time.Time, bool) {
	var added time.Time
	if taint.TimeAdded != nil {
		added = taint.TimeAdded.Time
	}
	seconds := int64(-1)
	for _, tol := range tolerations {
		if tol.Effect != resourceapi.DeviceTaintEffectNoExecute || !resourceclaim.ToleratesTaint(tol, taint) {
			continue
		}
		if tol.TolerationSeconds == nil {
			return time.Time{}, false
		}
		s := max(*tol.TolerationSeconds, 0)
		if seconds < 0 || s < seconds {
			seconds = s
		}
	}
	if seconds > 0 {
		added = added.Add(time.Duration(seconds) * time.Second)
	}
	return added, true
}
