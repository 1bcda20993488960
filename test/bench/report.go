//go:build linux

package main

import (
	"bufio"
	"bytes"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcm/kcm/test/cluster"
)

// Baseline is the API server's own limit: a plain client creating the scenario's number of
// pods, cfg.Workers requests in flight, no client-side rate limit.
type Baseline struct {
	Pods          int     `json:"pods"`
	WallSeconds   float64 `json:"wallSeconds"`
	PodsPerSecond float64 `json:"podsPerSecond"`
}

// measureAPIServer creates the pods on a fresh API server (no scheduler, no nodes, no
// manager: only what a create costs the server). The pods name a node so nothing would
// schedule them.
func measureAPIServer(ctx context.Context, cfg Config, paths clusterPaths) (*Baseline, error) {
	c, err := cluster.Start(ctx, cluster.Options{Dir: paths.dir, Assets: paths.assets})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()
	if err := c.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: namespace}}); err != nil {
		return nil, err
	}
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: "default"}}
	if err := c.Client.Create(ctx, sa); err != nil {
		return nil, err
	}
	pods := cfg.Deployments * cfg.Replicas
	start := time.Now()
	err = parallel(ctx, pods, cfg.Workers, func(ctx context.Context, i int) error {
		return c.Client.Create(ctx, &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: fmt.Sprintf("pod-%05d", i), Labels: map[string]string{"app": "baseline"}},
			Spec: corev1.PodSpec{
				NodeName:   "kwok-node-0",
				Containers: []corev1.Container{{Name: "app", Image: image}},
			},
		})
	})
	if err != nil {
		return nil, err
	}
	wall := time.Since(start).Seconds()
	return &Baseline{Pods: pods, WallSeconds: wall, PodsPerSecond: float64(pods) / wall}, nil
}

var insecure = &http.Client{
	Timeout: 10 * time.Second,
	// Both managers serve a self-signed certificate on loopback.
	Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, //nolint:gosec
}

// managerMetrics is what the driver reads of a manager's /metrics at an instant.
type managerMetrics struct {
	// requests sums rest_client_requests_total over every code, method and host.
	requests float64
	// heapLive is the Go heap the last GC found live (go_gc_heap_live_bytes): the objects the
	// manager holds. heapGoal is the size at which the next GC starts (go_gc_heap_goal_bytes,
	// twice the live heap at the default GOGC), and heapHeld the heap memory the runtime holds
	// from the OS (heap_sys - heap_released): with stacks and the binary, what RSS counts.
	// Both managers serve the Go collector with every runtime metric.
	heapLive, heapGoal, heapHeld float64
	// views and viewsBytes are kcm's per-object views (kcm_object_views and
	// kcm_object_views_bytes summed over controllers); 0 for upstream, which has none.
	views, viewsBytes float64
	// informers are the kinds with a named informer (informerKinds), nil before any; groups
	// the controller groups kcm leads (groupsLed), nil without --controller-groups.
	informers, groups []string
}

// scrapeManager reads the manager's /metrics.
func scrapeManager(ctx context.Context, url string) (managerMetrics, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return managerMetrics{}, err
	}
	resp, err := insecure.Do(req)
	if err != nil {
		return managerMetrics{}, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return managerMetrics{}, fmt.Errorf("%s: %s", resp.Status, body)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return managerMetrics{}, err
	}
	v, err := sumMetrics(bytes.NewReader(body), "rest_client_requests_total", "go_gc_heap_live_bytes", "go_gc_heap_goal_bytes",
		"go_memstats_heap_sys_bytes", "go_memstats_heap_released_bytes")
	if err != nil {
		return managerMetrics{}, err
	}
	// kcm's own, absent from upstream's /metrics (and from kcm's until a controller's queue
	// starts): 0 then.
	views, _ := sumMetrics(bytes.NewReader(body), "kcm_object_views", "kcm_object_views_bytes")
	// None before the first informer starts.
	informers, _ := informerKinds(bytes.NewReader(body))
	groups, err := groupsLed(bytes.NewReader(body))
	if err != nil {
		return managerMetrics{}, err
	}
	return managerMetrics{
		informers:  informers,
		groups:     groups,
		views:      views["kcm_object_views"],
		viewsBytes: views["kcm_object_views_bytes"],
		requests:   v["rest_client_requests_total"],
		heapLive:   v["go_gc_heap_live_bytes"],
		heapGoal:   v["go_gc_heap_goal_bytes"],
		heapHeld:   v["go_memstats_heap_sys_bytes"] - v["go_memstats_heap_released_bytes"],
	}, nil
}

// sumMetrics adds up every sample of each named metric in one pass; a metric without any
// sample is an error (a renamed metric must not read as 0).
func sumMetrics(r io.Reader, names ...string) (map[string]float64, error) {
	return sumSamples(r, names, func(map[string]string) bool { return true })
}

// sumMetricWhere adds up the samples of a counter in Prometheus' text format whose labels
// match; a counter without any sample is an error (a renamed metric must not read as 0).
func sumMetricWhere(r io.Reader, name string, match func(labels map[string]string) bool) (float64, error) {
	sums, err := sumSamples(r, []string{name}, match)
	return sums[name], err
}

// sumSamples adds up, per name, the samples in Prometheus' text format whose labels match,
// in one pass; a name without any sample, matching or not, is an error.
func sumSamples(r io.Reader, names []string, match func(labels map[string]string) bool) (map[string]float64, error) {
	sums := map[string]float64{}
	found := map[string]bool{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		for _, name := range names {
			rest, ok := strings.CutPrefix(line, name)
			if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
				continue
			}
			labels, value, err := parseSample(rest)
			if err != nil {
				return nil, fmt.Errorf("parsing %q: %w", line, err)
			}
			found[name] = true
			if match(labels) {
				sums[name] += value
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	for _, name := range names {
		if !found[name] {
			return nil, fmt.Errorf("no %s in the metrics", name)
		}
	}
	return sums, nil
}

// parseSample reads `{k="v",...} value [timestamp]`, what follows a sample's name.
func parseSample(s string) (map[string]string, float64, error) {
	labels := map[string]string{}
	if strings.HasPrefix(s, "{") {
		s = s[1:]
		for {
			s = strings.TrimLeft(s, " ,")
			if strings.HasPrefix(s, "}") {
				s = s[1:]
				break
			}
			key, rest, ok := strings.Cut(s, "=\"")
			if !ok {
				return nil, 0, fmt.Errorf("no label value")
			}
			var value strings.Builder
			i := 0
			for ; i < len(rest) && rest[i] != '"'; i++ {
				if rest[i] == '\\' && i+1 < len(rest) {
					i++
					if rest[i] == 'n' {
						value.WriteByte('\n')
						continue
					}
				}
				value.WriteByte(rest[i])
			}
			if i == len(rest) {
				return nil, 0, fmt.Errorf("unterminated label value")
			}
			labels[strings.TrimSpace(key)] = value.String()
			s = rest[i+1:]
		}
	}
	fields := strings.Fields(s)
	if len(fields) == 0 {
		return nil, 0, fmt.Errorf("no value")
	}
	v, err := strconv.ParseFloat(fields[0], 64)
	return labels, v, err
}

// ratios divides kcm's numbers by upstream's, where both were measured.
func ratios(ms []*ManagerResult) map[string]float64 {
	up, k := pair(ms)
	if up == nil || k == nil || len(up.Phases) != len(k.Phases) {
		return nil
	}
	r := map[string]float64{}
	div := func(key string, a, b float64) {
		if b != 0 {
			r[key] = a / b
		}
	}
	phase := func(p, q *PhaseResult) {
		div(p.Name+" wallSeconds", p.WallSeconds, q.WallSeconds)
		div(p.Name+" apiRequests", p.Requests, q.Requests)
		div(p.Name+" eventWrites", p.EventWrites, q.EventWrites)
		div(p.Name+" cpuSeconds", p.CPUSeconds, q.CPUSeconds)
		div(p.Name+" peakRSSBytes", float64(p.PeakRSSBytes), float64(q.PeakRSSBytes))
		div(p.Name+" settledRSSBytes", float64(p.SettledRSSBytes), float64(q.SettledRSSBytes))
		div(p.Name+" liveHeapBytes", float64(p.LiveHeapBytes), float64(q.LiveHeapBytes))
	}
	for i := range up.Phases {
		phase(k.Phases[i], up.Phases[i])
	}
	if k.Quiet != nil && up.Quiet != nil {
		phase(k.Quiet, up.Quiet)
		div(quietPhase+" cores", k.Quiet.CPUSeconds/k.Quiet.WallSeconds, up.Quiet.CPUSeconds/up.Quiet.WallSeconds)
	}
	div("apiRequests", k.Requests, up.Requests)
	div("eventWrites", k.EventWrites, up.EventWrites)
	div("cpuSeconds", k.CPUSeconds, up.CPUSeconds)
	div("peakRSSBytes", float64(k.PeakRSSBytes), float64(up.PeakRSSBytes))
	return r
}

// pair is upstream's and kcm's results, nil where not measured.
func pair(ms []*ManagerResult) (up, k *ManagerResult) {
	for _, m := range ms {
		switch m.Name {
		case "upstream":
			up = m
		case "kcm":
			k = m
		}
	}
	return up, k
}

// Goal is one of issue 39's goals for kcm against upstream.
type Goal struct {
	// Name is what is compared, e.g. "create: wall time".
	Name  string  `json:"name"`
	Ratio float64 `json:"ratio"`
	// At most Max.
	Max  float64 `json:"max"`
	Met  bool    `json:"met"`
	Note string  `json:"note,omitempty"`
}

// goalLimits are issue 39's most kcm may take of upstream's, at one size.
type goalLimits struct {
	// requests per converged object (Events included), wall time to convergence and the
	// manager's CPU seconds, in every phase; peak RSS and RSS per pod (the memory slope).
	requests, wall, cpu, peakRSS, slope float64
}

// goalsAt are the limits at the default size and at -scale; a custom shape is held to the
// default size's.
func goalsAt(scale bool) goalLimits {
	if scale {
		return goalLimits{requests: 1, wall: 0.9, cpu: 0.5, peakRSS: 0.7, slope: 0.7}
	}
	return goalLimits{requests: 0.85, wall: 0.85, cpu: 0.8, peakRSS: 0.7, slope: 0.7}
}

// goals checks issue 39's goals (goalsAt the run's size): in every phase kcm's API requests
// per converged object, its time to converge and its CPU seconds (cores on the quiet
// cluster); its peak RSS over the run; and, with -memory-slope, its RSS per pod.
func goals(res *Result) []Goal {
	if res.Ratio == nil {
		return nil
	}
	limits := goalsAt(res.Config.Scale)
	var out []Goal
	atMost := func(name string, r, limit float64, note string) {
		out = append(out, Goal{Name: name, Ratio: r, Max: limit, Met: r <= limit, Note: note})
	}
	ratio := func(name, key string, limit float64, note string) {
		if r, ok := res.Ratio[key]; ok {
			atMost(name, r, limit, note)
		}
	}
	up, _ := pair(res.Managers)
	for _, p := range up.Phases {
		// Both managers converge the same objects: the ratio of requests is that per object.
		ratio(p.Name+": API requests per converged object", p.Name+" apiRequests", limits.requests, "Events included")
		ratio(p.Name+": wall time", p.Name+" wallSeconds", limits.wall, "to convergence")
		ratio(p.Name+": manager CPU seconds", p.Name+" cpuSeconds", limits.cpu, "")
		if p.Name == "create" {
			ratio(quietPhase+": manager CPU", quietPhase+" cores", limits.cpu, "cores on the idle cluster")
		}
	}
	ratio("whole run: peak RSS", "peakRSSBytes", limits.peakRSS, "")
	if ms := res.MemorySlope; ms != nil {
		k, u := ms.BytesPerPod["kcm"], ms.BytesPerPod["upstream"]
		if u.Peak > 0 {
			atMost("memory slope: peak RSS per pod", k.Peak/u.Peak, limits.slope, "")
		}
		if u.Settled > 0 {
			atMost("memory slope: settled RSS per pod", k.Settled/u.Settled, limits.slope, "")
		}
	}
	return out
}

// printTable writes one row per phase per manager, and kcm/upstream under each phase.
func printTable(w io.Writer, res *Result) {
	fmt.Fprintf(w, "\n%d Deployments × %d replicas, %d KWOK nodes, --kube-api-qps=%g --kube-api-burst=%d, %d CPUs\n",
		res.Config.Deployments, res.Config.Replicas, res.Config.Nodes, res.Config.QPS, res.Config.Burst, res.Machine.CPUs)
	fmt.Fprintf(w, "wall: to convergence; requests (Event writes among them), CPU: until the manager settled (idle %s); peak RSS: VmHWM, the peak so far; settled RSS: VmRSS once settled; live heap: the Go heap the manager's last GC found live, once settled\n",
		res.Config.Settle)
	fmt.Fprintf(w, "until settled too: control plane CPU: kube-apiserver, etcd, kube-scheduler and kwok; machine CPU: busy time of all %d CPUs (/proc/stat), the manager's and the driver's included\n",
		res.Machine.CPUs)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "phase\tmanager\twall s\tpods/s\tAPI requests\tEvents\tCPU s\tpeak RSS MiB\tsettled RSS MiB\tlive heap MiB\tcontrol plane CPU s\tmachine CPU s\t")
	cells := func(c ...string) { fmt.Fprintln(tw, strings.Join(c, "\t")+"\t") }
	f := func(format string, v float64) string { return fmt.Sprintf(format, v) }
	ratio := func(key, format string) string {
		if r, ok := res.Ratio[key]; ok {
			return fmt.Sprintf(format, r)
		}
		return ""
	}
	phase := func(name string, get func(*ManagerResult) *PhaseResult) {
		for _, m := range res.Managers {
			p := get(m)
			if p == nil {
				continue
			}
			seconds := func(s float64) string {
				if name == quietPhase {
					return fmt.Sprintf("%.1f (%.3f cores)", s, s/p.WallSeconds)
				}
				return f("%.1f", s)
			}
			pods := ""
			if p.PodsCreated > 0 {
				pods = f("%.1f", p.PodsPerSecond)
			}
			cells(name, m.Name, f("%.1f", p.WallSeconds), pods, f("%.0f", p.Requests), f("%.0f", p.EventWrites), seconds(p.CPUSeconds),
				f("%.0f", mib(p.PeakRSSBytes)), f("%.0f", mib(p.SettledRSSBytes)), f("%.0f", mib(p.LiveHeapBytes)), seconds(p.ControlPlaneCPUSeconds), seconds(p.MachineCPUSeconds))
		}
		if res.Ratio != nil {
			cpu := ratio(name+" cpuSeconds", "%.2f")
			if name == quietPhase {
				cpu = ratio(name+" cores", "%.2f")
			}
			wall := ratio(name+" wallSeconds", "%.2f")
			if name == quietPhase {
				wall = "" // the same for both
			}
			cells(name, "kcm/upstream", wall, "", ratio(name+" apiRequests", "%.2f"),
				ratio(name+" eventWrites", "%.2f"), cpu, ratio(name+" peakRSSBytes", "%.2f"), ratio(name+" settledRSSBytes", "%.2f"), ratio(name+" liveHeapBytes", "%.2f"), "", "")
		}
	}
	if len(res.Managers) > 0 {
		for i, p := range res.Managers[0].Phases {
			phase(p.Name, func(m *ManagerResult) *PhaseResult { return m.Phases[i] })
			if p.Name == "create" && res.Managers[0].Quiet != nil {
				phase(quietPhase, func(m *ManagerResult) *PhaseResult { return m.Quiet })
			}
		}
	}
	for _, m := range res.Managers {
		cells("whole run", m.Name, "", "", f("%.0f", m.Requests), f("%.0f", m.EventWrites), f("%.1f", m.CPUSeconds), f("%.0f", mib(m.PeakRSSBytes)), "", "", "")
	}
	if res.Ratio != nil {
		cells("whole run", "kcm/upstream", "", "", ratio("apiRequests", "%.2f"), ratio("eventWrites", "%.2f"), ratio("cpuSeconds", "%.2f"), ratio("peakRSSBytes", "%.2f"), "", "", "")
	}
	_ = tw.Flush()
	if len(res.Managers) > 0 {
		fmt.Fprintf(w, "Events counted from %s\n", res.Managers[0].EventSource)
	}
	if res.Config.Profile {
		fmt.Fprintln(w, "-profile: the managers were profiled, which costs them CPU; compare CPU and time from a run without it")
	}
	if b := res.APIServerLimit; b != nil {
		fmt.Fprintf(w, "API server limit: a plain client (%d in flight, no rate limit) created %d pods in %.1f s = %.0f pods/s\n",
			res.Config.Workers, b.Pods, b.WallSeconds, b.PodsPerSecond)
	}
}

// printGoals writes issue 39's goals, each met or not.
func printGoals(w io.Writer, res *Result) {
	if len(res.Goals) == 0 {
		return
	}
	size := "at the default size (a custom shape is held to them)"
	if res.Config.Scale {
		size = "at -scale"
	}
	fmt.Fprintf(w, "\nissue 39's goals %s, kcm/upstream:\n", size)
	printGoalLines(w, res.Goals)
}

// printGoalLines writes a line per goal: what, the ratio, the most it may be, met or not.
func printGoalLines(w io.Writer, goals []Goal) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for _, g := range goals {
		target := fmt.Sprintf("≤ %.2f", g.Max)
		met := "met"
		if !g.Met {
			met = "NOT met"
		}
		fmt.Fprintf(tw, "%s\t%.3f\t%s\t%s\t%s\n", g.Name, g.Ratio, target, met, g.Note)
	}
	_ = tw.Flush()
}
