package deployment

import (
	"maps"
	"slices"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func names(rss []*appsv1.ReplicaSet) []string {
	var out []string
	for _, rs := range rss {
		out = append(out, rs.Name)
	}
	return out
}

func TestFindNewAndOldReplicaSets(t *testing.T) {
	d := newDeployment("web", 3)
	same := func(name string, age int) *appsv1.ReplicaSet {
		rs := newRS(name, 1, 1, age)
		rs.Spec.Template = *d.Spec.Template.DeepCopy()
		rs.Spec.Template.Labels["pod-template-hash"] = name
		return rs
	}
	tests := []struct {
		name    string
		rss     []*appsv1.ReplicaSet
		wantNew string
		wantOld []string
	}{
		{name: "none has the template", rss: []*appsv1.ReplicaSet{newRS("a", 1, 1, 1)}, wantOld: []string{"a"}},
		{name: "the hash label is ignored", rss: []*appsv1.ReplicaSet{newRS("a", 1, 1, 1), same("b", 2)}, wantNew: "b", wantOld: []string{"a"}},
		{name: "two with the template: the oldest is new", rss: []*appsv1.ReplicaSet{same("c", 3), newRS("a", 1, 1, 1), same("b", 2)},
			wantNew: "b", wantOld: []string{"a", "c"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := findNewReplicaSet(d, tt.rss)
			if (got == nil && tt.wantNew != "") || (got != nil && got.Name != tt.wantNew) {
				t.Errorf("findNewReplicaSet = %v, want %q", got, tt.wantNew)
			}
			if old := names(findOldReplicaSets(d, tt.rss)); !slices.Equal(old, tt.wantOld) {
				t.Errorf("findOldReplicaSets = %v, want %v", old, tt.wantOld)
			}
		})
	}
}

func TestFindActiveOrLatest(t *testing.T) {
	tests := []struct {
		name  string
		newRS *appsv1.ReplicaSet
		old   []*appsv1.ReplicaSet
		want  string
	}{
		{name: "nothing", want: ""},
		{name: "only the new one is active", newRS: newRS("new", 3, 0, 3), old: []*appsv1.ReplicaSet{newRS("a", 0, 0, 1)}, want: "new"},
		{name: "only an old one is active", newRS: newRS("new", 0, 0, 3), old: []*appsv1.ReplicaSet{newRS("a", 2, 2, 1), newRS("b", 0, 0, 2)}, want: "a"},
		{name: "none active: the new one", newRS: newRS("new", 0, 0, 3), old: []*appsv1.ReplicaSet{newRS("a", 0, 0, 1)}, want: "new"},
		{name: "none active, no new one: the newest old one", old: []*appsv1.ReplicaSet{newRS("a", 0, 0, 1), newRS("b", 0, 0, 2)}, want: "b"},
		{name: "several active: none", newRS: newRS("new", 1, 0, 3), old: []*appsv1.ReplicaSet{newRS("a", 2, 2, 1)}, want: ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := findActiveOrLatest(tt.newRS, tt.old)
			if (got == nil) != (tt.want == "") || (got != nil && got.Name != tt.want) {
				t.Errorf("findActiveOrLatest = %v, want %q", got, tt.want)
			}
		})
	}
}

func TestIsSaturated(t *testing.T) {
	d := newDeployment("d", 3)
	tests := []struct {
		name string
		rs   *appsv1.ReplicaSet
		want bool
	}{
		{name: "nil", want: false},
		{name: "full, sized for 3, all available", rs: withSizes(newRS("a", 3, 3, 1), 3, 4), want: true},
		{name: "not all available", rs: withSizes(newRS("a", 3, 2, 1), 3, 4), want: false},
		{name: "sized for another size", rs: withSizes(newRS("a", 3, 3, 1), 2, 3), want: false},
		{name: "no annotation", rs: newRS("a", 3, 3, 1), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := isSaturated(d, tt.rs); got != tt.want {
				t.Errorf("isSaturated = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestHistoryToDelete(t *testing.T) {
	deleting := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.DeletionTimestamp = new(metav1.NewTime(epoch))
		return rs
	}
	unobserved := func(rs *appsv1.ReplicaSet) *appsv1.ReplicaSet {
		rs.Generation, rs.Status.ObservedGeneration = 2, 1
		return rs
	}
	tests := []struct {
		name  string
		limit *int32
		old   []*appsv1.ReplicaSet
		want  []string
	}{
		{name: "within the limit", limit: new(int32(2)),
			old: []*appsv1.ReplicaSet{withRevision(newRS("a", 0, 0, 1), "1"), withRevision(newRS("b", 0, 0, 2), "2")}},
		{name: "lowest revisions go first",
			limit: new(int32(1)),
			old: []*appsv1.ReplicaSet{withRevision(newRS("a", 0, 0, 1), "3"), withRevision(newRS("b", 0, 0, 2), "1"),
				withRevision(newRS("c", 0, 0, 3), "2")},
			want: []string{"b", "c"}},
		{name: "limit 0: all idle ones", limit: new(int32(0)),
			old:  []*appsv1.ReplicaSet{withRevision(newRS("a", 0, 0, 1), "1"), withRevision(newRS("b", 0, 0, 2), "2")},
			want: []string{"a", "b"}},
		{name: "with replicas, pods, or unobserved: kept",
			limit: new(int32(0)),
			old: []*appsv1.ReplicaSet{withRevision(newRS("a", 1, 1, 1), "1"),
				func() *appsv1.ReplicaSet {
					rs := withRevision(newRS("b", 0, 0, 2), "2")
					rs.Status.Replicas = 1
					return rs
				}(),
				unobserved(withRevision(newRS("c", 0, 0, 3), "3"))}},
		{name: "being deleted: neither counted nor deleted", limit: new(int32(1)),
			old: []*appsv1.ReplicaSet{deleting(withRevision(newRS("a", 0, 0, 1), "1")), withRevision(newRS("b", 0, 0, 2), "2")}},
		{name: "no limit: keep all",
			old: []*appsv1.ReplicaSet{withRevision(newRS("a", 0, 0, 1), "1")}},
		{name: "MaxInt32: keep all", limit: new(int32(2147483647)),
			old: []*appsv1.ReplicaSet{withRevision(newRS("a", 0, 0, 1), "1")}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := newDeployment("d", 1)
			d.Spec.RevisionHistoryLimit = tt.limit
			if got := names(historyToDelete(d, tt.old)); !slices.Equal(got, tt.want) {
				t.Errorf("historyToDelete = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestOldPodsRunning(t *testing.T) {
	pod := func(phase corev1.PodPhase, terminating bool) *corev1.Pod {
		p := &corev1.Pod{Status: corev1.PodStatus{Phase: phase}}
		if terminating {
			p.DeletionTimestamp = new(metav1.NewTime(epoch))
		}
		return p
	}
	newOne := newRS("new", 0, 0, 2)
	oldEmpty := newRS("old", 0, 0, 1)
	tests := []struct {
		name string
		old  []*appsv1.ReplicaSet
		pods map[types.UID][]*corev1.Pod
		want bool
	}{
		{name: "no pods", old: []*appsv1.ReplicaSet{oldEmpty}, want: false},
		{name: "old ReplicaSet at 0, status 0", old: []*appsv1.ReplicaSet{newRS("old", 0, 0, 1)}, want: false},
		{name: "old ReplicaSet status still counts one", old: []*appsv1.ReplicaSet{func() *appsv1.ReplicaSet {
			rs := newRS("old", 0, 0, 1)
			rs.Status.Replicas = 1
			return rs
		}()}, want: true},
		{name: "a terminating old pod still runs", old: []*appsv1.ReplicaSet{oldEmpty},
			pods: map[types.UID][]*corev1.Pod{oldEmpty.UID: {pod(corev1.PodRunning, true)}}, want: true},
		{name: "a pending old pod", old: []*appsv1.ReplicaSet{oldEmpty},
			pods: map[types.UID][]*corev1.Pod{oldEmpty.UID: {pod(corev1.PodPending, false)}}, want: true},
		{name: "an unknown old pod", old: []*appsv1.ReplicaSet{oldEmpty},
			pods: map[types.UID][]*corev1.Pod{oldEmpty.UID: {pod(corev1.PodUnknown, false)}}, want: true},
		{name: "finished old pods do not", old: []*appsv1.ReplicaSet{oldEmpty},
			pods: map[types.UID][]*corev1.Pod{oldEmpty.UID: {pod(corev1.PodSucceeded, true), pod(corev1.PodFailed, false)}}, want: false},
		{name: "the new ReplicaSet's pods do not", old: []*appsv1.ReplicaSet{oldEmpty},
			pods: map[types.UID][]*corev1.Pod{newOne.UID: {pod(corev1.PodRunning, false)}}, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := oldPodsRunning(newOne, tt.old, tt.pods); got != tt.want {
				t.Errorf("oldPodsRunning = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestTerminatingCount(t *testing.T) {
	withTerm := func(rs *appsv1.ReplicaSet, n *int32, observed int64) *appsv1.ReplicaSet {
		rs.Status.TerminatingReplicas, rs.Status.ObservedGeneration = n, observed
		return rs
	}
	tests := []struct {
		name string
		rss  []*appsv1.ReplicaSet
		want *int32
	}{
		{name: "sum", rss: []*appsv1.ReplicaSet{withTerm(newRS("a", 1, 1, 1), new(int32(2)), 1), withTerm(newRS("b", 1, 1, 2), new(int32(1)), 1), nil},
			want: new(int32(3))},
		{name: "never synced counts 0", rss: []*appsv1.ReplicaSet{withTerm(newRS("a", 1, 1, 1), nil, 0), withTerm(newRS("b", 1, 1, 2), new(int32(1)), 1)},
			want: new(int32(1))},
		{name: "synced without the field: unknown", rss: []*appsv1.ReplicaSet{withTerm(newRS("a", 1, 1, 1), nil, 1)}, want: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := terminatingCount(tt.rss)
			if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
				t.Errorf("terminatingCount = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestEqualIgnoreHash(t *testing.T) {
	base := func(mutate func(*corev1.PodTemplateSpec)) *corev1.PodTemplateSpec {
		tmpl := &corev1.PodTemplateSpec{
			ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}, Annotations: map[string]string{"a": "1"}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "nginx:1"}}},
		}
		if mutate != nil {
			mutate(tmpl)
		}
		return tmpl
	}
	hash := func(v string) func(*corev1.PodTemplateSpec) {
		return func(t *corev1.PodTemplateSpec) { t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = v }
	}
	tests := []struct {
		name string
		a, b *corev1.PodTemplateSpec
		want bool
	}{
		{name: "same", a: base(nil), b: base(nil), want: true},
		{name: "hash on one side only", a: base(hash("abc")), b: base(nil), want: true},
		{name: "different hashes", a: base(hash("abc")), b: base(hash("def")), want: true},
		{name: "another label value", a: base(nil), b: base(func(t *corev1.PodTemplateSpec) { t.Labels["app"] = "db" }), want: false},
		{name: "an extra label", a: base(hash("abc")), b: base(func(t *corev1.PodTemplateSpec) { t.Labels["tier"] = "x" }), want: false},
		{name: "extra label against the hash", a: base(hash("abc")), b: base(func(t *corev1.PodTemplateSpec) { t.Labels["tier"] = "abc" }), want: false},
		{name: "no labels and empty labels", a: base(func(t *corev1.PodTemplateSpec) { t.Labels = nil }), b: base(func(t *corev1.PodTemplateSpec) { t.Labels = map[string]string{} }), want: true},
		{name: "only the hash and none", a: base(func(t *corev1.PodTemplateSpec) {
			t.Labels = map[string]string{appsv1.DefaultDeploymentUniqueLabelKey: "x"}
		}), b: base(func(t *corev1.PodTemplateSpec) { t.Labels = nil }), want: true},
		{name: "another image", a: base(nil), b: base(func(t *corev1.PodTemplateSpec) { t.Spec.Containers[0].Image = "nginx:2" }), want: false},
		{name: "another annotation", a: base(nil), b: base(func(t *corev1.PodTemplateSpec) { t.Annotations["a"] = "2" }), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			aLabels, bLabels := maps.Clone(tt.a.Labels), maps.Clone(tt.b.Labels)
			if got := equalIgnoreHash(tt.a, tt.b); got != tt.want {
				t.Errorf("equalIgnoreHash = %v, want %v", got, tt.want)
			}
			if got := equalIgnoreHash(tt.b, tt.a); got != tt.want {
				t.Errorf("equalIgnoreHash reversed = %v, want %v", got, tt.want)
			}
			if !maps.Equal(aLabels, tt.a.Labels) || !maps.Equal(bLabels, tt.b.Labels) {
				t.Errorf("the templates' labels were changed")
			}
		})
	}
}
