package resourcepoolstatusrequest

import (
	"fmt"
	"strings"
	"testing"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// partition is a device of the given type (attribute "profile", written bare) consuming
// amount of counter set "gpu"'s memory.
func partition(name, typ, amount string) resourcev1.Device {
	d := resourcev1.Device{Name: name, ConsumesCounters: []resourcev1.DeviceCounterConsumption{{
		CounterSet: "gpu", Counters: map[string]resourcev1.Counter{"memory": {Value: q(amount)}}}}}
	if typ != "" {
		d.Attributes = map[resourcev1.QualifiedName]resourcev1.DeviceAttribute{"profile": {StringValue: ptr.To(typ)}}
	}
	return d
}

func partitioned(attr string, counters bool, devices ...resourcev1.Device) resourcev1.ResourceSlice {
	s := slice("p", 1, 1, "n", devices...)
	if attr != "" {
		s.Spec.PartitionTypeAttribute = ptr.To(resourcev1.FullyQualifiedName(attr))
	}
	if counters {
		s.Spec.SharedCounters = []resourcev1.CounterSet{{Name: "gpu", Counters: map[string]resourcev1.Counter{"memory": {Value: q("40Gi")}}}}
	}
	return s
}

func shareable(name, memory string) resourcev1.Device {
	return resourcev1.Device{Name: name, AllowMultipleAllocations: ptr.To(true),
		Capacity: map[resourcev1.QualifiedName]resourcev1.DeviceCapacity{"memory": {Value: q(memory)}}}
}

func consumed(device, memory string) resourcev1.ResourceClaim {
	r := result("p", device)
	r.ConsumedCapacity = map[resourcev1.QualifiedName]resource.Quantity{"memory": q(memory)}
	return claim(r)
}

func renderPartitions(ps []resourcev1alpha3.PartitionTypeStatus) string {
	var out []string
	for _, p := range ps {
		out = append(out, fmt.Sprintf("%s=%s:%d/%d", p.Attribute, p.Type, ptr.Deref(p.Allocatable, -1), ptr.Deref(p.Total, -1)))
	}
	return strings.Join(out, " ")
}

func renderShareable(s *resourcev1alpha3.ShareableSummaryStatus) string {
	if s == nil {
		return ""
	}
	out := fmt.Sprintf("full=%d partial=%d", ptr.Deref(s.FullyAvailableDevices, -1), ptr.Deref(s.PartiallyAvailableDevices, -1))
	for _, c := range s.Capacity {
		out += fmt.Sprintf(" %s:%s-%s=%s", c.Name, c.Total.String(), c.Consumed.String(), c.Available.String())
	}
	return out
}

func TestViews(t *testing.T) {
	const attr = drv + "/profile"
	many := []resourcev1.Device{}
	for i := range 33 {
		many = append(many, partition(fmt.Sprintf("d%d", i), fmt.Sprintf("t%02d", i), "1Gi"))
	}
	for _, tc := range []struct {
		name           string
		requestAttr    *string
		slices         []resourcev1.ResourceSlice
		claims         []resourcev1.ResourceClaim
		partitions     string
		shareable      string
		problem        string
		totalAvailable int32
	}{
		{
			name: "partition types and how many more fit after the allocated ones, each type alone",
			slices: []resourcev1.ResourceSlice{partitioned(attr, true,
				partition("whole", "40g", "40Gi"), partition("half-0", "20g", "20Gi"), partition("half-1", "20g", "20Gi"), resourcev1.Device{Name: "plain"})},
			claims:         []resourcev1.ResourceClaim{claim(result("p", "half-0"))},
			partitions:     attr + "=20g:1/2 " + attr + "=40g:0/1",
			totalAvailable: 3,
		},
		{
			name:        "the request's default attribute when no slice names one",
			requestAttr: ptr.To(attr),
			slices:      []resourcev1.ResourceSlice{partitioned("", true, partition("whole", "40g", "40Gi"), partition("half", "20g", "20Gi"))},
			partitions:  attr + "=20g:1/1 " + attr + "=40g:1/1",
		},
		{
			name:        "the request's default is ignored when a slice of the pool names an attribute",
			requestAttr: ptr.To(attr),
			slices: []resourcev1.ResourceSlice{partitioned(attr, true, partition("whole", "40g", "40Gi")),
				func() resourcev1.ResourceSlice {
					s := partitioned("", false, partition("half", "20g", "20Gi"))
					s.Spec.Pool.ResourceSliceCount = 2
					return s
				}()},
			partitions: attr + "=40g:1/1",
		},
		{
			name:    "no partition view without an attribute",
			slices:  []resourcev1.ResourceSlice{partitioned("", true, partition("whole", "40g", "40Gi"))},
			problem: "",
		},
		{
			name:    "an attribute without shared counters",
			slices:  []resourcev1.ResourceSlice{partitioned(attr, false, partition("whole", "40g", "40Gi"))},
			problem: "PartitionTypeMissing: pool gpu.kcm.test/p declares partitionTypeAttribute but publishes no sharedCounters",
		},
		{
			name:    "a partition without the attribute",
			slices:  []resourcev1.ResourceSlice{partitioned(attr, true, partition("whole", "40g", "40Gi"), partition("odd", "", "1Gi"))},
			problem: `PartitionTypeMissing: device "odd" in pool gpu.kcm.test/p does not carry partition type attribute "gpu.kcm.test/profile"`,
		},
		{
			name:    "partitions of one type costing differently",
			slices:  []resourcev1.ResourceSlice{partitioned(attr, true, partition("a", "20g", "20Gi"), partition("b", "20g", "10Gi"))},
			problem: `PartitionCostMismatch: devices of partition type "20g" in pool gpu.kcm.test/p consume different counters`,
		},
		{
			name:    "more partition types than the status holds",
			slices:  []resourcev1.ResourceSlice{partitioned(attr, true, many...)},
			problem: "PartitionSummaryOverCap: pool gpu.kcm.test/p has 33 partition types, exceeding the maximum of 32",
		},
		{
			name:           "shareable devices: whole and partly available, capacity consumed by claims",
			slices:         []resourcev1.ResourceSlice{partitioned("", false, shareable("s0", "10Gi"), shareable("s1", "10Gi"), resourcev1.Device{Name: "plain"})},
			claims:         []resourcev1.ResourceClaim{consumed("s0", "4Gi"), consumed("s0", "8Gi")},
			shareable:      "full=1 partial=1 memory:20Gi-12Gi=8Gi",
			totalAvailable: 2,
		},
		{
			name:      "consumption beyond the total leaves none",
			slices:    []resourcev1.ResourceSlice{partitioned("", false, shareable("s0", "10Gi"))},
			claims:    []resourcev1.ResourceClaim{consumed("s0", "12Gi")},
			shareable: "full=0 partial=1 memory:10Gi-12Gi=0",
		},
		{
			name:      "a view's problem keeps the other view's summary only when that one is sound",
			slices:    []resourcev1.ResourceSlice{partitioned(attr, false, partition("whole", "40g", "40Gi"), shareable("s0", "10Gi"))},
			shareable: "full=1 partial=0 memory:10Gi-0=10Gi",
			problem:   "PartitionTypeMissing: pool gpu.kcm.test/p declares partitionTypeAttribute but publishes no sharedCounters",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req := request(func(s *resourcev1alpha3.ResourcePoolStatusRequestSpec) {
				s.DefaultPartitionTypeAttribute = tc.requestAttr
			})
			st := Compute(req, Inputs{Slices: tc.slices, Claims: tc.claims}, metav1.Now())
			if len(st.Pools) != 1 {
				t.Fatalf("pools = %+v", st.Pools)
			}
			p := st.Pools[0]
			if got := renderPartitions(p.PartitionSummary); got != tc.partitions {
				t.Errorf("partitions = %q, want %q", got, tc.partitions)
			}
			if got := renderShareable(p.ShareableSummary); got != tc.shareable {
				t.Errorf("shareable = %q, want %q", got, tc.shareable)
			}
			if got := ptr.Deref(p.ValidationError, ""); got != tc.problem {
				t.Errorf("validationError = %q, want %q", got, tc.problem)
			}
			if p.TotalDevices == nil {
				t.Errorf("counts missing beside the views")
			}
			if tc.totalAvailable != 0 && *p.AvailableDevices != tc.totalAvailable {
				t.Errorf("availableDevices = %d, want %d", *p.AvailableDevices, tc.totalAvailable)
			}
		})
	}
}
