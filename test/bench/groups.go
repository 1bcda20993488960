//go:build linux

package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/groups"
	"github.com/kcm/kcm/test/cluster"
)

// groupsManager is kcm run as issue 40's three replicas with --controller-groups=auto, each
// leading its share of the six groups under the groups' Leases: measured as one manager, its
// CPU the replicas' sum and its RSS the largest replica's, with each replica's numbers apart.
const groupsManager = "kcm-groups"

// groupsReplicas is how many kcm processes the groups manager runs.
const groupsReplicas = 3

// leaderElectionName is the leader-election resource name kubeadm's kcm runs with (upstream's
// default): the value of the group Leases' label.
const leaderElectionName = "kube-controller-manager"

// newManager is the manager of that name: upstream's or kcm's binary as one process, or kcm's
// as groupsManager's replicas.
func newManager(name string, binaries map[string]string) (Manager, error) {
	switch name {
	case "kcm", "upstream":
		return Manager{Name: name, Binary: binaries[name], Replicas: 1}, nil
	case groupsManager:
		return Manager{Name: name, Binary: binaries["kcm"], Replicas: groupsReplicas, Args: []string{"--controller-groups=auto"}}, nil
	}
	return Manager{}, fmt.Errorf("unknown manager %q: upstream, kcm or %s", name, groupsManager)
}

// procs are a manager's processes, measured as one: their CPU times add up, their RSS is the
// largest one's (a replica's memory is what a pod's limit must hold).
type procs []*cluster.Process

func (ps procs) Exited() bool {
	return slices.ContainsFunc(ps, (*cluster.Process).Exited)
}

func (ps procs) State() string {
	var s []string
	for _, p := range ps {
		s = append(s, p.State())
	}
	return strings.Join(s, "; ")
}

// Usage is the processes' usage as one manager (sumUsage), with each one's.
func (ps procs) Usage() (cluster.Usage, []cluster.Usage, error) {
	each := make([]cluster.Usage, len(ps))
	for i, p := range ps {
		u, err := p.Usage()
		if err != nil {
			return cluster.Usage{}, nil, fmt.Errorf("%s: %w", p.Name, err)
		}
		each[i] = u
	}
	return sumUsage(each), each, nil
}

// sumUsage is the replicas' usage as one manager's: the sum of their CPU times, the largest
// RSS and the largest peak RSS.
func sumUsage(each []cluster.Usage) cluster.Usage {
	var u cluster.Usage
	for _, e := range each {
		u.CPU += e.CPU
		u.RSS = max(u.RSS, e.RSS)
		u.PeakRSS = max(u.PeakRSS, e.PeakRSS)
	}
	return u
}

// sumMetricsOf is the replicas' /metrics as one manager's: requests and views add up, the Go
// heap is the largest replica's (as its RSS), and the informers are the union.
func sumMetricsOf(each []managerMetrics) managerMetrics {
	var m managerMetrics
	for _, e := range each {
		m.requests += e.requests
		m.views += e.views
		m.viewsBytes += e.viewsBytes
		m.heapLive = max(m.heapLive, e.heapLive)
		m.heapGoal = max(m.heapGoal, e.heapGoal)
		m.heapHeld = max(m.heapHeld, e.heapHeld)
		m.informers = append(m.informers, e.informers...)
		m.groups = append(m.groups, e.groups...)
	}
	slices.Sort(m.informers)
	m.informers = slices.Compact(m.informers)
	slices.Sort(m.groups)
	return m
}

// ReplicaPhase is one replica's share of a phase of a manager of several replicas.
type ReplicaPhase struct {
	Name            string  `json:"name"`
	Requests        float64 `json:"apiRequests"`
	CPUSeconds      float64 `json:"cpuSeconds"`
	PeakRSSBytes    int64   `json:"peakRSSBytes"`
	SettledRSSBytes int64   `json:"settledRSSBytes"`
	// Groups are the controller groups the replica leads at the phase's end (groupsLed).
	Groups []string `json:"groups,omitempty"`
	// Informers are the kinds the replica has had a named informer for by the phase's end
	// (informer_store_resource_version: typed informers of the shared cache; the garbage
	// collector's and quota's metadata-only informers report none), "resource.group".
	// client-go never deletes an informer's series, so a kind whose informer was removed when
	// the replica's last term using it ended (a group it led during the start-up race, before
	// the split evened out) still counts: an upper bound of what the replica holds.
	Informers []string `json:"informers"`
}

// replicaPhases is each replica's costs between two samples and its memory and informers at
// the second.
func replicaPhases(ps procs, from, to sample) []ReplicaPhase {
	if len(ps) < 2 {
		return nil
	}
	out := make([]ReplicaPhase, len(ps))
	for i, p := range ps {
		f, t := from.replicas[i], to.replicas[i]
		out[i] = ReplicaPhase{
			Name:            p.Name,
			Requests:        t.metrics.requests - f.metrics.requests,
			CPUSeconds:      (t.usage.CPU - f.usage.CPU).Seconds(),
			PeakRSSBytes:    t.usage.PeakRSS,
			SettledRSSBytes: t.usage.RSS,
			Groups:          t.metrics.groups,
			Informers:       t.metrics.informers,
		}
	}
	return out
}

// informerKinds are the kinds a manager's /metrics reports informers of: the resource and
// group of every informer_store_resource_version series ("pods", "deployments.apps"), sorted.
func informerKinds(r io.Reader) ([]string, error) {
	var kinds []string
	_, err := sumSamples(r, []string{"informer_store_resource_version"}, func(labels map[string]string) bool {
		kind := labels["resource"]
		if g := labels["group"]; g != "" {
			kind += "." + g
		}
		if kind != "" {
			kinds = append(kinds, kind)
		}
		return true
	})
	if err != nil {
		return nil, err
	}
	slices.Sort(kinds)
	return slices.Compact(kinds), nil
}

// groupsLed are the controller groups a kcm process's /metrics says it leads: the groups
// whose Lease (kube-controller-manager-<group>) has leader_election_master_status 1, sorted.
func groupsLed(r io.Reader) ([]string, error) {
	var led []string
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), "leader_election_master_status")
		if !ok || !strings.HasPrefix(rest, "{") {
			continue
		}
		labels, v, err := parseSample(rest)
		if err != nil {
			return nil, fmt.Errorf("parsing %q: %w", sc.Text(), err)
		}
		if g, ok := strings.CutPrefix(labels["name"], leaderElectionName+"-"); ok && v == 1 {
			led = append(led, g)
		}
	}
	slices.Sort(led)
	return led, sc.Err()
}

// applyGroupsRBAC creates the objects of the Role config/controller-groups ships (role.yaml):
// system:kube-controller-manager, as which the bench runs kcm, may get and update only the
// single Lease; the groups' Leases need this Role, as on a kubeadm cluster.
func applyGroupsRBAC(ctx context.Context, cl client.Client, path string) error {
	data, err := os.ReadFile(path)
	if err != nil {
		return err
	}
	n := 0
	for _, doc := range strings.Split(string(data), "\n---\n") {
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal([]byte(doc), &obj.Object); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		if len(obj.Object) == 0 {
			continue
		}
		if err := cl.Create(ctx, obj); err != nil {
			return fmt.Errorf("%s: %s %s: %w", path, obj.GetKind(), obj.GetName(), err)
		}
		n++
	}
	if n == 0 {
		return fmt.Errorf("%s has no objects", path)
	}
	return nil
}

// waitGroupsSplit waits until every group Lease is held by one of the replicas, each holding
// its share (evenSplit).
func waitGroupsSplit(ctx context.Context, cl client.Client, ps procs, timeout time.Duration) error {
	var why string
	err := wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		if ps.Exited() {
			return false, fmt.Errorf("%s", ps.State())
		}
		list := &coordinationv1.LeaseList{}
		if err := cl.List(ctx, list, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{groups.GroupLabel: leaderElectionName}); err != nil {
			why = err.Error()
			return false, nil
		}
		var holders []string
		for _, l := range list.Items {
			holders = append(holders, ptr.Deref(l.Spec.HolderIdentity, ""))
		}
		var ok bool
		ok, why = evenSplit(holders, len(ps))
		return ok, nil
	})
	if err != nil {
		return fmt.Errorf("the group Leases never split evenly over %d replicas within %s (%s): %w", len(ps), timeout, why, err)
	}
	return nil
}

// evenSplit reports whether the group Leases' holders (one per Lease, "" for none) are
// exactly the replicas, each holding the groups divided by the replicas rounded down or up;
// else why not.
func evenSplit(holders []string, replicas int) (bool, string) {
	if len(holders) < replicas {
		return false, fmt.Sprintf("%d group Leases, fewer than %d replicas", len(holders), replicas)
	}
	count := map[string]int{}
	for _, h := range holders {
		if h == "" {
			return false, "a group Lease has no holder"
		}
		count[h]++
	}
	if len(count) != replicas {
		return false, fmt.Sprintf("%d holders of %d group Leases, want %d", len(count), len(holders), replicas)
	}
	lo, hi := len(holders)/replicas, (len(holders)+replicas-1)/replicas
	for h, n := range count {
		if n < lo || n > hi {
			return false, fmt.Sprintf("%s holds %d of %d group Leases, want %d to %d", h, n, len(holders), lo, hi)
		}
	}
	return true, ""
}

// groupsLimits are issue 40's goals for the three replicas against the single leader, at
// every size: the busiest replica's CPU seconds and peak RSS, the replicas' CPU seconds
// together, and the time to convergence.
type groupsLimits struct{ busiestCPU, busiestPeakRSS, sumCPU, wall float64 }

var groupsGoalLimits = groupsLimits{busiestCPU: 0.5, busiestPeakRSS: 0.7, sumCPU: 1.2, wall: 1}

// groupsGoals checks issue 40's goals, in every phase (the quiet cluster's CPU too): the
// busiest replica's CPU seconds and peak RSS, the sum of the replicas' CPU seconds, and the
// wall time to convergence, each over the single kcm leader's.
func groupsGoals(res *Result) []Goal {
	var single, grouped *ManagerResult
	for _, m := range res.Managers {
		switch m.Name {
		case "kcm":
			single = m
		case groupsManager:
			grouped = m
		}
	}
	if single == nil || grouped == nil || len(single.Phases) != len(grouped.Phases) {
		return nil
	}
	lim := groupsGoalLimits
	var out []Goal
	atMost := func(name string, a, b, limit float64, note string) {
		if b > 0 {
			r := a / b
			out = append(out, Goal{Name: name, Ratio: r, Max: limit, Met: r <= limit, Note: note})
		}
	}
	phase := func(g, s *PhaseResult) {
		var busiestCPU float64
		var busiestPeak int64
		for _, r := range g.Replicas {
			busiestCPU = max(busiestCPU, r.CPUSeconds)
			busiestPeak = max(busiestPeak, r.PeakRSSBytes)
		}
		atMost(g.Name+": busiest replica CPU seconds", busiestCPU, s.CPUSeconds, lim.busiestCPU, "")
		atMost(g.Name+": busiest replica peak RSS", float64(busiestPeak), float64(s.PeakRSSBytes), lim.busiestPeakRSS, "peak so far")
		atMost(g.Name+": replicas' CPU seconds together", g.CPUSeconds, s.CPUSeconds, lim.sumCPU, "")
		if g.Name != quietPhase {
			atMost(g.Name+": wall time", g.WallSeconds, s.WallSeconds, lim.wall, "to convergence")
		}
	}
	for i := range single.Phases {
		phase(grouped.Phases[i], single.Phases[i])
		if single.Phases[i].Name == "create" && single.Quiet != nil && grouped.Quiet != nil {
			phase(grouped.Quiet, single.Quiet)
		}
	}
	return out
}

// printGroups writes each replica's numbers per phase of every manager of several replicas,
// then per kind how many replicas hold an informer for it at each phase's end, and issue
// 40's goals.
func printGroups(w io.Writer, res *Result) {
	for _, m := range res.Managers {
		// In the table's order: the quiet cluster after the create phase.
		var phases []*PhaseResult
		for _, p := range m.Phases {
			phases = append(phases, p)
			if p.Name == "create" && m.Quiet != nil {
				phases = append(phases, m.Quiet)
			}
		}
		if len(phases) == 0 || len(phases[0].Replicas) == 0 {
			continue
		}
		fmt.Fprintf(w, "\n%s, each replica (CPU: the phase's until settled; peak RSS: VmHWM so far; groups: those it leads at the phase's end):\n", m.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "phase\treplica\tAPI requests\tCPU s\tpeak RSS MiB\tsettled RSS MiB\tinformers\tgroups\t")
		for _, p := range phases {
			for _, r := range p.Replicas {
				fmt.Fprintf(tw, "%s\t%s\t%.0f\t%.1f\t%.0f\t%.0f\t%d\t%s\t\n", p.Name, r.Name, r.Requests, r.CPUSeconds,
					mib(r.PeakRSSBytes), mib(r.SettledRSSBytes), len(r.Informers), strings.Join(r.Groups, ","))
			}
			fmt.Fprintf(tw, "%s\tsum / max\t%.0f\t%.1f\t%.0f\t%.0f\t\t\t\n", p.Name, p.Requests, p.CPUSeconds, mib(p.PeakRSSBytes), mib(p.SettledRSSBytes))
		}
		_ = tw.Flush()
		last := m.Phases[len(m.Phases)-1]
		fmt.Fprintf(w, "\n%s: informers by kind, how many of the %d replicas have held one by each phase's end (%d: every group may need it;\n"+
			"informer_* series outlive an informer removed with a term, so a replica that led more groups during the start-up race still counts their kinds):\n",
			m.Name, len(last.Replicas), len(last.Replicas))
		tw = tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
		header := []string{"kind"}
		for _, p := range phases {
			header = append(header, p.Name)
		}
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
		counts := make([]map[string]int, len(phases))
		var kinds []string
		for i, p := range phases {
			counts[i] = informerCounts(p.Replicas)
			for k := range counts[i] {
				kinds = append(kinds, k)
			}
		}
		slices.Sort(kinds)
		for _, k := range slices.Compact(kinds) {
			row := []string{k}
			for i := range phases {
				row = append(row, fmt.Sprint(counts[i][k]))
			}
			fmt.Fprintln(tw, strings.Join(row, "\t")+"\t")
		}
		_ = tw.Flush()
	}
	gs := groupsGoals(res)
	if len(gs) == 0 {
		return
	}
	fmt.Fprintf(w, "\nissue 40's goals, %s (%d replicas) over the single kcm leader:\n", groupsManager, groupsReplicas)
	printGoalLines(w, gs)
}

// informerCounts is, per kind, how many of the replicas hold an informer for it.
func informerCounts(rs []ReplicaPhase) map[string]int {
	out := map[string]int{}
	for _, r := range rs {
		for _, k := range r.Informers {
			out[k]++
		}
	}
	return out
}
