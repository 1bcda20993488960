package clusterroleaggregation

import (
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestAggregate(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	list := rbacv1.PolicyRule{Verbs: []string{"list"}, APIGroups: []string{""}, Resources: []string{"pods"}}
	logs := rbacv1.PolicyRule{Verbs: []string{"get"}, NonResourceURLs: []string{"/logs"}}
	sel := func(k string) metav1.LabelSelector {
		return metav1.LabelSelector{MatchLabels: map[string]string{k: "true"}}
	}
	role := func(name string, labels map[string]string, rules ...rbacv1.PolicyRule) rbacv1.ClusterRole {
		return rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: name, Labels: labels}, Rules: rules}
	}
	a := map[string]string{"a": "true"}
	ab := map[string]string{"a": "true", "b": "true"}
	cases := []struct {
		name      string
		selectors []metav1.LabelSelector
		roles     []rbacv1.ClusterRole
		want      []rbacv1.PolicyRule
	}{
		{"nothing matches: empty, not nil", []metav1.LabelSelector{sel("a")}, []rbacv1.ClusterRole{role("x", nil, get)}, []rbacv1.PolicyRule{}},
		{"matching roles by name", []metav1.LabelSelector{sel("a")},
			[]rbacv1.ClusterRole{role("z", a, get), role("m", a, list)}, []rbacv1.PolicyRule{list, get}},
		{"a rule twice is kept once", []metav1.LabelSelector{sel("a")},
			[]rbacv1.ClusterRole{role("r1", a, get, list), role("r2", a, list, logs)}, []rbacv1.PolicyRule{get, list, logs}},
		{"selectors in order, then names", []metav1.LabelSelector{sel("b"), sel("a")},
			[]rbacv1.ClusterRole{role("r1", a, get), role("r2", ab, logs)}, []rbacv1.PolicyRule{logs, get}},
		{"the role itself is left out", []metav1.LabelSelector{sel("a")},
			[]rbacv1.ClusterRole{role("self", a, logs), role("r", a, get)}, []rbacv1.PolicyRule{get}},
		{"no selectors", nil, []rbacv1.ClusterRole{role("r", a, get)}, []rbacv1.PolicyRule{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Aggregate("self", &rbacv1.AggregationRule{ClusterRoleSelectors: c.selectors}, c.roles)
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || !equality.Semantic.DeepEqual(got, c.want) || len(got) != len(c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
		})
	}
	bad := []metav1.LabelSelector{{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "a", Operator: "Bogus"}}}}
	if _, err := Aggregate("self", &rbacv1.AggregationRule{ClusterRoleSelectors: bad}, nil); err == nil {
		t.Error("an invalid selector: no error")
	}
}

func TestUpToDate(t *testing.T) {
	get := rbacv1.PolicyRule{Verbs: []string{"get"}, Resources: []string{"pods"}}
	list := rbacv1.PolicyRule{Verbs: []string{"list"}, Resources: []string{"pods"}}
	cases := []struct {
		name           string
		current, rules []rbacv1.PolicyRule
		want           bool
	}{
		{"nil and empty", nil, []rbacv1.PolicyRule{}, true},
		{"same", []rbacv1.PolicyRule{get, list}, []rbacv1.PolicyRule{get, list}, true},
		{"order differs", []rbacv1.PolicyRule{list, get}, []rbacv1.PolicyRule{get, list}, false},
		{"one missing", []rbacv1.PolicyRule{get}, []rbacv1.PolicyRule{get, list}, false},
		{"one too many", []rbacv1.PolicyRule{get, list}, []rbacv1.PolicyRule{get}, false},
	}
	for _, c := range cases {
		if got := UpToDate(c.current, c.rules); got != c.want {
			t.Errorf("%s: got %v, want %v", c.name, got, c.want)
		}
	}
}
