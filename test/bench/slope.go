//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"path/filepath"
	"strconv"
	"strings"
	"text/tabwriter"
)

// MemorySlope is -memory-slope: the managers' memory at several cluster sizes, each on a
// fresh cluster with only the create phase and the quiet cluster, so that the memory per
// pod shows apart from what a manager costs empty.
type MemorySlope struct {
	Points []*SlopePoint `json:"points"`
	// BytesPerPod is, per manager, the least-squares slope of its RSS over the pods.
	BytesPerPod map[string]SlopeFit `json:"bytesPerPod"`
}

// SlopePoint is one size.
type SlopePoint struct {
	Pods        int                    `json:"pods"`
	Deployments int                    `json:"deployments"`
	Replicas    int                    `json:"replicas"`
	Nodes       int                    `json:"nodes"`
	Managers    map[string]*SlopeValue `json:"managers"`
}

// SlopeValue is one manager's memory at one size.
type SlopeValue struct {
	// PeakRSSBytes is VmHWM at the end (create, then the quiet cluster).
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// SettledRSSBytes is VmRSS once the create phase settled.
	SettledRSSBytes int64 `json:"settledRSSBytes"`
	// QuietRSSBytes is VmRSS at the end of the quiet cluster, 0 without -quiet.
	QuietRSSBytes     int64   `json:"quietRSSBytes,omitempty"`
	CreateWallSeconds float64 `json:"createWallSeconds"`
}

// SlopeFit is a manager's RSS per pod.
type SlopeFit struct {
	Peak    float64 `json:"peak"`
	Settled float64 `json:"settled"`
}

// parseSizes reads "2000,10000,20000".
func parseSizes(s string) ([]int, error) {
	if s == "" {
		return nil, nil
	}
	var out []int
	for _, f := range strings.Split(s, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%q is not a number of pods", f)
		}
		out = append(out, n)
	}
	return out, nil
}

// podsPerNode is how many pods the memory slope puts on a node at most: a KWOK node has
// room for 110 (cluster.NewNode).
const podsPerNode = 100

// slopeConfig is the run of one size: pods/-replicas Deployments (at least one) of
// -replicas, on -nodes nodes or as many as the pods need.
func slopeConfig(cfg Config, pods int) Config {
	c := cfg
	c.Replicas = max(1, min(cfg.Replicas, pods))
	c.Deployments = max(1, pods/c.Replicas)
	c.Nodes = max(cfg.Nodes, (c.Deployments*c.Replicas+podsPerNode-1)/podsPerNode)
	c.ByClient = false
	return c
}

func measureMemorySlope(ctx context.Context, cfg Config, sizes []int, managers []Manager,
	runDir, assets, kwok string) (*MemorySlope, error) {
	var names []string
	for _, m := range managers {
		names = append(names, m.Name)
	}
	ms := &MemorySlope{}
	for _, pods := range sizes {
		c := slopeConfig(cfg, pods)
		p := &SlopePoint{Pods: c.Deployments * c.Replicas, Deployments: c.Deployments, Replicas: c.Replicas, Nodes: c.Nodes,
			Managers: map[string]*SlopeValue{}}
		for _, m := range managers {
			name := m.Name
			fmt.Printf("bench: memory slope: %s with %d pods (%d Deployments × %d on %d nodes)\n", name, p.Pods, c.Deployments, c.Replicas, c.Nodes)
			m.Binary, _ = filepath.Abs(m.Binary)
			dir := filepath.Join(runDir, fmt.Sprintf("slope-%d", p.Pods), name)
			r, err := run(ctx, c, m, clusterPaths{dir: dir, assets: assets, kwok: kwok}, runOptions{createOnly: true})
			if err != nil {
				return nil, fmt.Errorf("%s with %d pods: %w", name, p.Pods, err)
			}
			v := &SlopeValue{PeakRSSBytes: r.PeakRSSBytes, SettledRSSBytes: r.Phases[0].SettledRSSBytes, CreateWallSeconds: r.Phases[0].WallSeconds}
			if r.Quiet != nil {
				v.QuietRSSBytes = r.Quiet.SettledRSSBytes
			}
			p.Managers[name] = v
		}
		ms.Points = append(ms.Points, p)
	}
	ms.BytesPerPod = map[string]SlopeFit{}
	for _, name := range names {
		var x, peak, settled []float64
		for _, p := range ms.Points {
			x = append(x, float64(p.Pods))
			peak = append(peak, float64(p.Managers[name].PeakRSSBytes))
			settled = append(settled, float64(p.Managers[name].SettledRSSBytes))
		}
		ms.BytesPerPod[name] = SlopeFit{Peak: leastSquaresSlope(x, peak), Settled: leastSquaresSlope(x, settled)}
	}
	return ms, nil
}

// leastSquaresSlope is the slope of the line fitting y over x best; 0 with fewer than two
// distinct x.
func leastSquaresSlope(x, y []float64) float64 {
	n := float64(len(x))
	var sx, sy, sxx, sxy float64
	for i := range x {
		sx += x[i]
		sy += y[i]
		sxx += x[i] * x[i]
		sxy += x[i] * y[i]
	}
	d := n*sxx - sx*sx
	if len(x) < 2 || d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

// printMemorySlope writes the second table: RSS per size and manager, and the slope.
func printMemorySlope(w io.Writer, ms *MemorySlope) {
	if ms == nil || len(ms.Points) == 0 {
		return
	}
	var names []string
	for name := range ms.Points[0].Managers {
		names = append(names, name)
	}
	names = orderManagers(names)
	fmt.Fprintf(w, "\nmemory slope: the create phase, then the quiet cluster, on a fresh cluster per size and manager (MiB; peak = VmHWM at the end, settled = VmRSS once create settled)\n")
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{"pods", "Deployments", "nodes"}
	for _, n := range names {
		header = append(header, n+" peak", n+" settled")
	}
	both := len(names) == 2 && names[0] == "upstream" && names[1] == "kcm"
	if both {
		header = append(header, "kcm/upstream peak", "settled")
	}
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	for _, p := range ms.Points {
		cells := []string{strconv.Itoa(p.Pods), strconv.Itoa(p.Deployments), strconv.Itoa(p.Nodes)}
		for _, n := range names {
			v := p.Managers[n]
			cells = append(cells, fmt.Sprintf("%.0f", mib(v.PeakRSSBytes)), fmt.Sprintf("%.0f", mib(v.SettledRSSBytes)))
		}
		if both {
			k, u := p.Managers["kcm"], p.Managers["upstream"]
			cells = append(cells, ratioCell(float64(k.PeakRSSBytes), float64(u.PeakRSSBytes)), ratioCell(float64(k.SettledRSSBytes), float64(u.SettledRSSBytes)))
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	cells := []string{"KiB per pod", "", ""}
	for _, n := range names {
		f := ms.BytesPerPod[n]
		cells = append(cells, fmt.Sprintf("%.1f", f.Peak/1024), fmt.Sprintf("%.1f", f.Settled/1024))
	}
	if both {
		k, u := ms.BytesPerPod["kcm"], ms.BytesPerPod["upstream"]
		cells = append(cells, ratioCell(k.Peak, u.Peak), ratioCell(k.Settled, u.Settled))
	}
	fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	_ = tw.Flush()
}

func ratioCell(a, b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.2f", a/b)
}

// orderManagers puts upstream, the reference, first.
func orderManagers(names []string) []string {
	var out []string
	for _, n := range []string{"upstream", "kcm"} {
		for _, m := range names {
			if m == n {
				out = append(out, m)
			}
		}
	}
	return out
}
