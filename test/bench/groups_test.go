//go:build linux

package main

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/kcm/kcm/test/cluster"
)

func TestNewManager(t *testing.T) {
	binaries := map[string]string{"kcm": "bin/kcm", "upstream": "bin/up"}
	for _, tc := range []struct {
		name, binary string
		replicas     int
		args         []string
	}{
		{"upstream", "bin/up", 1, nil},
		{"kcm", "bin/kcm", 1, nil},
		{"kcm-groups", "bin/kcm", 3, []string{"--controller-groups=auto"}},
	} {
		m, err := newManager(tc.name, binaries)
		if err != nil || m.Name != tc.name || m.Binary != tc.binary || m.Replicas != tc.replicas || !slices.Equal(m.Args, tc.args) {
			t.Errorf("newManager(%s) = %+v, %v; want %s × %d with %v", tc.name, m, err, tc.binary, tc.replicas, tc.args)
		}
	}
	if _, err := newManager("kcm-group", binaries); err == nil {
		t.Error("newManager of an unknown name must fail")
	}
}

func TestEvenSplit(t *testing.T) {
	for _, tc := range []struct {
		name     string
		holders  []string
		replicas int
		want     bool
	}{
		{"six over three, two each", []string{"a", "b", "c", "a", "b", "c"}, 3, true},
		{"one of three leads none", []string{"a", "a", "a", "b", "b", "b"}, 3, false},
		{"three, two and one", []string{"a", "a", "a", "b", "b", "c"}, 3, false},
		{"a Lease without holder", []string{"a", "b", "c", "a", "b", ""}, 3, false},
		{"fewer Leases than replicas yet", []string{"a", "b"}, 3, false},
		{"a fourth holder (a replica gone)", []string{"a", "b", "c", "d", "b", "c"}, 3, false},
		{"seven over three: 3, 2, 2", []string{"a", "a", "a", "b", "b", "c", "c"}, 3, true},
		{"one replica holds all", []string{"a", "a"}, 1, true},
	} {
		if got, why := evenSplit(tc.holders, tc.replicas); got != tc.want {
			t.Errorf("%s: evenSplit = %v (%s), want %v", tc.name, got, why, tc.want)
		}
	}
}

func TestSumUsage(t *testing.T) {
	got := sumUsage([]cluster.Usage{
		{CPU: time.Second, RSS: 100, PeakRSS: 300},
		{CPU: 2 * time.Second, RSS: 200, PeakRSS: 250},
		{CPU: 500 * time.Millisecond, RSS: 150, PeakRSS: 150},
	})
	if want := (cluster.Usage{CPU: 3500 * time.Millisecond, RSS: 200, PeakRSS: 300}); got != want {
		t.Errorf("sumUsage = %+v, want %+v (CPU added, the largest RSS and peak)", got, want)
	}
}

func TestSumMetricsOf(t *testing.T) {
	got := sumMetricsOf([]managerMetrics{
		{requests: 10, heapLive: 5, views: 1, informers: []string{"pods", "deployments.apps"}},
		{requests: 20, heapLive: 7, views: 2, informers: []string{"pods", "nodes"}},
	})
	if got.requests != 30 || got.views != 3 || got.heapLive != 7 || !slices.Equal(got.informers, []string{"deployments.apps", "nodes", "pods"}) {
		t.Errorf("sumMetricsOf = %+v; want requests and views added, the largest heap, the informers' union", got)
	}
}

func TestInformerKinds(t *testing.T) {
	text := `# TYPE informer_store_resource_version gauge
informer_store_resource_version{group="",name="kube-controller-manager",resource="pods",version="v1"} 1234
informer_store_resource_version{group="apps",name="kube-controller-manager",resource="deployments",version="v1"} 1235
informer_store_resource_version{group="apps",name="kube-controller-manager",resource="replicasets",version="v1"} 1236
informer_queued_items{group="",name="kube-controller-manager",resource="nodes",version="v1"} 0
rest_client_requests_total{code="200",host="x",method="GET"} 5
`
	got, err := informerKinds(strings.NewReader(text))
	if want := []string{"deployments.apps", "pods", "replicasets.apps"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("informerKinds = %v, %v; want %v", got, err, want)
	}
	if got, err := informerKinds(strings.NewReader("rest_client_requests_total 5\n")); err == nil {
		t.Errorf("informerKinds without informers = %v, want an error", got)
	}
}

func TestInformerCounts(t *testing.T) {
	got := informerCounts([]ReplicaPhase{
		{Informers: []string{"pods", "deployments.apps"}},
		{Informers: []string{"pods", "nodes"}},
		{Informers: []string{"pods"}},
	})
	if len(got) != 3 || got["pods"] != 3 || got["deployments.apps"] != 1 || got["nodes"] != 1 {
		t.Errorf("informerCounts = %v; want pods in 3, deployments.apps and nodes in 1", got)
	}
}

func TestGroupsGoals(t *testing.T) {
	replica := func(cpu float64, peak int64) ReplicaPhase { return ReplicaPhase{CPUSeconds: cpu, PeakRSSBytes: peak} }
	// The single leader: create 100 s, 10 CPU s, 100 B peak; quiet 1 CPU s; delete 50 s, 20 CPU s.
	single := &ManagerResult{Name: "kcm",
		Phases: []*PhaseResult{
			{Name: "create", WallSeconds: 100, CPUSeconds: 10, PeakRSSBytes: 100},
			{Name: "delete", WallSeconds: 50, CPUSeconds: 20, PeakRSSBytes: 100},
		},
		Quiet: &PhaseResult{Name: quietPhase, WallSeconds: 60, CPUSeconds: 1, PeakRSSBytes: 100},
	}
	// Three replicas: create 0.5 of the CPU on the busiest, 0.7 of the peak, 1.2 together,
	// 1.01 of the wall time; quiet 0.6 on the busiest, 1.5 together; delete 0.4, 0.75, 1.0, 0.9.
	grouped := &ManagerResult{Name: groupsManager,
		Phases: []*PhaseResult{
			{Name: "create", WallSeconds: 101, CPUSeconds: 12, PeakRSSBytes: 70, Replicas: []ReplicaPhase{replica(5, 70), replica(4, 60), replica(3, 50)}},
			{Name: "delete", WallSeconds: 45, CPUSeconds: 20, PeakRSSBytes: 75, Replicas: []ReplicaPhase{replica(8, 75), replica(6, 60), replica(6, 50)}},
		},
		Quiet: &PhaseResult{Name: quietPhase, WallSeconds: 60, CPUSeconds: 1.5, PeakRSSBytes: 70,
			Replicas: []ReplicaPhase{replica(0.6, 70), replica(0.5, 60), replica(0.4, 50)}},
	}
	want := map[string]bool{
		"create: busiest replica CPU seconds":    true,  // 0.50 ≤ 0.5
		"create: busiest replica peak RSS":       true,  // 0.70 ≤ 0.7
		"create: replicas' CPU seconds together": true,  // 1.20 ≤ 1.2
		"create: wall time":                      false, // 1.01 > 1
		"quiet: busiest replica CPU seconds":     false, // 0.60 > 0.5
		"quiet: busiest replica peak RSS":        true,
		"quiet: replicas' CPU seconds together":  false, // 1.50 > 1.2
		"delete: busiest replica CPU seconds":    true,  // 0.40
		"delete: busiest replica peak RSS":       false, // 0.75 > 0.7
		"delete: replicas' CPU seconds together": true,  // 1.00
		"delete: wall time":                      true,  // 0.90
	}
	res := &Result{Managers: []*ManagerResult{{Name: "upstream"}, single, grouped}}
	got := map[string]Goal{}
	for _, g := range groupsGoals(res) {
		got[g.Name] = g
	}
	if len(got) != len(want) {
		t.Errorf("%d goals, want %d: %v", len(got), len(want), got)
	}
	for name, met := range want {
		g, ok := got[name]
		if !ok {
			t.Errorf("no goal %q in %v", name, got)
			continue
		}
		if g.Met != met {
			t.Errorf("%s: ratio %.4f ≤ %.2f met=%v, want %v", name, g.Ratio, g.Max, g.Met, met)
		}
	}
	if gs := groupsGoals(&Result{Managers: []*ManagerResult{single}}); gs != nil {
		t.Errorf("without %s: goals %v, want none", groupsManager, gs)
	}

	// Printed as issue 39's are, under their own heading, after each replica's numbers and
	// the informers by kind.
	grouped.Phases[0].Replicas[0].Informers = []string{"pods", "deployments.apps"}
	grouped.Phases[0].Replicas[1].Informers = []string{"pods"}
	grouped.Phases[0].Replicas[2].Informers = []string{"pods"}
	var b strings.Builder
	printGroups(&b, res)
	out := b.String()
	var lines []string
	for _, line := range strings.Split(out, "\n") {
		lines = append(lines, strings.Join(strings.Fields(line), " "))
	}
	for _, line := range []string{
		"issue 40's goals, kcm-groups (3 replicas) over the single kcm leader:",
		"create: wall time 1.010 ≤ 1.00 NOT met to convergence",
		"quiet: busiest replica CPU seconds 0.600 ≤ 0.50 NOT met",
	} {
		if !slices.Contains(lines, line) {
			t.Errorf("no line %q in\n%s", line, out)
		}
	}
	var podsRow []string
	for _, line := range strings.Split(out, "\n") {
		if f := strings.Fields(line); len(f) > 0 && f[0] == "pods" {
			podsRow = f
		}
	}
	// Columns: create, quiet, delete, as the table's rows.
	if want := []string{"pods", "3", "0", "0"}; !slices.Equal(podsRow, want) {
		t.Errorf("informers of pods by phase: %q, want %q in\n%s", podsRow, want, out)
	}
}

func TestGroupsLed(t *testing.T) {
	text := `# TYPE leader_election_master_status gauge
leader_election_master_status{name="kube-controller-manager-apps"} 1
leader_election_master_status{name="kube-controller-manager-batch"} 0
leader_election_master_status{name="kube-controller-manager-nodes"} 1
leader_election_master_status{name="kube-controller-manager"} 1
leader_election_master_status_other{name="kube-controller-manager-storage"} 1
`
	got, err := groupsLed(strings.NewReader(text))
	if want := []string{"apps", "nodes"}; err != nil || !slices.Equal(got, want) {
		t.Errorf("groupsLed = %v, %v; want %v (led group Leases only, not the single Lease)", got, err, want)
	}
	if got, err := groupsLed(strings.NewReader(`leader_election_master_status{name="kube-controller-manager"} 1` + "\n")); err != nil || got != nil {
		t.Errorf("groupsLed of upstream's single Lease = %v, %v; want none", got, err)
	}
}
