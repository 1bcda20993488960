package groups

import (
	"reflect"
	"slices"
	"testing"
)

// heavy are the busiest loops of a controller manager (issue 40): auto's split must spread
// them.
var heavy = []string{
	"garbage-collector-controller", "replicaset-controller", "deployment-controller",
	"endpointslice-controller", "endpoints-controller", "job-controller", "statefulset-controller",
	"daemonset-controller", "node-lifecycle-controller", "resourcequota-controller",
	"namespace-controller", "disruption-controller", "pod-garbage-collector-controller",
	"taint-eviction-controller",
}

func TestAutoSpreadsTheHeavyLoops(t *testing.T) {
	groups := Auto(AutoControllers())
	if len(groups) != 6 {
		t.Fatalf("%d groups, want 6 (three replicas lead two each): %v", len(groups), groups)
	}
	groupOf := map[string]string{}
	for _, g := range groups {
		if g.Name == OtherGroup {
			t.Errorf("every controller of the table has a place, yet %q holds %v", OtherGroup, g.Controllers)
		}
		for _, c := range g.Controllers {
			if first, ok := groupOf[c]; ok {
				t.Errorf("%s is in %s and %s", c, first, g.Name)
			}
			groupOf[c] = g.Name
		}
	}
	perGroup := map[string][]string{}
	for _, c := range heavy {
		g, ok := groupOf[c]
		if !ok {
			t.Errorf("heavy loop %s has no group", c)
			continue
		}
		perGroup[g] = append(perGroup[g], c)
	}
	for _, g := range groups {
		if n := len(perGroup[g.Name]); n == 0 || n > 3 {
			t.Errorf("group %s has %d heavy loops %v, want one to three", g.Name, n, perGroup[g.Name])
		}
	}
	// Together where they watch the same kinds: a Deployment owns its ReplicaSets, the two
	// endpoint loops follow the same Services and pods, node-lifecycle reads DaemonSets.
	for _, pair := range [][2]string{
		{"deployment-controller", "replicaset-controller"},
		{"endpoints-controller", "endpointslice-controller"},
		{"node-lifecycle-controller", "daemonset-controller"},
		{"node-lifecycle-controller", "taint-eviction-controller"},
		{"garbage-collector-controller", "resourcequota-controller"},
	} {
		if groupOf[pair[0]] != groupOf[pair[1]] {
			t.Errorf("%s (%s) and %s (%s) watch the same kinds but are apart", pair[0], groupOf[pair[0]], pair[1], groupOf[pair[1]])
		}
	}
	// Apart: the loops a rollout, a Job wave and the endpoint updates they cause keep busy,
	// and the collector that follows them all.
	rollout := []string{"replicaset-controller", "job-controller", "endpointslice-controller", "garbage-collector-controller", "statefulset-controller", "daemonset-controller"}
	for i, a := range rollout {
		for _, b := range rollout[i+1:] {
			if groupOf[a] == groupOf[b] {
				t.Errorf("%s and %s are both in %s", a, b, groupOf[a])
			}
		}
	}
}

func TestAuto(t *testing.T) {
	tests := []struct {
		name    string
		running []string
		want    []Group
	}{
		{name: "nothing runs", running: nil, want: []Group{}},
		{
			name:    "a subset: groups keep the controllers that run, the others are dropped",
			running: []string{"ttl-controller", "replicaset-controller", "deployment-controller", "job-controller"},
			want: []Group{
				{Name: "apps", Controllers: []string{"deployment-controller", "replicaset-controller"}},
				{Name: "batch", Controllers: []string{"job-controller"}},
				{Name: "nodes", Controllers: []string{"ttl-controller"}},
			},
		},
		{
			name:    "a controller the table does not place goes to other",
			running: []string{"zz-new-controller", "deployment-controller", "aa-new-controller", "zz-new-controller"},
			want: []Group{
				{Name: "apps", Controllers: []string{"deployment-controller"}},
				{Name: OtherGroup, Controllers: []string{"aa-new-controller", "zz-new-controller"}},
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Auto(tt.running); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("Auto(%v) =\n%v\nwant\n%v", tt.running, got, tt.want)
			}
		})
	}
}

// Auto's groups are the caller's: changing them leaves the table alone.
func TestAutoReturnsCopies(t *testing.T) {
	before := AutoControllers()
	for _, g := range Auto(before) {
		for i := range g.Controllers {
			g.Controllers[i] = "changed"
		}
	}
	if after := AutoControllers(); !slices.Equal(before, after) {
		t.Errorf("Auto's result shares the table: %v", after)
	}
}
