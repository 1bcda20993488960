package clusterroleaggregation

import (
	"sort"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// Aggregate is the rules an aggregated ClusterRole named self should hold, given every
// ClusterRole there is, in upstream's order: selector by selector, the matching roles by
// name (self left out), each role's rules in its order, a rule already present (by semantic
// equality) not added again. It is never nil, so that an aggregation matching nothing still
// compares equal to a role without rules.
func Aggregate(self string, rule *rbacv1.AggregationRule, roles []rbacv1.ClusterRole) ([]rbacv1.PolicyRule, error) {
	out := []rbacv1.PolicyRule{}
	for i := range rule.ClusterRoleSelectors {
		sel, err := metav1.LabelSelectorAsSelector(&rule.ClusterRoleSelectors[i])
		if err != nil {
			return nil, err
		}
		matched := matching(sel, roles)
		for _, r := range matched {
			if r.Name == self {
				continue
			}
			for _, pr := range r.Rules {
				if !contains(out, pr) {
					out = append(out, pr)
				}
			}
		}
	}
	return out, nil
}

// matching is the roles sel selects, sorted by name.
func matching(sel labels.Selector, roles []rbacv1.ClusterRole) []*rbacv1.ClusterRole {
	var out []*rbacv1.ClusterRole
	for i := range roles {
		if sel.Matches(labels.Set(roles[i].Labels)) {
			out = append(out, &roles[i])
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

func contains(rules []rbacv1.PolicyRule, r rbacv1.PolicyRule) bool {
	for i := range rules {
		if equality.Semantic.DeepEqual(rules[i], r) {
			return true
		}
	}
	return false
}

// UpToDate reports whether the role already holds rules: nil and empty count as equal, as
// upstream's semantic comparison has it, so that nothing is written when nothing changed.
func UpToDate(current, rules []rbacv1.PolicyRule) bool {
	return equality.Semantic.DeepEqual(rules, current)
}
