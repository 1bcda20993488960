//go:build linux

package main

import (
	"flag"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestIdle(t *testing.T) {
	t0 := time.Date(2026, 11, 25, 0, 0, 0, 0, time.UTC)
	at := func(s float64, cpuMillis int) cpuSample {
		return cpuSample{at: t0.Add(time.Duration(s * float64(time.Second))), cpu: time.Duration(cpuMillis) * time.Millisecond}
	}
	for _, tc := range []struct {
		name    string
		history []cpuSample
		want    bool
	}{
		{"no sample a window old yet", []cpuSample{at(0, 0), at(4, 0)}, false},
		{"idle for the window", []cpuSample{at(0, 0), at(5, 100)}, true},   // 0.02 cores
		{"busy over the window", []cpuSample{at(0, 0), at(5, 500)}, false}, // 0.1 cores
		{"busy before the window only", []cpuSample{at(0, 0), at(1, 900), at(6, 950)}, true},
		{"busy at the end", []cpuSample{at(0, 0), at(1, 0), at(6, 400)}, false},
	} {
		if got := idle(tc.history, 5*time.Second, idleCores); got != tc.want {
			t.Errorf("%s: idle = %v, want %v", tc.name, got, tc.want)
		}
	}
	// Three processes may use idleCores each: 0.1 cores together is idle for them.
	busy := []cpuSample{at(0, 0), at(5, 500)}
	if !idle(busy, 5*time.Second, 3*idleCores) || idle(busy, 5*time.Second, idleCores) {
		t.Error("0.1 cores over the window: idle for three processes, busy for one")
	}
}

func TestApplyPreset(t *testing.T) {
	fs := flag.NewFlagSet("bench", flag.ContinueOnError)
	deployments := fs.Int("deployments", 500, "")
	replicas := fs.Int("replicas", 4, "")
	qps := fs.Float64("kube-api-qps", 20, "")
	if err := fs.Parse([]string{"-replicas=3"}); err != nil {
		t.Fatal(err)
	}
	if err := applyPreset(fs, map[string]string{"deployments": "2000", "replicas": "10", "kube-api-qps": "400"}); err != nil {
		t.Fatal(err)
	}
	if *deployments != 2000 || *qps != 400 || *replicas != 3 {
		t.Errorf("deployments %d, qps %g, replicas %d; want the preset's 2000 and 400, and the explicit 3", *deployments, *qps, *replicas)
	}
}

func TestUpstreamControllers(t *testing.T) {
	help := `      --controllers strings    A list of controllers to enable. '*' enables all on-by-default controllers.
                               All controllers: bootstrap-signer-controller, cronjob-controller, ttl-controller
                               Disabled-by-default controllers: bootstrap-signer-controller (default [*])
`
	got := upstreamControllers(help)
	if len(got) != 3 || !got["bootstrap-signer-controller"] || !got["cronjob-controller"] || !got["ttl-controller"] {
		t.Errorf("upstreamControllers = %v; want the three listed", got)
	}
	if got := upstreamControllers("Usage: something else"); got != nil {
		t.Errorf("upstreamControllers of a help without controllers = %v, want nil", got)
	}
}

func TestEventWritesFromAPIServerMetrics(t *testing.T) {
	text := `# TYPE apiserver_request_total counter
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 7
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="PATCH",version="v1"} 3
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="events",scope="resource",subresource="",verb="PUT",version="v1"} 1
apiserver_request_total{code="200",component="apiserver",dry_run="",group="",resource="events",scope="namespace",subresource="",verb="LIST",version="v1"} 100
apiserver_request_total{code="201",component="apiserver",dry_run="",group="events.k8s.io",resource="events",scope="resource",subresource="",verb="POST",version="v1"} 50
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="",verb="POST",version="v1"} 1000
apiserver_request_total{code="201",component="apiserver",dry_run="",group="",resource="pods",scope="resource",subresource="status",verb="PATCH",version="v1"} 1000
`
	got, err := sumMetricWhere(strings.NewReader(text), "apiserver_request_total", isEventWrite)
	if err != nil || got != 11 {
		t.Errorf("core/v1 Event writes = %v, %v; want 11 (created, patched, updated; not listed, not events.k8s.io's, not other resources)", got, err)
	}
}

func TestParseSample(t *testing.T) {
	for in, want := range map[string]struct {
		labels map[string]string
		value  float64
	}{
		` 5`:                                 {map[string]string{}, 5},
		`{a="1",b="x y"} 2.5`:                {map[string]string{"a": "1", "b": "x y"}, 2.5},
		`{a="q\"uote",b="back\\slash",} 1e3`: {map[string]string{"a": `q"uote`, "b": `back\slash`}, 1000},
		`{} 3 1700000000000`:                 {map[string]string{}, 3},
	} {
		labels, value, err := parseSample(in)
		if err != nil || value != want.value || len(labels) != len(want.labels) {
			t.Errorf("parseSample(%q) = %v, %v, %v; want %v, %v", in, labels, value, err, want.labels, want.value)
			continue
		}
		for k, v := range want.labels {
			if labels[k] != v {
				t.Errorf("parseSample(%q)[%s] = %q, want %q", in, k, labels[k], v)
			}
		}
	}
	for _, bad := range []string{`{a="1"`, `{a} 1`, `{a="1"}`} {
		if _, _, err := parseSample(bad); err == nil {
			t.Errorf("parseSample(%q) must fail", bad)
		}
	}
}

func TestSlopeConfig(t *testing.T) {
	base := Config{Deployments: 500, Replicas: 10, Nodes: 50, ByClient: true}
	for _, tc := range []struct {
		pods                        int
		deployments, replicas, node int
	}{
		{2000, 200, 10, 50},
		{20000, 2000, 10, 200},
		{10001, 1000, 10, 100},
		{5, 1, 5, 50},
	} {
		c := slopeConfig(base, tc.pods)
		if c.Deployments != tc.deployments || c.Replicas != tc.replicas || c.Nodes != tc.node || c.ByClient {
			t.Errorf("slopeConfig(%d) = %d × %d on %d nodes (audit %v); want %d × %d on %d, no audit",
				tc.pods, c.Deployments, c.Replicas, c.Nodes, c.ByClient, tc.deployments, tc.replicas, tc.node)
		}
	}
}

func TestLeastSquaresSlope(t *testing.T) {
	for _, tc := range []struct {
		x, y []float64
		want float64
	}{
		{[]float64{2000, 10000, 20000}, []float64{100e6 + 2000*8000, 100e6 + 10000*8000, 100e6 + 20000*8000}, 8000},
		{[]float64{1, 2, 3}, []float64{1, 3, 2}, 0.5},
		{[]float64{2000}, []float64{5}, 0},
		{[]float64{2000, 2000}, []float64{5, 6}, 0},
	} {
		if got := leastSquaresSlope(tc.x, tc.y); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("leastSquaresSlope(%v, %v) = %v, want %v", tc.x, tc.y, got, tc.want)
		}
	}
}

func TestGoals(t *testing.T) {
	phase := func(name string, wall, cpu float64, reqs float64, peak int64) *PhaseResult {
		return &PhaseResult{Name: name, WallSeconds: wall, CPUSeconds: cpu, Requests: reqs, PeakRSSBytes: peak}
	}
	// kcm/upstream: create 0.86 of the wall time, 0.6 of the CPU, 0.9 of the requests; the
	// quiet cluster 0.5 of the cores; delete 0.8, 0.45 and 0.8; peak RSS 0.7; RSS per pod
	// 0.65 at the peak, 0.75 settled.
	res := &Result{
		Managers: []*ManagerResult{
			{Name: "upstream", Phases: []*PhaseResult{phase("create", 100, 10, 1000, 100), phase("delete", 50, 20, 500, 100)},
				Quiet: phase(quietPhase, 60, 1.2, 10, 100), CPUSeconds: 20, Requests: 2000, PeakRSSBytes: 100},
			{Name: "kcm", Phases: []*PhaseResult{phase("create", 86, 6, 900, 71), phase("delete", 40, 9, 400, 70)},
				Quiet: phase(quietPhase, 60, 0.6, 10, 71), CPUSeconds: 16, Requests: 2001, PeakRSSBytes: 70},
		},
		MemorySlope: &MemorySlope{BytesPerPod: map[string]SlopeFit{"upstream": {Peak: 20000, Settled: 10000}, "kcm": {Peak: 13000, Settled: 7500}}},
	}
	res.Ratio = ratios(res.Managers)
	for _, tc := range []struct {
		scale bool
		met   map[string]bool
	}{
		{false, map[string]bool{
			"create: API requests per converged object": false, // 0.90 > 0.85
			"create: wall time":                         false, // 0.86 > 0.85
			"create: manager CPU seconds":               true,  // 0.60 ≤ 0.8
			"quiet: manager CPU":                        true,  // 0.50 ≤ 0.8
			"delete: API requests per converged object": true,  // 0.80 ≤ 0.85
			"delete: wall time":                         true,  // 0.80 ≤ 0.85
			"delete: manager CPU seconds":               true,  // 0.45 ≤ 0.8
			"whole run: peak RSS":                       true,  // 0.70 ≤ 0.7
			"memory slope: peak RSS per pod":            true,  // 0.65 ≤ 0.7
			"memory slope: settled RSS per pod":         false, // 0.75 > 0.7
		}},
		{true, map[string]bool{
			"create: API requests per converged object": true,  // 0.90 ≤ 1
			"create: wall time":                         true,  // 0.86 ≤ 0.9
			"create: manager CPU seconds":               false, // 0.60 > 0.5
			"quiet: manager CPU":                        true,  // 0.50 ≤ 0.5
			"delete: API requests per converged object": true,
			"delete: wall time":                         true,
			"delete: manager CPU seconds":               true, // 0.45 ≤ 0.5
			"whole run: peak RSS":                       true,
			"memory slope: peak RSS per pod":            true,
			"memory slope: settled RSS per pod":         false,
		}},
	} {
		res.Config.Scale = tc.scale
		got := map[string]Goal{}
		for _, g := range goals(res) {
			got[g.Name] = g
		}
		if len(got) != len(tc.met) {
			t.Errorf("scale=%v: %d goals, want %d: %v", tc.scale, len(got), len(tc.met), got)
		}
		for name, met := range tc.met {
			g, ok := got[name]
			if !ok {
				t.Errorf("scale=%v: no goal %q in %v", tc.scale, name, got)
				continue
			}
			if g.Met != met {
				t.Errorf("scale=%v: %s: ratio %.4f ≤ %.2f met=%v, want %v", tc.scale, name, g.Ratio, g.Max, g.Met, met)
			}
		}
	}
}

func TestPrintTable(t *testing.T) {
	phase := func(name string, wall, cpu, controlPlane, machine float64, live int64) *PhaseResult {
		return &PhaseResult{Name: name, WallSeconds: wall, CPUSeconds: cpu, Requests: 1000, PeakRSSBytes: 100 << 20, SettledRSSBytes: 90 << 20,
			LiveHeapBytes: live << 20, ControlPlaneCPUSeconds: controlPlane, MachineCPUSeconds: machine}
	}
	res := &Result{
		Machine: Machine{CPUs: 2},
		Managers: []*ManagerResult{
			{Name: "upstream", Phases: []*PhaseResult{phase("create", 100, 10, 61.5, 150.25, 40)}, Quiet: phase(quietPhase, 10, 0.2, 1.5, 2.5, 40)},
			{Name: "kcm", Phases: []*PhaseResult{phase("create", 60, 9, 42.25, 101.5, 30)}, Quiet: phase(quietPhase, 10, 0.1, 1.25, 2, 35)},
		},
	}
	res.Ratio = ratios(res.Managers)
	var b strings.Builder
	printTable(&b, res)
	out := b.String()
	row := func(phase, manager string) []string {
		for _, line := range strings.Split(out, "\n") {
			if f := strings.Fields(line); len(f) > 2 && f[0] == phase && f[1] == manager {
				return f
			}
		}
		t.Fatalf("no row %s %s in\n%s", phase, manager, out)
		return nil
	}
	if !strings.Contains(strings.Join(strings.Fields(out), " "), " phase manager wall s pods/s API requests Events CPU s peak RSS MiB settled RSS MiB live heap MiB control plane CPU s machine CPU s ") {
		t.Errorf("no header with the control plane's and the machine's CPU after the existing columns in\n%s", out)
	}
	for _, tc := range []struct {
		phase, manager string
		want           []string
	}{
		{"create", "upstream", []string{"100.0", "1000", "0", "10.0", "100", "90", "40", "61.5", "150.2"}},
		{"create", "kcm", []string{"60.0", "1000", "0", "9.0", "100", "90", "30", "42.2", "101.5"}},
		{"quiet", "kcm", []string{"10.0", "1000", "0", "0.1", "(0.010", "cores)", "100", "90", "35", "1.2", "(0.125", "cores)", "2.0", "(0.200", "cores)"}},
	} {
		if got := row(tc.phase, tc.manager)[2:]; !slices.Equal(got, tc.want) {
			t.Errorf("%s %s: %q, want %q", tc.phase, tc.manager, got, tc.want)
		}
	}
	// The ratios stay where they were, the live heap's after the RSS', nothing under the CPU columns.
	if got, want := row("create", "kcm/upstream")[2:], []string{"0.60", "1.00", "0.90", "1.00", "1.00", "0.75"}; !slices.Equal(got, want) {
		t.Errorf("create kcm/upstream: %q, want %q", got, want)
	}
}
