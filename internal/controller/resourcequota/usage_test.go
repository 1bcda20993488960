package resourcequota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
)

func TestSumUsageScopes(t *testing.T) {
	bestEffortPod := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "a"}}}}
	burstable := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{container("a", rl("cpu", "250m", "memory", "64Mi"), nil)}}}
	terminatingBE := &corev1.Pod{Spec: corev1.PodSpec{ActiveDeadlineSeconds: ptr.To[int64](10), Containers: []corev1.Container{{Name: "a"}}}}
	done := &corev1.Pod{Spec: burstable.Spec, Status: corev1.PodStatus{Phase: corev1.PodFailed}}
	pods := []*corev1.Pod{bestEffortPod, burstable, terminatingBE, done}
	usage := func(p *corev1.Pod) corev1.ResourceList { return podUsage(p, now) }

	tests := []struct {
		name  string
		quota corev1.ResourceQuotaSpec
		names []corev1.ResourceName
		want  corev1.ResourceList
	}{
		{
			name:  "unscoped: every pod, terminal pods only as objects",
			names: []corev1.ResourceName{"pods", "count/pods", "requests.cpu", "requests.memory"},
			want:  rl("pods", "3", "count/pods", "4", "requests.cpu", "250m", "requests.memory", "64Mi"),
		},
		{
			name:  "BestEffort",
			quota: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}},
			names: []corev1.ResourceName{"pods"},
			want:  rl("pods", "2"),
		},
		{
			name:  "BestEffort and NotTerminating",
			quota: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort, corev1.ResourceQuotaScopeNotTerminating}},
			names: []corev1.ResourceName{"pods"},
			want:  rl("pods", "1"),
		},
		{
			name: "NotBestEffort through a scope selector",
			quota: corev1.ResourceQuotaSpec{ScopeSelector: &corev1.ScopeSelector{MatchExpressions: []corev1.ScopedResourceSelectorRequirement{
				{ScopeName: corev1.ResourceQuotaScopeNotBestEffort, Operator: corev1.ScopeSelectorOpExists},
			}}},
			names: []corev1.ResourceName{"pods", "requests.cpu"},
			want:  rl("pods", "1", "requests.cpu", "250m"),
		},
		{
			name:  "nothing in scope reports zero",
			quota: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeTerminating, corev1.ResourceQuotaScopeNotBestEffort}},
			names: []corev1.ResourceName{"pods", "limits.memory"},
			want:  rl("pods", "0", "limits.memory", "0"),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := sumUsage(pods, scopeSelectors(&corev1.ResourceQuota{Spec: tt.quota}), tt.names, podMatchesScope, usage)
			if err != nil {
				t.Fatal(err)
			}
			sameResources(t, got, tt.want)
		})
	}

	t.Run("a bad selector is an error", func(t *testing.T) {
		sel := []corev1.ScopedResourceSelectorRequirement{{ScopeName: corev1.ResourceQuotaScopePriorityClass, Operator: "Near"}}
		if _, err := sumUsage(pods, sel, []corev1.ResourceName{"pods"}, podMatchesScope, usage); err == nil {
			t.Error("want an error")
		}
	})
	t.Run("kinds no scope applies to count nothing in scoped quotas", func(t *testing.T) {
		svcs := []*corev1.Service{{}, {}}
		sel := scopeSelectors(&corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Scopes: []corev1.ResourceQuotaScope{corev1.ResourceQuotaScopeBestEffort}}})
		got, err := sumUsage(svcs, sel, []corev1.ResourceName{"services"}, noScope[*corev1.Service], serviceUsage)
		if err != nil {
			t.Fatal(err)
		}
		sameResources(t, got, rl("services", "0"))
		sameResources(t, countUsage(5, sel, []corev1.ResourceName{"configmaps", "count/configmaps"}), rl("configmaps", "0", "count/configmaps", "0"))
		sameResources(t, countUsage(5, nil, []corev1.ResourceName{"configmaps", "count/configmaps"}), rl("configmaps", "5", "count/configmaps", "5"))
	})
}

func TestNextChargeEnd(t *testing.T) {
	terminating := func(endsIn time.Duration) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{
			DeletionTimestamp:          ptr.To(metav1.NewTime(now.Add(endsIn - 30*time.Second))),
			DeletionGracePeriodSeconds: ptr.To[int64](30),
		}}
	}
	if got := nextChargeEnd([]*corev1.Pod{{}, terminating(20 * time.Second), terminating(5 * time.Second), terminating(-time.Second)}, now); got != 6*time.Second {
		t.Errorf("got %v, want 6s (the soonest end, plus a second)", got)
	}
	if got := nextChargeEnd([]*corev1.Pod{{}}, now); got != 0 {
		t.Errorf("got %v, want 0", got)
	}
}

func TestNewStatus(t *testing.T) {
	rq := &corev1.ResourceQuota{
		Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "10", "requests.cpu", "2", "example.com/custom", "3")},
		Status: corev1.ResourceQuotaStatus{
			Hard: rl("pods", "5", "secrets", "1"),
			Used: rl("pods", "1", "secrets", "1", "example.com/custom", "2"),
		},
	}
	st := newStatus(rq, rl("pods", "4", "requests.cpu", "500m"))
	sameResources(t, st.Hard, rq.Spec.Hard)
	// Measured where measured, the last usage kept where kcm cannot count, and resources
	// no longer hard dropped.
	sameResources(t, st.Used, rl("pods", "4", "requests.cpu", "500m", "example.com/custom", "2"))
	if !statusChanged(rq, st) {
		t.Error("want changed")
	}

	rq.Status = st
	if statusChanged(rq, newStatus(rq, rl("pods", "4000m", "requests.cpu", "0.5"))) {
		t.Error("equal quantities in other forms are no change")
	}
	if !statusChanged(rq, newStatus(rq, rl("pods", "3"))) {
		t.Error("want changed usage")
	}

	empty := &corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{}}}
	if !statusChanged(empty, newStatus(empty, nil)) {
		t.Error("a status never written must be written")
	}
}

func TestMissingUsage(t *testing.T) {
	for _, tt := range []struct {
		name string
		rq   corev1.ResourceQuota
		want bool
	}{
		{"new", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "1")}}, true},
		{"hard changed", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "2")}, Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "1"), Used: rl("pods", "0")}}, true},
		{"usage missing", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "1", "secrets", "1")}, Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "1", "secrets", "1"), Used: rl("pods", "0")}}, true},
		{"only uncountable usage missing", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "1", "example.com/x", "1")}, Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "1", "example.com/x", "1"), Used: rl("pods", "0")}}, false},
		{"synced", corev1.ResourceQuota{Spec: corev1.ResourceQuotaSpec{Hard: rl("pods", "1")}, Status: corev1.ResourceQuotaStatus{Hard: rl("pods", "1"), Used: rl("pods", "1")}}, false},
	} {
		if got := missingUsage(&tt.rq); got != tt.want {
			t.Errorf("%s: got %v, want %v", tt.name, got, tt.want)
		}
	}
}

func TestMetadataTransform(t *testing.T) {
	in := &metav1.PartialObjectMetadata{
		TypeMeta: metav1.TypeMeta{Kind: "ConfigMap", APIVersion: "v1"},
		ObjectMeta: metav1.ObjectMeta{
			Name: "a", Namespace: "ns", UID: "u", ResourceVersion: "7",
			Labels: map[string]string{"x": "y"}, Annotations: map[string]string{"big": "..."},
		},
	}
	out, err := MetadataTransform(in)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*metav1.PartialObjectMetadata)
	if got.Name != "a" || got.Namespace != "ns" || got.UID != "u" || got.ResourceVersion != "7" || got.Kind != "ConfigMap" {
		t.Errorf("identity lost: %+v", got)
	}
	if got.Labels != nil || got.Annotations != nil {
		t.Errorf("kept more than needed: %+v", got)
	}
	if other, _ := MetadataTransform("tombstone"); other != "tombstone" {
		t.Error("other objects pass through")
	}
}

func TestLowered(t *testing.T) {
	recorded := corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("1")}
	for _, tt := range []struct {
		now  corev1.ResourceList
		want bool
	}{
		{corev1.ResourceList{corev1.ResourcePods: resource.MustParse("1")}, true},
		{corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2"), corev1.ResourceCPU: resource.MustParse("1000m")}, false},
		{corev1.ResourceList{corev1.ResourcePods: resource.MustParse("3")}, false},
		{corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("0")}, false}, // nothing recorded to go below
	} {
		if got := lowered(recorded, tt.now); got != tt.want {
			t.Errorf("lowered(%v) = %v, want %v", tt.now, got, tt.want)
		}
	}
}
