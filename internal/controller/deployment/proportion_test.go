package deployment

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestGetReplicaSetFraction(t *testing.T) {
	i := intstr.FromInt32
	tests := []struct {
		name           string
		d              *appsv1.Deployment
		statusReplicas int32
		rs             *appsv1.ReplicaSet
		want           int32
	}{
		{name: "scaled to 0: all of it goes", d: newDeployment("d", 0), rs: withSizes(newRS("a", 5, 5, 1), 10, 12), want: -5},
		{name: "doubled: doubles", d: rolling(newDeployment("d", 20), i(2), i(0)), rs: withSizes(newRS("a", 5, 5, 1), 10, 11), want: 5},
		{name: "halved: halves, rounding", d: rolling(newDeployment("d", 5), i(1), i(0)), rs: withSizes(newRS("a", 5, 5, 1), 10, 11), want: -2},
		{name: "no annotation: status.replicas is the base", d: rolling(newDeployment("d", 20), i(0), i(1)), statusReplicas: 10,
			rs: newRS("a", 5, 5, 1), want: 5},
		{name: "annotation 0: status.replicas is the base", d: rolling(newDeployment("d", 20), i(0), i(1)), statusReplicas: 10,
			rs: withSizes(newRS("a", 5, 5, 1), 10, 0), want: 5},
		{name: "no annotation, no status: nothing", d: rolling(newDeployment("d", 20), i(0), i(1)), rs: newRS("a", 5, 5, 1), want: 0},
		{name: "garbage annotation: status base", d: rolling(newDeployment("d", 20), i(0), i(1)), statusReplicas: 10,
			rs: func() *appsv1.ReplicaSet {
				rs := newRS("a", 5, 5, 1)
				rs.Annotations[MaxReplicasAnnotation] = "-3"
				return rs
			}(), want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.d.Status.Replicas = tt.statusReplicas
			if got := getReplicaSetFraction(tt.rs, tt.d); got != tt.want {
				t.Errorf("getReplicaSetFraction = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestGetProportion(t *testing.T) {
	i := intstr.FromInt32
	d := rolling(newDeployment("d", 20), i(2), i(0)) // max 22, was 11
	rs := withSizes(newRS("a", 5, 5, 1), 10, 11)     // fraction +5
	tests := []struct {
		name         string
		rs           *appsv1.ReplicaSet
		toAdd, added int32
		want         int32
	}{
		{name: "fraction within what remains", rs: rs, toAdd: 11, added: 0, want: 5},
		{name: "capped by what remains", rs: rs, toAdd: 11, added: 8, want: 3},
		{name: "all handed out", rs: rs, toAdd: 11, added: 11, want: 0},
		{name: "nothing to add", rs: rs, toAdd: 0, want: 0},
		{name: "empty ReplicaSet never grows", rs: withSizes(newRS("z", 0, 0, 1), 10, 11), toAdd: 11, want: 0},
		{name: "nil", rs: nil, toAdd: 11, want: 0},
		{name: "removing: bounded by what remains to remove", rs: withSizes(newRS("a", 5, 5, 1), 10, 44), toAdd: -3, added: -1, want: -2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := getProportion(tt.rs, d, tt.toAdd, tt.added); got != tt.want {
				t.Errorf("getProportion = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestProportionalSizes(t *testing.T) {
	i := intstr.FromInt32
	tests := []struct {
		name string
		d    *appsv1.Deployment
		rss  []*appsv1.ReplicaSet
		want map[string]int32
	}{
		{name: "10→20 mid-rollout, 8 old + 5 new (max 13 → 22)",
			d:    rolling(newDeployment("d", 20), i(2), i(0)),
			rss:  []*appsv1.ReplicaSet{withSizes(newRS("old", 8, 8, 1), 10, 13), withSizes(newRS("new", 5, 0, 2), 10, 13)},
			want: map[string]int32{"old": 14, "new": 8}},
		{name: "growing: newest first on equal sizes",
			d:    rolling(newDeployment("d", 3), i(0), i(1)),
			rss:  []*appsv1.ReplicaSet{withSizes(newRS("old", 1, 1, 1), 2, 2), withSizes(newRS("new", 1, 0, 2), 2, 2)},
			want: map[string]int32{"old": 1, "new": 2}},
		{name: "rounding leftover goes to the first (largest, then newest)",
			d: rolling(newDeployment("d", 10), i(0), i(1)),
			rss: []*appsv1.ReplicaSet{withSizes(newRS("a", 1, 1, 1), 3, 3), withSizes(newRS("b", 1, 1, 2), 3, 3),
				withSizes(newRS("c", 1, 0, 3), 3, 3)},
			want: map[string]int32{"a": 3, "b": 3, "c": 4}},
		{name: "shrinking: largest then oldest first",
			d:    rolling(newDeployment("d", 5), i(1), i(0)),
			rss:  []*appsv1.ReplicaSet{withSizes(newRS("old", 6, 6, 1), 10, 11), withSizes(newRS("new", 5, 0, 2), 10, 11)},
			want: map[string]int32{"old": 3, "new": 3}},
		{name: "to 0: everything goes",
			d:    rolling(newDeployment("d", 0), i(1), i(0)),
			rss:  []*appsv1.ReplicaSet{withSizes(newRS("old", 3, 3, 1), 5, 6), withSizes(newRS("new", 3, 0, 2), 5, 6)},
			want: map[string]int32{"old": 0, "new": 0}},
		{name: "already at the size: unchanged, listed for the annotations",
			d:    rolling(newDeployment("d", 10), i(2), i(0)),
			rss:  []*appsv1.ReplicaSet{withSizes(newRS("old", 8, 8, 1), 10, 12), withSizes(newRS("new", 4, 0, 2), 10, 12)},
			want: map[string]int32{"old": 8, "new": 4}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps := proportionalSizes(tt.d, tt.rss)
			got := sizes(steps)
			if !maps.Equal(got, tt.want) {
				t.Errorf("proportionalSizes = %v, want %v", got, tt.want)
			}
			var total int32
			for _, v := range got {
				total += v
			}
			if allowed := *tt.d.Spec.Replicas + maxSurge(tt.d); *tt.d.Spec.Replicas > 0 && total != allowed {
				t.Errorf("total %d, want replicas+maxSurge %d", total, allowed)
			}
		})
	}
}
