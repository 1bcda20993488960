package resourcepoolstatusrequest

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

// maxListItems is the API's limit on the status lists (+k8s:maxItems=32): a view longer
// than that flags the pool instead of being cut.
const maxListItems = 32

// device is what the views need of one published device.
type device struct {
	name string
	// attr is the attribute grouping the device into partition types: its slice's
	// partitionTypeAttribute, else (when no slice of the pool names one) the request's
	// default; "" for none. partitionType is the device's string value of it, if any.
	attr          string
	partitionType string
	typed         bool
	cost          []resourcev1.DeviceCounterConsumption
	shareable     bool
	capacity      map[resourcev1.QualifiedName]resourcev1.DeviceCapacity
	attributes    map[resourcev1.QualifiedName]resourcev1.DeviceAttribute
}

func devicesOf(s *resourcev1.ResourceSlice) []device {
	attr := ""
	if s.Spec.PartitionTypeAttribute != nil {
		attr = string(*s.Spec.PartitionTypeAttribute)
	}
	out := make([]device, 0, len(s.Spec.Devices))
	for i := range s.Spec.Devices {
		d := &s.Spec.Devices[i]
		out = append(out, device{name: d.Name, attr: attr, cost: d.ConsumesCounters,
			shareable: ptr.Deref(d.AllowMultipleAllocations, false), capacity: d.Capacity, attributes: d.Attributes})
	}
	return out
}

// views computes one complete pool's partition and shareable summaries.
type views struct {
	driver, pool string
	devices      []device
	counters     []resourcev1.CounterSet
	inUse        map[string]bool
	consumed     map[resourcev1.QualifiedName]resource.Quantity
}

// resolvePartitions settles each device's grouping attribute and its type. The slices'
// own attributes win, device by device; the request's default serves only a pool none of
// whose slices names one (drivers not yet declaring it).
func (v *views) resolvePartitions(requestAttr *string) {
	declared := slices.ContainsFunc(v.devices, func(d device) bool { return d.attr != "" })
	for i := range v.devices {
		d := &v.devices[i]
		if d.attr == "" {
			if declared || requestAttr == nil {
				continue
			}
			d.attr = *requestAttr
		}
		d.partitionType, d.typed = stringAttribute(v.driver, d.attributes, d.attr)
	}
}

// stringAttribute is the device's string attribute name. A name in the driver's own domain
// may be written bare on the device, as CEL selectors allow; the qualified form wins.
func stringAttribute(driver string, attrs map[resourcev1.QualifiedName]resourcev1.DeviceAttribute, name string) (string, bool) {
	a, ok := attrs[resourcev1.QualifiedName(name)]
	if !ok {
		if bare, found := strings.CutPrefix(name, driver+"/"); found {
			a, ok = attrs[resourcev1.QualifiedName(bare)]
		}
	}
	if !ok || a.StringValue == nil {
		return "", false
	}
	return *a.StringValue, true
}

// compute is the partition summary (grouped pools), the shareable summary (pools with
// shareable devices) and the first structural problem found, "" for none. A problem drops
// the partition summary; the shareable summary goes only with a problem of its own.
func (v *views) compute() ([]resourcev1alpha3.PartitionTypeStatus, *resourcev1alpha3.ShareableSummaryStatus, string) {
	var partitions []resourcev1alpha3.PartitionTypeStatus
	problem := ""
	if slices.ContainsFunc(v.devices, func(d device) bool { return d.attr != "" }) {
		if len(v.counters) == 0 {
			problem = fmt.Sprintf("%s pool %s/%s declares partitionTypeAttribute but publishes no sharedCounters",
				prefixPartitionTypeMissing, v.driver, v.pool)
		} else {
			partitions, problem = v.partitionSummary()
		}
	}
	shareable, shareableProblem := v.shareableSummary()
	if shareableProblem != "" {
		shareable = nil
		if problem == "" {
			problem = shareableProblem
		}
	}
	if problem != "" {
		partitions = nil
	}
	return partitions, shareable, problem
}

// partitionSummary counts, per (attribute, type), the partitions (counter-consuming devices)
// and how many more of them fit in the shared counters the allocated devices leave; each
// type is measured alone against what is left.
func (v *views) partitionSummary() ([]resourcev1alpha3.PartitionTypeStatus, string) {
	type key struct{ attr, typ string }
	type kind struct {
		total int32
		cost  string
		free  []device
	}
	kinds := map[key]*kind{}
	for _, d := range v.devices {
		if len(d.cost) == 0 || d.attr == "" {
			continue
		}
		if !d.typed {
			return nil, fmt.Sprintf("%s device %q in pool %s/%s does not carry partition type attribute %q",
				prefixPartitionTypeMissing, d.name, v.driver, v.pool, d.attr)
		}
		k := key{d.attr, d.partitionType}
		kd := kinds[k]
		if kd == nil {
			kd = &kind{cost: costKey(d.cost)}
			kinds[k] = kd
		} else if costKey(d.cost) != kd.cost {
			return nil, fmt.Sprintf("%s devices of partition type %q in pool %s/%s consume different counters",
				prefixPartitionCostMismatch, d.partitionType, v.driver, v.pool)
		}
		kd.total++
		if !v.inUse[d.name] {
			kd.free = append(kd.free, d)
		}
	}

	left := counterSet(v.counters)
	for _, d := range v.devices {
		if v.inUse[d.name] {
			left.take(d.cost)
		}
	}
	out := make([]resourcev1alpha3.PartitionTypeStatus, 0, len(kinds))
	for k, kd := range kinds {
		avail := left.clone()
		fits := int32(0)
		for _, d := range kd.free {
			if avail.fits(d.cost) {
				fits++
				avail.take(d.cost)
			}
		}
		out = append(out, resourcev1alpha3.PartitionTypeStatus{Attribute: k.attr, Type: k.typ, Total: ptr.To(kd.total), Allocatable: ptr.To(fits)})
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Attribute != out[j].Attribute {
			return out[i].Attribute < out[j].Attribute
		}
		return out[i].Type < out[j].Type
	})
	if len(out) > maxListItems {
		return nil, fmt.Sprintf("%s pool %s/%s has %d partition types, exceeding the maximum of %d",
			prefixPartitionSummaryOverCap, v.driver, v.pool, len(out), maxListItems)
	}
	return out, ""
}

// shareableSummary sums the capacity of the devices allowing several allocations, against
// what the claims consume; nil when the pool has none.
func (v *views) shareableSummary() (*resourcev1alpha3.ShareableSummaryStatus, string) {
	var whole, partly int32
	total := map[resourcev1.QualifiedName]resource.Quantity{}
	found := false
	for _, d := range v.devices {
		if !d.shareable {
			continue
		}
		found = true
		if v.inUse[d.name] {
			partly++
		} else {
			whole++
		}
		for name, c := range d.capacity {
			sum := total[name].DeepCopy()
			sum.Add(c.Value)
			total[name] = sum
		}
	}
	if !found {
		return nil, ""
	}
	names := make([]resourcev1.QualifiedName, 0, len(total))
	for name := range total {
		names = append(names, name)
	}
	slices.Sort(names)
	capacity := make([]resourcev1alpha3.ShareableCapacityStatus, 0, len(names))
	for _, name := range names {
		t := total[name]
		used := resource.Quantity{}
		if q, ok := v.consumed[name]; ok {
			used = q.DeepCopy()
		}
		left := t.DeepCopy()
		left.Sub(used)
		if left.Sign() < 0 {
			left = *resource.NewQuantity(0, t.Format)
		}
		capacity = append(capacity, resourcev1alpha3.ShareableCapacityStatus{Name: string(name), Total: &t, Consumed: &used, Available: &left})
	}
	if len(capacity) > maxListItems {
		return nil, fmt.Sprintf("%s pool %s/%s has %d shareable capacity keys, exceeding the maximum of %d",
			prefixShareableOverCap, v.driver, v.pool, len(capacity), maxListItems)
	}
	return &resourcev1alpha3.ShareableSummaryStatus{FullyAvailableDevices: ptr.To(whole), PartiallyAvailableDevices: ptr.To(partly), Capacity: capacity}, ""
}

// counters is what is left of the pool's shared counters, by counter set and counter.
type counters map[string]map[string]resource.Quantity

func counterSet(sets []resourcev1.CounterSet) counters {
	out := counters{}
	for _, cs := range sets {
		if out[cs.Name] == nil {
			out[cs.Name] = map[string]resource.Quantity{}
		}
		for name, c := range cs.Counters {
			out[cs.Name][name] = c.Value.DeepCopy()
		}
	}
	return out
}

func (c counters) clone() counters {
	out := make(counters, len(c))
	for set, m := range c {
		out[set] = make(map[string]resource.Quantity, len(m))
		for name, q := range m {
			out[set][name] = q.DeepCopy()
		}
	}
	return out
}

// fits: every counter the cost names exists and has enough left.
func (c counters) fits(cost []resourcev1.DeviceCounterConsumption) bool {
	for _, cc := range cost {
		for name, want := range cc.Counters {
			have, ok := c[cc.CounterSet][name]
			if !ok || have.Cmp(want.Value) < 0 {
				return false
			}
		}
	}
	return true
}

// take subtracts the cost from the counters that exist.
func (c counters) take(cost []resourcev1.DeviceCounterConsumption) {
	for _, cc := range cost {
		set := c[cc.CounterSet]
		for name, want := range cc.Counters {
			if have, ok := set[name]; ok {
				have.Sub(want.Value)
				set[name] = have
			}
		}
	}
}

// costKey identifies a device's counter cost, to find partitions of one type that cost
// differently.
func costKey(cost []resourcev1.DeviceCounterConsumption) string {
	var parts []string
	for _, cc := range cost {
		for name, c := range cc.Counters {
			parts = append(parts, cc.CounterSet+"/"+name+"="+c.Value.String())
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}
