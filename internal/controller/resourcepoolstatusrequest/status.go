package resourcepoolstatusrequest

import (
	"fmt"
	"sort"
	"strings"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

// Upstream's condition reasons.
const (
	ReasonComplete = "CalculationComplete"
	ReasonFailed   = "CalculationFailed"
)

// maxMessageBytes is the API's limit on a pool's validationError (+k8s:maxBytes=256).
const maxMessageBytes = 256

// Prefixes of a pool's validationError, as upstream writes them. Only an incomplete pool is
// transient: the driver is still publishing its slices, so the request is retried.
const (
	PrefixPoolIncomplete          = "PoolIncomplete:"
	prefixPartitionTypeMissing    = "PartitionTypeMissing:"
	prefixPartitionCostMismatch   = "PartitionCostMismatch:"
	prefixPartitionSummaryOverCap = "PartitionSummaryOverCap:"
	prefixShareableOverCap        = "ShareableSummaryOverCap:"
)

// Inputs is what a request's status is computed from: the cache's slices, claims and (with
// DRADeviceTaintRules) DeviceTaintRules.
type Inputs struct {
	Slices     []resourcev1.ResourceSlice
	Claims     []resourcev1.ResourceClaim
	TaintRules []resourcev1.DeviceTaintRule
}

// pool is what the slices of one pool's newest generation say.
type pool struct {
	driver, name string
	generation   int64
	// node is the first slice's node; mixedNodes when the slices disagree.
	node        string
	mixedNodes  bool
	slices      int32
	wantSlices  int64
	devices     int32
	unavailable int32
	// For the partition and shareable views.
	records  []device
	counters []resourcev1.CounterSet
}

// usage is what the allocated claims consume of one pool (AdminAccess results excluded:
// they observe a device, they do not consume it).
type usage struct {
	inUse    map[string]bool
	consumed map[resourcev1.QualifiedName]resource.Quantity
}

// Compute is the request's status from in, at now: one entry per pool of the driver (of
// the named pool only, when the request names one), sorted by driver and pool, at most
// spec.limit of them.
func Compute(req *resourcev1alpha3.ResourcePoolStatusRequest, in Inputs, now metav1.Time) resourcev1alpha3.ResourcePoolStatusRequestStatus {
	pools := observePools(req, in)
	used := observeUsage(in.Claims)

	var out []resourcev1alpha3.PoolStatus
	for key, p := range pools {
		out = append(out, poolStatus(req, p, used[key]))
	}
	sort.Slice(out, func(i, j int) bool {
		if out[i].Driver != out[j].Driver {
			return out[i].Driver < out[j].Driver
		}
		return out[i].PoolName < out[j].PoolName
	})
	total := int32(len(out))
	limit := resourcev1alpha3.ResourcePoolStatusRequestLimitDefault
	if req.Spec.Limit != nil {
		limit = *req.Spec.Limit
	}
	if total > limit {
		out = out[:limit]
	}

	flagged := 0
	for _, p := range out {
		if p.ValidationError != nil {
			flagged++
		}
	}
	message := fmt.Sprintf("Calculated status for %d pools", len(out))
	if flagged > 0 {
		message = fmt.Sprintf("Calculated status for %d pools (%d incomplete)", len(out), flagged)
	}
	return resourcev1alpha3.ResourcePoolStatusRequestStatus{
		PoolCount: ptr.To(total),
		Pools:     out,
		Conditions: []metav1.Condition{{
			Type: resourcev1alpha3.ResourcePoolStatusRequestConditionComplete, Status: metav1.ConditionTrue,
			LastTransitionTime: now, Reason: ReasonComplete, Message: message,
		}},
	}
}

// Failed is the status of a request that could not be computed.
func Failed(message string, now metav1.Time) resourcev1alpha3.ResourcePoolStatusRequestStatus {
	return resourcev1alpha3.ResourcePoolStatusRequestStatus{
		PoolCount: ptr.To[int32](0),
		Conditions: []metav1.Condition{{
			Type: resourcev1alpha3.ResourcePoolStatusRequestConditionFailed, Status: metav1.ConditionTrue,
			LastTransitionTime: now, Reason: ReasonFailed, Message: message,
		}},
	}
}

// HasIncompletePool: some pool's slices are not all published yet.
func HasIncompletePool(status *resourcev1alpha3.ResourcePoolStatusRequestStatus) bool {
	for _, p := range status.Pools {
		if p.ValidationError != nil && strings.HasPrefix(*p.ValidationError, PrefixPoolIncomplete) {
			return true
		}
	}
	return false
}

func poolKey(driver, name string) string { return driver + "/" + name }

// observePools gathers the request's pools from the slices of each pool's newest generation
// (older generations are on their way out, KEP-5677).
func observePools(req *resourcev1alpha3.ResourcePoolStatusRequest, in Inputs) map[string]*pool {
	wanted := func(s *resourcev1.ResourceSlice) bool {
		return s.Spec.Driver == req.Spec.Driver && (req.Spec.PoolName == nil || *req.Spec.PoolName == "" || s.Spec.Pool.Name == *req.Spec.PoolName)
	}
	newest := map[string]int64{}
	for i := range in.Slices {
		s := &in.Slices[i]
		if !wanted(s) {
			continue
		}
		key := poolKey(s.Spec.Driver, s.Spec.Pool.Name)
		if g, ok := newest[key]; !ok || s.Spec.Pool.Generation > g {
			newest[key] = s.Spec.Pool.Generation
		}
	}

	pools := map[string]*pool{}
	for i := range in.Slices {
		s := &in.Slices[i]
		if !wanted(s) {
			continue
		}
		key := poolKey(s.Spec.Driver, s.Spec.Pool.Name)
		if s.Spec.Pool.Generation < newest[key] {
			continue
		}
		node := ptr.Deref(s.Spec.NodeName, "")
		p := pools[key]
		if p == nil {
			p = &pool{driver: s.Spec.Driver, name: s.Spec.Pool.Name, generation: newest[key], node: node, wantSlices: s.Spec.Pool.ResourceSliceCount}
			pools[key] = p
		} else if node != p.node {
			p.mixedNodes = true
		}
		p.slices++
		p.devices += int32(len(s.Spec.Devices))
		for j := range s.Spec.Devices {
			if Unavailable(s.Spec.Driver, s.Spec.Pool.Name, &s.Spec.Devices[j], in.TaintRules) {
				p.unavailable++
			}
		}
		p.records = append(p.records, devicesOf(s)...)
		p.counters = append(p.counters, s.Spec.SharedCounters...)
	}
	return pools
}

// observeUsage gathers, per pool, the devices allocated to claims (each device once, however
// many claims share it) and the capacity they consume.
func observeUsage(claims []resourcev1.ResourceClaim) map[string]*usage {
	out := map[string]*usage{}
	for i := range claims {
		alloc := claims[i].Status.Allocation
		if alloc == nil {
			continue
		}
		for _, r := range alloc.Devices.Results {
			if ptr.Deref(r.AdminAccess, false) {
				continue
			}
			key := poolKey(r.Driver, r.Pool)
			u := out[key]
			if u == nil {
				u = &usage{inUse: map[string]bool{}, consumed: map[resourcev1.QualifiedName]resource.Quantity{}}
				out[key] = u
			}
			u.inUse[r.Device] = true
			for name, q := range r.ConsumedCapacity {
				sum := u.consumed[name].DeepCopy()
				sum.Add(q)
				u.consumed[name] = sum
			}
		}
	}
	return out
}

// poolStatus is one pool's entry: counts and views when all its slices are there, only the
// incomplete error otherwise.
func poolStatus(req *resourcev1alpha3.ResourcePoolStatusRequest, p *pool, u *usage) resourcev1alpha3.PoolStatus {
	st := resourcev1alpha3.PoolStatus{Driver: p.driver, PoolName: p.name, Generation: p.generation}
	if p.node != "" && !p.mixedNodes {
		st.NodeName = ptr.To(p.node)
	}
	if int64(p.slices) < p.wantSlices {
		st.ValidationError = ptr.To(truncate(fmt.Sprintf("%s pool %s/%s is incomplete: observed %d/%d slices at generation %d",
			PrefixPoolIncomplete, p.driver, p.name, p.slices, p.wantSlices, p.generation)))
		return st
	}
	if u == nil {
		u = &usage{}
	}
	allocated := int32(len(u.inUse))
	st.ResourceSliceCount = ptr.To(p.slices)
	st.TotalDevices = ptr.To(p.devices)
	st.AllocatedDevices = ptr.To(allocated)
	st.UnavailableDevices = ptr.To(p.unavailable)
	st.AvailableDevices = ptr.To(max(0, p.devices-allocated-p.unavailable))

	// The views; the counts above hold even when a view flags the pool.
	v := views{driver: p.driver, pool: p.name, devices: p.records, counters: p.counters, inUse: u.inUse, consumed: u.consumed}
	v.resolvePartitions(req.Spec.DefaultPartitionTypeAttribute)
	partitions, shareable, problem := v.compute()
	st.PartitionSummary = partitions
	st.ShareableSummary = shareable
	if problem != "" {
		st.ValidationError = ptr.To(truncate(problem))
	}
	return st
}

// Unavailable: the device may not be scheduled, by a NoSchedule or NoExecute taint of its
// own or of a DeviceTaintRule selecting it.
func Unavailable(driver, poolName string, d *resourcev1.Device, rules []resourcev1.DeviceTaintRule) bool {
	for _, t := range d.Taints {
		if blocks(t.Effect) {
			return true
		}
	}
	for i := range rules {
		if ruleSelects(&rules[i], driver, poolName, d.Name) {
			return true
		}
	}
	return false
}

func blocks(e resourcev1.DeviceTaintEffect) bool {
	return e == resourcev1.DeviceTaintEffectNoSchedule || e == resourcev1.DeviceTaintEffectNoExecute
}

// ruleSelects: the rule's blocking taint applies to the device. A rule without a selector
// selects nothing.
func ruleSelects(rule *resourcev1.DeviceTaintRule, driver, poolName, name string) bool {
	sel := rule.Spec.DeviceSelector
	if !blocks(rule.Spec.Taint.Effect) || sel == nil {
		return false
	}
	return (sel.Driver == nil || *sel.Driver == driver) &&
		(sel.Pool == nil || *sel.Pool == poolName) &&
		(sel.Device == nil || *sel.Device == name)
}

func truncate(s string) string {
	if len(s) > maxMessageBytes {
		return s[:maxMessageBytes]
	}
	return s
}
