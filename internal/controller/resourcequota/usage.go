package resourcequota

import (
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"
	quota "k8s.io/apiserver/pkg/quota/v1"
)

// scopeSelectors are a quota's scopes and scope selector as one list of requirements, all
// of which an object must meet to be charged to it.
func scopeSelectors(rq *corev1.ResourceQuota) []corev1.ScopedResourceSelectorRequirement {
	var out []corev1.ScopedResourceSelectorRequirement
	for _, s := range rq.Spec.Scopes {
		out = append(out, corev1.ScopedResourceSelectorRequirement{ScopeName: s, Operator: corev1.ScopeSelectorOpExists})
	}
	if rq.Spec.ScopeSelector != nil {
		out = append(out, rq.Spec.ScopeSelector.MatchExpressions...)
	}
	return out
}

// selectorMatches evaluates a scope selector requirement against the values the object has
// for the scope (none, or one).
func selectorMatches(sel corev1.ScopedResourceSelectorRequirement, values []string) (bool, error) {
	has := len(values) > 0
	in := func() bool {
		for _, v := range values {
			if slices.Contains(sel.Values, v) {
				return true
			}
		}
		return false
	}
	switch sel.Operator {
	case corev1.ScopeSelectorOpIn, corev1.ScopeSelectorOpNotIn:
		if len(sel.Values) == 0 {
			return false, fmt.Errorf("scope %s: for 'in', 'notin' operators, values set can't be empty", sel.ScopeName)
		}
		if sel.Operator == corev1.ScopeSelectorOpIn {
			return in(), nil
		}
		return !in(), nil
	case corev1.ScopeSelectorOpExists, corev1.ScopeSelectorOpDoesNotExist:
		if len(sel.Values) != 0 {
			return false, fmt.Errorf("scope %s: values set must be empty for exists and does not exist", sel.ScopeName)
		}
		return has == (sel.Operator == corev1.ScopeSelectorOpExists), nil
	}
	return false, fmt.Errorf("%q is not a valid scope selector operator", sel.Operator)
}

// noScope is the scope function of resources no scope applies to: a scoped quota charges
// none of their objects.
func noScope[T any](corev1.ScopedResourceSelectorRequirement, T) (bool, error) { return false, nil }

// sumUsage adds up what the objects in the quota's scopes are charged for the given
// resources; every resource is reported, zero when nothing is charged.
func sumUsage[T any](items []T, selectors []corev1.ScopedResourceSelectorRequirement, names []corev1.ResourceName,
	inScope func(corev1.ScopedResourceSelectorRequirement, T) (bool, error), usage func(T) corev1.ResourceList) (corev1.ResourceList, error) {
	out := corev1.ResourceList{}
	for _, n := range names {
		out[n] = resource.Quantity{Format: resource.DecimalSI}
	}
	for _, item := range items {
		match := true
		for _, sel := range selectors {
			ok, err := inScope(sel, item)
			if err != nil {
				return nil, err
			}
			if !ok {
				match = false
				break
			}
		}
		if !match {
			continue
		}
		out = quota.Add(out, quota.Mask(usage(item), names))
	}
	return out, nil
}

// countUsage is the usage of the object count resources of a kind no scope applies to.
func countUsage(n int, selectors []corev1.ScopedResourceSelectorRequirement, names []corev1.ResourceName) corev1.ResourceList {
	if len(selectors) > 0 {
		n = 0
	}
	out := corev1.ResourceList{}
	for _, name := range names {
		out[name] = *resource.NewQuantity(int64(n), resource.DecimalSI)
	}
	return out
}

// newStatus is the quota status to write, as upstream's syncResourceQuota: hard from spec,
// and used for exactly the hard resources, from what was measured, else as last observed
// (e.g. charged by admission for resources kcm cannot count).
func newStatus(rq *corev1.ResourceQuota, measured corev1.ResourceList) corev1.ResourceQuotaStatus {
	used := quota.Add(corev1.ResourceList{}, rq.Status.Used)
	for name, q := range measured {
		used[name] = q
	}
	hard := quota.Add(corev1.ResourceList{}, rq.Spec.Hard)
	return corev1.ResourceQuotaStatus{Hard: hard, Used: quota.Mask(used, quota.ResourceNames(hard))}
}

// statusChanged reports whether the new status must be written: hard differs from spec,
// status was never written, or used changed.
func statusChanged(rq *corev1.ResourceQuota, st corev1.ResourceQuotaStatus) bool {
	return !equality.Semantic.DeepEqual(rq.Spec.Hard, rq.Status.Hard) || rq.Status.Hard == nil || rq.Status.Used == nil ||
		!quota.Equals(st.Used, rq.Status.Used)
}

// missingUsage reports whether a quota waits for its first sync: hard is not yet in
// status, or a resource kcm counts has no usage. Such quotas go first, because the API
// server's quota admission needs status.hard before it lets anything be charged.
func missingUsage(rq *corev1.ResourceQuota) bool {
	if !equality.Semantic.DeepEqual(rq.Spec.Hard, rq.Status.Hard) {
		return true
	}
	for name := range rq.Status.Hard {
		if _, ok := rq.Status.Used[name]; ok {
			continue
		}
		if _, tracked := trackedResource(name); tracked {
			return true
		}
	}
	return false
}
