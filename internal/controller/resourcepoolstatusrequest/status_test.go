package resourcepoolstatusrequest

import (
	"strings"
	"testing"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

const drv = "gpu.kcm.test"

func slice(pool string, gen, count int64, node string, devices ...resourcev1.Device) resourcev1.ResourceSlice {
	s := resourcev1.ResourceSlice{Spec: resourcev1.ResourceSliceSpec{Driver: drv,
		Pool: resourcev1.ResourcePool{Name: pool, Generation: gen, ResourceSliceCount: count}, Devices: devices}}
	if node != "" {
		s.Spec.NodeName = ptr.To(node)
	}
	return s
}

func dev(name string, taints ...resourcev1.DeviceTaintEffect) resourcev1.Device {
	d := resourcev1.Device{Name: name}
	for _, e := range taints {
		d.Taints = append(d.Taints, resourcev1.DeviceTaint{Key: "k", Effect: e})
	}
	return d
}

func claim(results ...resourcev1.DeviceRequestAllocationResult) resourcev1.ResourceClaim {
	return resourcev1.ResourceClaim{Status: resourcev1.ResourceClaimStatus{Allocation: &resourcev1.AllocationResult{
		Devices: resourcev1.DeviceAllocationResult{Results: results}}}}
}

func result(pool, device string) resourcev1.DeviceRequestAllocationResult {
	return resourcev1.DeviceRequestAllocationResult{Request: "r", Driver: drv, Pool: pool, Device: device}
}

func request(mutate ...func(*resourcev1alpha3.ResourcePoolStatusRequestSpec)) *resourcev1alpha3.ResourcePoolStatusRequest {
	r := &resourcev1alpha3.ResourcePoolStatusRequest{Spec: resourcev1alpha3.ResourcePoolStatusRequestSpec{Driver: drv}}
	for _, m := range mutate {
		m(&r.Spec)
	}
	return r
}

// counts renders a pool's entry compactly for comparison.
type counts struct {
	pool, node                                       string
	gen                                              int64
	slices, total, allocated, available, unavailable int32
	err                                              string
}

func summarize(p resourcev1alpha3.PoolStatus) counts {
	c := counts{pool: p.PoolName, node: ptr.Deref(p.NodeName, ""), gen: p.Generation,
		slices: ptr.Deref(p.ResourceSliceCount, -1), total: ptr.Deref(p.TotalDevices, -1), allocated: ptr.Deref(p.AllocatedDevices, -1),
		available: ptr.Deref(p.AvailableDevices, -1), unavailable: ptr.Deref(p.UnavailableDevices, -1)}
	if p.ValidationError != nil {
		c.err, _, _ = strings.Cut(*p.ValidationError, " ")
	}
	return c
}

func TestCompute(t *testing.T) {
	other := slice("x", 1, 1, "node-x", dev("d"))
	other.Spec.Driver = "other.kcm.test"
	for _, tc := range []struct {
		name      string
		req       *resourcev1alpha3.ResourcePoolStatusRequest
		in        Inputs
		poolCount int32
		want      []counts
		message   string
	}{
		{
			name: "counts of one node's pool: allocated once however many claims, tainted unavailable, admin access not counted",
			req:  request(),
			in: Inputs{
				Slices: []resourcev1.ResourceSlice{slice("a", 1, 1, "node-a", dev("d0"), dev("d1"), dev("d2", resourcev1.DeviceTaintEffectNoSchedule),
					dev("d3", resourcev1.DeviceTaintEffectNoExecute), dev("d4", resourcev1.DeviceTaintEffectNone)), other},
				Claims: []resourcev1.ResourceClaim{claim(result("a", "d0")), claim(result("a", "d0")),
					claim(func() resourcev1.DeviceRequestAllocationResult {
						r := result("a", "d1")
						r.AdminAccess = ptr.To(true)
						return r
					}()), {}},
			},
			poolCount: 1,
			want:      []counts{{pool: "a", node: "node-a", gen: 1, slices: 1, total: 5, allocated: 1, available: 2, unavailable: 2}},
			message:   "Calculated status for 1 pools",
		},
		{
			name: "older generations ignored; slices on several nodes give no node; pools sorted",
			req:  request(),
			in: Inputs{Slices: []resourcev1.ResourceSlice{
				slice("z", 2, 2, "node-1", dev("a"), dev("b")), slice("z", 2, 2, "node-2", dev("c")), slice("z", 1, 1, "node-1", dev("old")),
				slice("m", 0, 1, "", dev("x")),
			}},
			poolCount: 2,
			want: []counts{{pool: "m", gen: 0, slices: 1, total: 1, allocated: 0, available: 1, unavailable: 0},
				{pool: "z", gen: 2, slices: 2, total: 3, allocated: 0, available: 3, unavailable: 0}},
			message: "Calculated status for 2 pools",
		},
		{
			name: "allocation of devices no slice publishes may leave nothing available, never less",
			req:  request(),
			in: Inputs{Slices: []resourcev1.ResourceSlice{slice("a", 1, 1, "n", dev("d0"))},
				Claims: []resourcev1.ResourceClaim{claim(result("a", "d0"), result("a", "gone"), result("a", "gone2"))}},
			poolCount: 1,
			want:      []counts{{pool: "a", node: "n", gen: 1, slices: 1, total: 1, allocated: 3, available: 0, unavailable: 0}},
			message:   "Calculated status for 1 pools",
		},
		{
			name:      "an incomplete pool has only its error",
			req:       request(),
			in:        Inputs{Slices: []resourcev1.ResourceSlice{slice("a", 3, 2, "n", dev("d0")), slice("b", 1, 1, "n", dev("d"))}},
			poolCount: 2,
			want: []counts{{pool: "a", node: "n", gen: 3, slices: -1, total: -1, allocated: -1, available: -1, unavailable: -1, err: PrefixPoolIncomplete},
				{pool: "b", node: "n", gen: 1, slices: 1, total: 1, allocated: 0, available: 1, unavailable: 0}},
			message: "Calculated status for 2 pools (1 incomplete)",
		},
		{
			name: "pool name and limit",
			req: request(func(s *resourcev1alpha3.ResourcePoolStatusRequestSpec) {
				s.Limit = ptr.To[int32](1)
			}),
			in:        Inputs{Slices: []resourcev1.ResourceSlice{slice("b", 1, 1, "n", dev("d")), slice("a", 1, 1, "n", dev("d"))}},
			poolCount: 2,
			want:      []counts{{pool: "a", node: "n", gen: 1, slices: 1, total: 1, allocated: 0, available: 1, unavailable: 0}},
			message:   "Calculated status for 1 pools",
		},
		{
			name: "one pool by name",
			req: request(func(s *resourcev1alpha3.ResourcePoolStatusRequestSpec) {
				s.PoolName = ptr.To("b")
			}),
			in:        Inputs{Slices: []resourcev1.ResourceSlice{slice("b", 1, 1, "n", dev("d")), slice("a", 1, 1, "n", dev("d"))}},
			poolCount: 1,
			want:      []counts{{pool: "b", node: "n", gen: 1, slices: 1, total: 1, allocated: 0, available: 1, unavailable: 0}},
			message:   "Calculated status for 1 pools",
		},
		{
			name: "DeviceTaintRules: blocking effects on selected devices; a rule without selector selects nothing",
			req:  request(),
			in: Inputs{
				Slices: []resourcev1.ResourceSlice{slice("a", 1, 1, "n", dev("d0"), dev("d1"), dev("d2"), dev("d3"))},
				TaintRules: []resourcev1.DeviceTaintRule{
					rule(resourcev1.DeviceTaintEffectNoExecute, &resourcev1.DeviceTaintSelector{Driver: ptr.To(drv), Pool: ptr.To("a"), Device: ptr.To("d0")}),
					rule(resourcev1.DeviceTaintEffectNoSchedule, &resourcev1.DeviceTaintSelector{Device: ptr.To("d1")}),
					rule(resourcev1.DeviceTaintEffectNone, &resourcev1.DeviceTaintSelector{Device: ptr.To("d2")}),
					rule(resourcev1.DeviceTaintEffectNoSchedule, &resourcev1.DeviceTaintSelector{Pool: ptr.To("other"), Device: ptr.To("d3")}),
					rule(resourcev1.DeviceTaintEffectNoSchedule, nil),
				},
			},
			poolCount: 1,
			want:      []counts{{pool: "a", node: "n", gen: 1, slices: 1, total: 4, allocated: 0, available: 2, unavailable: 2}},
			message:   "Calculated status for 1 pools",
		},
		{
			name:      "no pools",
			req:       request(),
			in:        Inputs{Slices: []resourcev1.ResourceSlice{other}},
			poolCount: 0,
			message:   "Calculated status for 0 pools",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			now := metav1.NewTime(time.Unix(1000, 0))
			st := Compute(tc.req, tc.in, now)
			if ptr.Deref(st.PoolCount, -1) != tc.poolCount {
				t.Errorf("poolCount = %v, want %d", ptr.Deref(st.PoolCount, -1), tc.poolCount)
			}
			var got []counts
			for _, p := range st.Pools {
				got = append(got, summarize(p))
			}
			if len(got) != len(tc.want) {
				t.Fatalf("pools = %+v, want %+v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Errorf("pool %d = %+v, want %+v", i, got[i], tc.want[i])
				}
			}
			if len(st.Conditions) != 1 {
				t.Fatalf("conditions = %+v", st.Conditions)
			}
			c := st.Conditions[0]
			if c.Type != "Complete" || c.Status != metav1.ConditionTrue || c.Reason != ReasonComplete || c.Message != tc.message || !c.LastTransitionTime.Equal(&now) {
				t.Errorf("condition = %+v, want Complete/True/%s %q", c, ReasonComplete, tc.message)
			}
			if HasIncompletePool(&st) != strings.Contains(tc.message, "incomplete") {
				t.Errorf("HasIncompletePool = %v", HasIncompletePool(&st))
			}
		})
	}
}

func rule(effect resourcev1.DeviceTaintEffect, sel *resourcev1.DeviceTaintSelector) resourcev1.DeviceTaintRule {
	return resourcev1.DeviceTaintRule{Spec: resourcev1.DeviceTaintRuleSpec{DeviceSelector: sel, Taint: resourcev1.DeviceTaint{Key: "k", Effect: effect}}}
}

func TestIncompleteMessage(t *testing.T) {
	st := Compute(request(), Inputs{Slices: []resourcev1.ResourceSlice{slice("a", 3, 2, "n", dev("d0"))}}, metav1.Now())
	want := "PoolIncomplete: pool gpu.kcm.test/a is incomplete: observed 1/2 slices at generation 3"
	if got := ptr.Deref(st.Pools[0].ValidationError, ""); got != want {
		t.Errorf("validationError = %q, want %q", got, want)
	}
}

func TestFailed(t *testing.T) {
	st := Failed("Failed to list ResourceSlices: boom", metav1.Now())
	if ptr.Deref(st.PoolCount, -1) != 0 || len(st.Pools) != 0 || len(st.Conditions) != 1 ||
		st.Conditions[0].Type != "Failed" || st.Conditions[0].Reason != "CalculationFailed" || st.Conditions[0].Message != "Failed to list ResourceSlices: boom" {
		t.Errorf("Failed = %+v", st)
	}
}

func TestExpired(t *testing.T) {
	now := time.Unix(100000, 0)
	created := func(ago time.Duration) metav1.ObjectMeta {
		return metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(now.Add(-ago))}
	}
	answered := func(typ string, ago time.Duration) *resourcev1alpha3.ResourcePoolStatusRequestStatus {
		return &resourcev1alpha3.ResourcePoolStatusRequestStatus{Conditions: []metav1.Condition{{Type: typ, LastTransitionTime: metav1.NewTime(now.Add(-ago))}}}
	}
	for _, tc := range []struct {
		name string
		req  resourcev1alpha3.ResourcePoolStatusRequest
		want bool
	}{
		{"pending, a day old and more", resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: created(25 * time.Hour)}, true},
		{"pending, younger than a day", resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: created(23 * time.Hour)}, false},
		{"complete over an hour ago", resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: created(time.Minute), Status: answered("Complete", 61*time.Minute)}, true},
		{"complete less than an hour ago, created long ago", resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: created(48 * time.Hour), Status: answered("Complete", 59*time.Minute)}, false},
		{"failed over an hour ago", resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: created(time.Minute), Status: answered("Failed", 2*time.Hour)}, true},
		{"status without either condition: from creation", resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: created(2 * time.Hour), Status: answered("Other", 0)}, true},
		{"status without either condition, recent", resourcev1alpha3.ResourcePoolStatusRequest{ObjectMeta: created(time.Minute), Status: answered("Other", 5*time.Hour)}, false},
		{"no creation time", resourcev1alpha3.ResourcePoolStatusRequest{}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := Expired(&tc.req, now, CompletedTTL, PendingTTL); got != tc.want {
				t.Errorf("Expired = %v, want %v", got, tc.want)
			}
		})
	}
}

// capacity and counters helpers for the views.
func q(s string) resource.Quantity { return resource.MustParse(s) }
