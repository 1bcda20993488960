package devicetainteviction

import (
	"testing"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func at(d time.Duration) *metav1.Time { return &metav1.Time{Time: t0.Add(d)} }

func slice(name string, gen int64, devices ...resourceapi.Device) resourceapi.ResourceSlice {
	return resourceapi.ResourceSlice{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: resourceapi.ResourceSliceSpec{
		Driver: "d", Pool: resourceapi.ResourcePool{Name: "p", Generation: gen}, Devices: devices}}
}

func TestFindDevice(t *testing.T) {
	for name, tc := range map[string]struct {
		pool      []resourceapi.ResourceSlice
		device    string
		wantSlice string
	}{
		"found":                    {[]resourceapi.ResourceSlice{slice("a", 1, resourceapi.Device{Name: "x"})}, "x", "a"},
		"absent":                   {[]resourceapi.ResourceSlice{slice("a", 1, resourceapi.Device{Name: "x"})}, "y", ""},
		"older generation ignored": {[]resourceapi.ResourceSlice{slice("old", 1, resourceapi.Device{Name: "x"}), slice("new", 2, resourceapi.Device{Name: "y"})}, "x", ""},
		"newest generation used":   {[]resourceapi.ResourceSlice{slice("old", 1, resourceapi.Device{Name: "x"}), slice("new", 2, resourceapi.Device{Name: "x"})}, "x", "new"},
	} {
		t.Run(name, func(t *testing.T) {
			s, d := findDevice(tc.pool, tc.device)
			got := ""
			if s != nil {
				got = s.Name
				if d == nil || d.Name != tc.device {
					t.Fatalf("device %v", d)
				}
			}
			if got != tc.wantSlice {
				t.Errorf("slice %q, want %q", got, tc.wantSlice)
			}
		})
	}
}

func TestRuleMatchesDevice(t *testing.T) {
	rule := func(sel *resourceapi.DeviceTaintSelector) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: sel}}
	}
	for name, tc := range map[string]struct {
		rule *resourceapi.DeviceTaintRule
		want bool
	}{
		"no selector":     {rule(nil), false},
		"empty selector":  {rule(&resourceapi.DeviceTaintSelector{}), true},
		"driver":          {rule(&resourceapi.DeviceTaintSelector{Driver: ptr.To("d")}), true},
		"other driver":    {rule(&resourceapi.DeviceTaintSelector{Driver: ptr.To("e")}), false},
		"pool and device": {rule(&resourceapi.DeviceTaintSelector{Pool: ptr.To("p"), Device: ptr.To("x")}), true},
		"other device":    {rule(&resourceapi.DeviceTaintSelector{Pool: ptr.To("p"), Device: ptr.To("y")}), false},
		"other pool":      {rule(&resourceapi.DeviceTaintSelector{Pool: ptr.To("q")}), false},
	} {
		t.Run(name, func(t *testing.T) {
			if got := ruleMatchesDevice(tc.rule, "d", "p", "x"); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}

func TestTaintEviction(t *testing.T) {
	taint := resourceapi.DeviceTaint{Key: "k", Value: "v", Effect: resourceapi.DeviceTaintEffectNoExecute, TimeAdded: at(0)}
	tol := func(key string, effect resourceapi.DeviceTaintEffect, seconds *int64) resourceapi.DeviceToleration {
		return resourceapi.DeviceToleration{Key: key, Operator: resourceapi.DeviceTolerationOpExists, Effect: effect, TolerationSeconds: seconds}
	}
	for name, tc := range map[string]struct {
		tolerations []resourceapi.DeviceToleration
		want        time.Time
		evicts      bool
	}{
		"no toleration: at the taint's time": {nil, t0, true},
		"other key":                          {[]resourceapi.DeviceToleration{tol("other", resourceapi.DeviceTaintEffectNoExecute, ptr.To[int64](5))}, t0, true},
		"forever":                            {[]resourceapi.DeviceToleration{tol("k", resourceapi.DeviceTaintEffectNoExecute, nil)}, time.Time{}, false},
		"seconds":                            {[]resourceapi.DeviceToleration{tol("k", resourceapi.DeviceTaintEffectNoExecute, ptr.To[int64](30))}, t0.Add(30 * time.Second), true},
		"smallest seconds": {[]resourceapi.DeviceToleration{
			tol("k", resourceapi.DeviceTaintEffectNoExecute, ptr.To[int64](30)),
			tol("", resourceapi.DeviceTaintEffectNoExecute, ptr.To[int64](10))}, t0.Add(10 * time.Second), true},
		"negative seconds are zero": {[]resourceapi.DeviceToleration{tol("k", resourceapi.DeviceTaintEffectNoExecute, ptr.To[int64](-5))}, t0, true},
		// As upstream, only tolerations naming NoExecute count.
		"effect unset does not tolerate": {[]resourceapi.DeviceToleration{tol("k", "", nil)}, t0, true},
	} {
		t.Run(name, func(t *testing.T) {
			got, evicts := taintEviction(taint, tc.tolerations)
			if evicts != tc.evicts || !got.Equal(tc.want) {
				t.Errorf("got %v %v, want %v %v", got, evicts, tc.want, tc.evicts)
			}
		})
	}
}

func TestClaimEviction(t *testing.T) {
	noExec := func(key string, added time.Duration) resourceapi.DeviceTaint {
		return resourceapi.DeviceTaint{Key: key, Effect: resourceapi.DeviceTaintEffectNoExecute, TimeAdded: at(added)}
	}
	pool := []resourceapi.ResourceSlice{slice("s", 1,
		resourceapi.Device{Name: "x", Taints: []resourceapi.DeviceTaint{
			{Key: "soft", Effect: resourceapi.DeviceTaintEffectNoSchedule, TimeAdded: at(0)}, noExec("hard", time.Minute)}},
		resourceapi.Device{Name: "y"},
		resourceapi.Device{Name: "z", Taints: []resourceapi.DeviceTaint{noExec("early", 0)}},
	)}
	lookup := func(driver, p, device string) (*resourceapi.ResourceSlice, *resourceapi.Device) {
		if driver != "d" || p != "p" {
			return nil, nil
		}
		return findDevice(pool, device)
	}
	claim := func(tolerations []resourceapi.DeviceToleration, devices ...string) *resourceapi.ResourceClaim {
		c := &resourceapi.ResourceClaim{Status: resourceapi.ResourceClaimStatus{Allocation: &resourceapi.AllocationResult{}}}
		for _, d := range devices {
			c.Status.Allocation.Devices.Results = append(c.Status.Allocation.Devices.Results,
				resourceapi.DeviceRequestAllocationResult{Driver: "d", Pool: "p", Device: d, Tolerations: tolerations})
		}
		return c
	}
	rule := func(name string, effect resourceapi.DeviceTaintEffect, device string, added time.Duration) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name, UID: "uid-" + "name"},
			Spec: resourceapi.DeviceTaintRuleSpec{DeviceSelector: &resourceapi.DeviceTaintSelector{Device: ptr.To(device)},
				Taint: resourceapi.DeviceTaint{Key: name, Effect: effect, TimeAdded: at(added)}}}
	}
	sliceReason := func(device string, i int) reason {
		return reason{Slice: "s", Driver: "d", Pool: "p", Device: device, TaintIndex: i}
	}
	for name, tc := range map[string]struct {
		claim *resourceapi.ResourceClaim
		rules []*resourceapi.DeviceTaintRule
		want  *eviction
	}{
		"not allocated":         {&resourceapi.ResourceClaim{}, nil, nil},
		"untainted device":      {claim(nil, "y"), nil, nil},
		"unpublished device":    {claim(nil, "gone"), nil, nil},
		"NoExecute slice taint": {claim(nil, "x"), nil, &eviction{When: t0.Add(time.Minute), Reasons: []reason{sliceReason("x", 1)}}},
		"earliest of two devices": {claim(nil, "x", "z"), nil,
			&eviction{When: t0, Reasons: []reason{sliceReason("x", 1), sliceReason("z", 0)}}},
		"tolerated forever": {claim([]resourceapi.DeviceToleration{{Operator: resourceapi.DeviceTolerationOpExists, Effect: resourceapi.DeviceTaintEffectNoExecute}}, "x"), nil, nil},
		"NoExecute rule": {claim(nil, "y"), []*resourceapi.DeviceTaintRule{rule("r", resourceapi.DeviceTaintEffectNoExecute, "y", 2*time.Minute)},
			&eviction{When: t0.Add(2 * time.Minute), Reasons: []reason{{Rule: "r", RuleUID: "uid-name"}}}},
		"NoSchedule and None rules do not evict": {claim(nil, "y"), []*resourceapi.DeviceTaintRule{
			rule("a", resourceapi.DeviceTaintEffectNoSchedule, "y", 0), rule("b", resourceapi.DeviceTaintEffectNone, "y", 0)}, nil},
		"rule elsewhere": {claim(nil, "y"), []*resourceapi.DeviceTaintRule{rule("r", resourceapi.DeviceTaintEffectNoExecute, "x", 0)}, nil},
		"rule and slice taint, rules first": {claim(nil, "x"), []*resourceapi.DeviceTaintRule{rule("r", resourceapi.DeviceTaintEffectNoExecute, "x", 5*time.Minute)},
			&eviction{When: t0.Add(time.Minute), Reasons: []reason{{Rule: "r", RuleUID: "uid-name"}, sliceReason("x", 1)}}},
	} {
		t.Run(name, func(t *testing.T) {
			got := claimEviction(tc.claim, lookup, tc.rules)
			if (got == nil) != (tc.want == nil) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			if got == nil {
				return
			}
			if !got.When.Equal(tc.want.When) || len(got.Reasons) != len(tc.want.Reasons) {
				t.Fatalf("got %+v, want %+v", got, tc.want)
			}
			for i := range got.Reasons {
				if got.Reasons[i] != tc.want.Reasons[i] {
					t.Errorf("reason %d: got %v, want %v", i, got.Reasons[i], tc.want.Reasons[i])
				}
			}
		})
	}
}

func TestJoin(t *testing.T) {
	a := &eviction{When: t0.Add(time.Minute), Reasons: []reason{{Rule: "b"}}}
	b := &eviction{When: t0, Reasons: []reason{{Rule: "a"}, {Rule: "b"}, {Slice: "s", Device: "x"}}}
	got := join(a, b)
	if !got.When.Equal(t0) {
		t.Errorf("when %v, want the earlier %v", got.When, t0)
	}
	want := []reason{{Rule: "a"}, {Rule: "b"}, {Slice: "s", Device: "x"}}
	if len(got.Reasons) != len(want) {
		t.Fatalf("reasons %v, want %v", got.Reasons, want)
	}
	for i := range want {
		if got.Reasons[i] != want[i] {
			t.Errorf("reason %d: %v, want %v", i, got.Reasons[i], want[i])
		}
	}
	if join(nil, a) != a || join(a, nil) != a {
		t.Error("joining with nil is the other")
	}
}

func TestRuleCondition(t *testing.T) {
	rule := func(effect resourceapi.DeviceTaintEffect) *resourceapi.DeviceTaintRule {
		return &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Generation: 3},
			Spec: resourceapi.DeviceTaintRuleSpec{Taint: resourceapi.DeviceTaint{Effect: effect}}}
	}
	for name, tc := range map[string]struct {
		effect                  resourceapi.DeviceTaintEffect
		counts                  ruleCounts
		status, reason, message string
	}{
		"not started": {resourceapi.DeviceTaintEffectNoExecute, ruleCounts{}, "False", "NotStarted", ""},
		"one pending": {resourceapi.DeviceTaintEffectNoExecute, ruleCounts{Pending: 1, Namespaces: 1}, "True", "PodsPendingEviction",
			"1 pod needs to be evicted in 1 namespace."},
		"pending and evicted": {resourceapi.DeviceTaintEffectNoExecute, ruleCounts{Pending: 3, Namespaces: 2, Evicted: 2}, "True", "PodsPendingEviction",
			"3 pods need to be evicted in 2 different namespaces. 2 pods evicted since starting the controller."},
		"completed": {resourceapi.DeviceTaintEffectNoExecute, ruleCounts{Evicted: 1}, "False", "Completed",
			"1 pod evicted since starting the controller."},
		"none": {resourceapi.DeviceTaintEffectNone, ruleCounts{SliceDevices: 1, Allocated: 2, Pending: 0, Namespaces: 0}, "False", "NoEffect",
			"1 published device selected. 2 allocated devices selected. 0 pods would be evicted in 0 different namespaces if the effect was NoExecute. This information will not be updated again. Recreate the DeviceTaintRule to trigger an update."},
		"other effect": {resourceapi.DeviceTaintEffectNoSchedule, ruleCounts{}, "False", "OtherEffect", "Eviction only happens for the NoExecute effect."},
		"other effect after evictions": {resourceapi.DeviceTaintEffectNoSchedule, ruleCounts{Evicted: 4}, "False", "OtherEffect",
			"Eviction only happens for the NoExecute effect. 4 pods evicted since starting the controller."},
	} {
		t.Run(name, func(t *testing.T) {
			c := ruleCondition(rule(tc.effect), tc.counts)
			if string(c.Status) != tc.status || c.Reason != tc.reason || c.Message != tc.message ||
				c.Type != resourceapi.DeviceTaintConditionEvictionInProgress || c.ObservedGeneration != 3 {
				t.Errorf("got %+v, want %s %s %q", c, tc.status, tc.reason, tc.message)
			}
		})
	}
}
