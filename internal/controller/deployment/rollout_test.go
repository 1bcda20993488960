package deployment

import (
	"maps"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

func TestResolveFenceposts(t *testing.T) {
	i, p := intstr.FromInt32, intstr.FromString
	tests := []struct {
		name                   string
		surge, unavailable     *intstr.IntOrString
		desired                int32
		wantSurge, wantUnavail int32
		wantErr                bool
	}{
		{name: "ints", surge: new(i(2)), unavailable: new(i(1)), desired: 10, wantSurge: 2, wantUnavail: 1},
		{name: "percent: surge rounds up, unavailable down", surge: new(p("25%")), unavailable: new(p("25%")), desired: 10, wantSurge: 3, wantUnavail: 2},
		{name: "small percent of 1", surge: new(p("1%")), unavailable: new(p("1%")), desired: 1, wantSurge: 1, wantUnavail: 0},
		{name: "both resolve to 0: unavailable 1", surge: new(p("0%")), unavailable: new(p("1%")), desired: 2, wantSurge: 0, wantUnavail: 1},
		{name: "both 0", surge: new(i(0)), unavailable: new(i(0)), desired: 5, wantSurge: 0, wantUnavail: 1},
		{name: "nil counts as 0", desired: 5, wantSurge: 0, wantUnavail: 1},
		{name: "0 replicas with percents", surge: new(p("25%")), unavailable: new(p("25%")), desired: 0, wantSurge: 0, wantUnavail: 1},
		{name: "100% surge", surge: new(p("100%")), unavailable: new(i(0)), desired: 3, wantSurge: 3, wantUnavail: 0},
		{name: "bad percent", surge: new(p("x%")), unavailable: new(i(0)), desired: 3, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, u, err := resolveFenceposts(tt.surge, tt.unavailable, tt.desired)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if !tt.wantErr && (s != tt.wantSurge || u != tt.wantUnavail) {
				t.Errorf("resolveFenceposts = %d, %d; want %d, %d", s, u, tt.wantSurge, tt.wantUnavail)
			}
		})
	}
}

func TestMaxSurgeAndUnavailable(t *testing.T) {
	i := intstr.FromInt32
	tests := []struct {
		name             string
		d                *appsv1.Deployment
		surge, unavail   int32
		minimumAvailable int32
	}{
		{name: "rolling 25% of 10", d: newDeployment("d", 10), surge: 3, unavail: 2},
		{name: "unavailable above replicas is capped", d: rolling(newDeployment("d", 2), i(0), i(5)), surge: 0, unavail: 2},
		{name: "0 replicas: no unavailability", d: rolling(newDeployment("d", 0), i(1), i(1)), surge: 1, unavail: 0},
		{name: "recreate has neither", d: recreate(newDeployment("d", 4)), surge: 0, unavail: 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maxSurge(tt.d); got != tt.surge {
				t.Errorf("maxSurge = %d, want %d", got, tt.surge)
			}
			if got := maxUnavailable(tt.d); got != tt.unavail {
				t.Errorf("maxUnavailable = %d, want %d", got, tt.unavail)
			}
		})
	}
}

func TestNewRSNewReplicas(t *testing.T) {
	i := intstr.FromInt32
	tests := []struct {
		name    string
		d       *appsv1.Deployment
		newRS   *appsv1.ReplicaSet
		oldRSs  []*appsv1.ReplicaSet
		want    int32
		wantErr bool
	}{
		{name: "surge room: up by surge", d: rolling(newDeployment("d", 10), i(2), i(0)),
			newRS: newRS("new", 0, 0, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 10, 10, 1)}, want: 2},
		{name: "no room left", d: rolling(newDeployment("d", 10), i(2), i(0)),
			newRS: newRS("new", 2, 0, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 10, 10, 1)}, want: 2},
		{name: "old scaled down: room again", d: rolling(newDeployment("d", 10), i(2), i(0)),
			newRS: newRS("new", 2, 2, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 8, 8, 1)}, want: 4},
		{name: "old scaled down but its pods not gone yet: no room", d: rolling(newDeployment("d", 4), i(2), i(0)),
			newRS: newRS("new", 2, 2, 2), oldRSs: []*appsv1.ReplicaSet{withStatusReplicas(newRS("old", 3, 3, 1), 4)}, want: 2},
		{name: "old pods partly gone: room for those", d: rolling(newDeployment("d", 4), i(2), i(0)),
			newRS: newRS("new", 2, 2, 2), oldRSs: []*appsv1.ReplicaSet{withStatusReplicas(newRS("old", 2, 2, 1), 3)}, want: 3},
		{name: "never beyond spec.replicas", d: rolling(newDeployment("d", 3), i(5), i(0)),
			newRS: newRS("new", 1, 0, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 0, 0, 1)}, want: 3},
		{name: "percent surge rounds up", d: rolling(newDeployment("d", 10), intstr.FromString("15%"), i(0)),
			newRS: newRS("new", 0, 0, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 10, 10, 1)}, want: 2},
		{name: "recreate: all at once", d: recreate(newDeployment("d", 5)),
			newRS: newRS("new", 0, 0, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 0, 0, 1)}, want: 5},
		{name: "unknown strategy", d: func() *appsv1.Deployment {
			d := newDeployment("d", 5)
			d.Spec.Strategy.Type = "Other"
			return d
		}(), newRS: newRS("new", 0, 0, 2), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := newRSNewReplicas(tt.d, append(tt.oldRSs, tt.newRS), tt.newRS)
			if (err != nil) != tt.wantErr {
				t.Fatalf("err = %v", err)
			}
			if got != tt.want {
				t.Errorf("newRSNewReplicas = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestMaxScaledDown(t *testing.T) {
	i := intstr.FromInt32
	// 10 replicas, maxUnavailable 2, maxSurge 3 (upstream's worked example).
	d := rolling(newDeployment("d", 10), i(3), i(2))
	tests := []struct {
		name   string
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   int32
	}{
		{name: "new pods crashloop: nothing more may go",
			newRS: newRS("new", 5, 0, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 8, 7, 1)}, want: 0},
		{name: "rolled back to a good new RS: the bad pods may go",
			newRS: newRS("new", 5, 4, 2), oldRSs: []*appsv1.ReplicaSet{newRS("old", 8, 0, 1)}, want: 4},
		{name: "roll over: new RS empty",
			newRS: newRS("new", 0, 0, 3), oldRSs: []*appsv1.ReplicaSet{newRS("a", 8, 8, 1), newRS("b", 5, 0, 2)}, want: 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := maxScaledDown(d, append(tt.oldRSs, tt.newRS), tt.newRS); got != tt.want {
				t.Errorf("maxScaledDown = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestUnhealthyCleanup(t *testing.T) {
	tests := []struct {
		name    string
		oldRSs  []*appsv1.ReplicaSet
		limit   int32
		want    map[string]int32
		wantErr bool
	}{
		{name: "all healthy: nothing", oldRSs: []*appsv1.ReplicaSet{newRS("a", 3, 3, 1)}, limit: 5, want: map[string]int32{}},
		{name: "unhealthy pods go, within the limit, oldest first",
			oldRSs: []*appsv1.ReplicaSet{newRS("b", 4, 1, 2), newRS("a", 3, 1, 1)}, limit: 3,
			want: map[string]int32{"a": 1, "b": 3}},
		{name: "empty ReplicaSets are skipped",
			oldRSs: []*appsv1.ReplicaSet{newRS("a", 0, 0, 1), newRS("b", 2, 0, 2)}, limit: 5,
			want: map[string]int32{"b": 0}},
		{name: "limit reached", oldRSs: []*appsv1.ReplicaSet{newRS("a", 3, 0, 1), newRS("b", 3, 0, 2)}, limit: 3,
			want: map[string]int32{"a": 0}},
		{name: "status lagging a scale-down (more available than wanted): stop there, never scale up",
			oldRSs: []*appsv1.ReplicaSet{newRS("a", 3, 1, 1), func() *appsv1.ReplicaSet {
				rs := newRS("b", 3, 3, 2)
				rs.Status.AvailableReplicas = 4
				return rs
			}(), newRS("c", 2, 0, 3)}, limit: 5,
			want: map[string]int32{"a": 1}, wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			steps, err := unhealthyCleanup(tt.oldRSs, tt.limit)
			if (err != nil) != tt.wantErr {
				t.Errorf("err = %v, want error %v", err, tt.wantErr)
			}
			if got := sizes(steps); !maps.Equal(got, tt.want) {
				t.Errorf("unhealthyCleanup = %v, want %v", got, tt.want)
			}
			for _, step := range steps {
				if step.replicas > *step.rs.Spec.Replicas {
					t.Errorf("%s scaled up to %d", step.rs.Name, step.replicas)
				}
			}
		})
	}
}

func TestOldScaleDown(t *testing.T) {
	i := intstr.FromInt32
	tests := []struct {
		name   string
		d      *appsv1.Deployment
		newRS  *appsv1.ReplicaSet
		oldRSs []*appsv1.ReplicaSet
		want   map[string]int32
	}{
		{name: "at minimum availability: nothing", d: rolling(newDeployment("d", 10), i(2), i(2)),
			newRS: newRS("new", 2, 0, 3), oldRSs: []*appsv1.ReplicaSet{newRS("a", 8, 8, 1)}, want: map[string]int32{}},
		{name: "new pods available: old ones go, oldest first", d: rolling(newDeployment("d", 10), i(2), i(0)),
			newRS: newRS("new", 4, 4, 3), oldRSs: []*appsv1.ReplicaSet{newRS("b", 4, 4, 2), newRS("a", 4, 4, 1)},
			want: map[string]int32{"a": 2}},
		{name: "spills into the next one", d: rolling(newDeployment("d", 10), i(0), i(3)),
			newRS: newRS("new", 2, 2, 3), oldRSs: []*appsv1.ReplicaSet{newRS("a", 1, 1, 1), newRS("b", 8, 8, 2)},
			want: map[string]int32{"a": 0, "b": 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := sizes(oldScaleDown(tt.d, append(append([]*appsv1.ReplicaSet(nil), tt.oldRSs...), tt.newRS), tt.oldRSs))
			if !maps.Equal(got, tt.want) {
				t.Errorf("oldScaleDown = %v, want %v", got, tt.want)
			}
		})
	}
}

// withStatusReplicas is rs reporting n pods, more than its spec.replicas while its
// controller's deletions have not landed.
func withStatusReplicas(rs *appsv1.ReplicaSet, n int32) *appsv1.ReplicaSet {
	rs.Status.Replicas = n
	return rs
}
