package namespace

import (
	"errors"
	"slices"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/utils/ptr"
)

func TestFailingConditions(t *testing.T) {
	deploymentsGVR := schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	tests := []struct {
		name string
		obs  func(o *observation)
		want map[corev1.NamespaceConditionType][2]string // reason, message
	}{
		{name: "nothing wrong", obs: func(*observation) {}, want: map[corev1.NamespaceConditionType][2]string{}},
		{
			name: "partial discovery",
			obs: func(o *observation) {
				o.discoveryErr = &discovery.ErrGroupDiscoveryFailed{Groups: map[schema.GroupVersion]error{
					{Group: "metrics.k8s.io", Version: "v1beta1"}: errors.New("the server is currently unable to handle the request"),
				}}
			},
			want: map[corev1.NamespaceConditionType][2]string{
				corev1.NamespaceDeletionDiscoveryFailure: {"DiscoveryFailed", "Discovery failed for some groups, 1 failing: unable to retrieve the complete list of server APIs: metrics.k8s.io/v1beta1: the server is currently unable to handle the request"},
			},
		},
		{
			name: "other discovery error",
			obs:  func(o *observation) { o.discoveryErr = errors.New("connection refused") },
			want: map[corev1.NamespaceConditionType][2]string{
				corev1.NamespaceDeletionDiscoveryFailure: {"DiscoveryFailed", "connection refused"},
			},
		},
		{
			name: "group version parsing",
			obs:  func(o *observation) { o.groupVersionErr = errors.New("unexpected GroupVersion string: a/b/c") },
			want: map[corev1.NamespaceConditionType][2]string{
				corev1.NamespaceDeletionGVParsingFailure: {"GroupVersionParsingFailed", "unexpected GroupVersion string: a/b/c"},
			},
		},
		{
			name: "content errors sorted",
			obs:  func(o *observation) { o.contentErrs = []error{errors.New("zz failed"), errors.New("aa failed")} },
			want: map[corev1.NamespaceConditionType][2]string{
				corev1.NamespaceDeletionContentFailure: {"ContentDeletionFailed", "Failed to delete all resource types, 2 remaining: aa failed, zz failed"},
			},
		},
		{
			name: "content and finalizers remaining, as upstream's integration test expects",
			obs: func(o *observation) {
				o.add(deploymentsGVR, resourceResult{remaining: 1, finalizers: map[string]int{"custom.io/finalizer": 1}})
				o.add(podsGVR, resourceResult{remaining: 2})
				o.add(corev1.SchemeGroupVersion.WithResource("configmaps"), resourceResult{})
			},
			want: map[corev1.NamespaceConditionType][2]string{
				corev1.NamespaceContentRemaining:    {"SomeResourcesRemain", "Some resources are remaining: deployments.apps has 1 resource instances, pods. has 2 resource instances"},
				corev1.NamespaceFinalizersRemaining: {"SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: custom.io/finalizer in 1 resource instances"},
			},
		},
		{
			name: "finalizers summed across resources",
			obs: func(o *observation) {
				o.add(deploymentsGVR, resourceResult{remaining: 1, finalizers: map[string]int{"b.io/x": 1, "a.io/y": 1}})
				o.add(podsGVR, resourceResult{remaining: 1, finalizers: map[string]int{"b.io/x": 1}})
			},
			want: map[corev1.NamespaceConditionType][2]string{
				corev1.NamespaceContentRemaining:    {"SomeResourcesRemain", "Some resources are remaining: deployments.apps has 1 resource instances, pods. has 1 resource instances"},
				corev1.NamespaceFinalizersRemaining: {"SomeFinalizersRemain", "Some content in the namespace has finalizers remaining: a.io/y in 1 resource instances, b.io/x in 2 resource instances"},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := newObservation()
			tt.obs(o)
			got := o.failing()
			if len(got) != len(tt.want) {
				t.Fatalf("got %d failing conditions %v, want %d", len(got), got, len(tt.want))
			}
			for typ, rm := range tt.want {
				c, ok := got[typ]
				if !ok {
					t.Fatalf("no %s condition", typ)
				}
				if c.Status != corev1.ConditionTrue || c.Reason != rm[0] || c.Message != rm[1] {
					t.Errorf("%s = %s/%s/%q, want True/%s/%q", typ, c.Status, c.Reason, c.Message, rm[0], rm[1])
				}
			}
		})
	}
}

func TestApplyConditions(t *testing.T) {
	t0 := metav1.NewTime(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	t1 := metav1.NewTime(t0.Add(time.Minute))
	remaining := corev1.NamespaceCondition{Type: corev1.NamespaceContentRemaining, Status: corev1.ConditionTrue, Reason: "SomeResourcesRemain", Message: "Some resources are remaining: pods. has 1 resource instances"}

	t.Run("first pass writes all five, the good ones False", func(t *testing.T) {
		st := &corev1.NamespaceStatus{}
		if !applyConditions(st, map[corev1.NamespaceConditionType]corev1.NamespaceCondition{remaining.Type: remaining}, t0) {
			t.Fatal("want changed")
		}
		var types []corev1.NamespaceConditionType
		for _, c := range st.Conditions {
			types = append(types, c.Type)
			if c.LastTransitionTime != t0 {
				t.Errorf("%s transition time %v, want %v", c.Type, c.LastTransitionTime, t0)
			}
			want := corev1.ConditionFalse
			if c.Type == remaining.Type {
				want = corev1.ConditionTrue
			}
			if c.Status != want {
				t.Errorf("%s status %s, want %s", c.Type, c.Status, want)
			}
		}
		if !slices.Equal(types, conditionTypes) {
			t.Errorf("types %v, want %v", types, conditionTypes)
		}
		if c := st.Conditions[0]; c.Reason != "ResourcesDiscovered" || c.Message != "All resources successfully discovered" {
			t.Errorf("discovery condition %s/%q", c.Reason, c.Message)
		}
	})

	t.Run("unchanged is not a change", func(t *testing.T) {
		st := &corev1.NamespaceStatus{}
		applyConditions(st, map[corev1.NamespaceConditionType]corev1.NamespaceCondition{remaining.Type: remaining}, t0)
		if applyConditions(st, map[corev1.NamespaceConditionType]corev1.NamespaceCondition{remaining.Type: remaining}, t1) {
			t.Error("want unchanged")
		}
	})

	t.Run("a message change keeps the transition time, a status change moves it", func(t *testing.T) {
		st := &corev1.NamespaceStatus{}
		applyConditions(st, map[corev1.NamespaceConditionType]corev1.NamespaceCondition{remaining.Type: remaining}, t0)
		more := remaining
		more.Message = "Some resources are remaining: pods. has 2 resource instances"
		if !applyConditions(st, map[corev1.NamespaceConditionType]corev1.NamespaceCondition{remaining.Type: more}, t1) {
			t.Fatal("want changed")
		}
		c := st.Conditions[slices.IndexFunc(st.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == remaining.Type })]
		if c.Message != more.Message || c.LastTransitionTime != t0 {
			t.Errorf("got %q at %v, want %q at %v", c.Message, c.LastTransitionTime, more.Message, t0)
		}
		if !applyConditions(st, nil, t1) {
			t.Fatal("want changed")
		}
		c = st.Conditions[slices.IndexFunc(st.Conditions, func(c corev1.NamespaceCondition) bool { return c.Type == remaining.Type })]
		if c.Status != corev1.ConditionFalse || c.Reason != "ContentRemoved" || c.Message != "All content successfully removed" || c.LastTransitionTime != t1 {
			t.Errorf("got %+v", c)
		}
	})

	t.Run("foreign conditions are kept", func(t *testing.T) {
		st := &corev1.NamespaceStatus{Conditions: []corev1.NamespaceCondition{{Type: "Other", Status: corev1.ConditionTrue}}}
		applyConditions(st, nil, t0)
		if len(st.Conditions) != 6 || st.Conditions[0].Type != "Other" {
			t.Errorf("got %+v", st.Conditions)
		}
	})
}

func TestDeletableResources(t *testing.T) {
	lists := []*metav1.APIResourceList{
		{GroupVersion: "v1", APIResources: []metav1.APIResource{
			{Name: "pods", Namespaced: true, Verbs: []string{"create", "delete", "deletecollection", "get", "list", "watch"}},
			{Name: "bindings", Namespaced: true, Verbs: []string{"create"}},
		}},
		{GroupVersion: "stable.example.com/v1", APIResources: []metav1.APIResource{
			{Name: "crontabs", Namespaced: true, Verbs: []string{"delete", "get"}},
		}},
		{GroupVersion: "a/b/c", APIResources: []metav1.APIResource{{Name: "bad", Verbs: []string{"delete"}}}},
		nil,
	}
	got, err := deletableResources(lists)
	if err == nil {
		t.Error("want the group version parsing error")
	}
	if len(got) != 2 {
		t.Fatalf("got %v, want pods and crontabs", got)
	}
	if v := got[podsGVR]; !v["deletecollection"] || !v["list"] {
		t.Errorf("pods verbs %v", v)
	}
	if v := got[schema.GroupVersionResource{Group: "stable.example.com", Version: "v1", Resource: "crontabs"}]; v == nil || v["list"] || v["deletecollection"] {
		t.Errorf("crontabs verbs %v", v)
	}
}

func TestPodGraceEstimate(t *testing.T) {
	deleted := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	pod := func(grace *int64, phase corev1.PodPhase) corev1.Pod {
		return corev1.Pod{Spec: corev1.PodSpec{TerminationGracePeriodSeconds: grace}, Status: corev1.PodStatus{Phase: phase}}
	}
	tests := []struct {
		name string
		pods []corev1.Pod
		now  time.Time
		want int64
	}{
		{name: "no pods", now: deleted, want: 0},
		{name: "longest grace of running pods", pods: []corev1.Pod{pod(ptr.To[int64](30), corev1.PodRunning), pod(ptr.To[int64](10), corev1.PodPending)}, now: deleted.Add(5 * time.Second), want: 30},
		{name: "terminal pods do not count", pods: []corev1.Pod{pod(ptr.To[int64](300), corev1.PodSucceeded), pod(ptr.To[int64](300), corev1.PodFailed), pod(ptr.To[int64](10), corev1.PodRunning)}, now: deleted, want: 10},
		{name: "no grace period set", pods: []corev1.Pod{pod(nil, corev1.PodRunning)}, now: deleted, want: 0},
		{name: "grace already over since the namespace was deleted", pods: []corev1.Pod{pod(ptr.To[int64](30), corev1.PodRunning)}, now: deleted.Add(30 * time.Second), want: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := podGraceEstimate(tt.pods, deleted, tt.now); got != tt.want {
				t.Errorf("got %d, want %d", got, tt.want)
			}
		})
	}
}

func TestWaits(t *testing.T) {
	if got := waitForContent(30); got != 16*time.Second {
		t.Errorf("waitForContent(30) = %v, want 16s", got)
	}
	if got := waitForContent(15); got != 8*time.Second {
		t.Errorf("waitForContent(15) = %v, want 8s", got)
	}
	deleted := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		now  time.Time
		want time.Duration
	}{
		{deleted, 5 * time.Second},
		{deleted.Add(2 * time.Second), 3 * time.Second},
		{deleted.Add(time.Minute), 0},
		// A clock behind the API server's waits no longer than the grace period.
		{deleted.Add(-time.Hour), 5 * time.Second},
	} {
		if got := graceRemaining(deleted, tt.now); got != tt.want {
			t.Errorf("graceRemaining at %v = %v, want %v", tt.now.Sub(deleted), got, tt.want)
		}
	}
}

func TestWithoutFinalizer(t *testing.T) {
	got := withoutFinalizer([]corev1.FinalizerName{"z.io/x", corev1.FinalizerKubernetes, "a.io/y", "z.io/x"}, corev1.FinalizerKubernetes)
	if want := []corev1.FinalizerName{"a.io/y", "z.io/x"}; !slices.Equal(got, want) {
		t.Errorf("got %v, want %v", got, want)
	}
	if got := withoutFinalizer([]corev1.FinalizerName{corev1.FinalizerKubernetes}, corev1.FinalizerKubernetes); got == nil || len(got) != 0 {
		t.Errorf("got %#v, want an empty list", got)
	}
}
