//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/cluster"
)

const (
	namespace = "bench"
	image     = "registry.k8s.io/pause:3.10"
	newImage  = "registry.k8s.io/pause:3.9"
)

// Manager is a controller manager binary under test, run as Replicas processes with the
// same flags plus Args (newManager).
type Manager struct {
	Name     string
	Binary   string
	Replicas int
	Args     []string
	// RBAC is a file of objects created before the processes start, if any.
	RBAC string
}

// ManagerResult is one manager's measurements.
type ManagerResult struct {
	Name   string         `json:"name"`
	Phases []*PhaseResult `json:"phases"`
	// Quiet is the idle cluster after the create phase (-quiet), nil when not measured.
	Quiet *PhaseResult `json:"quiet,omitempty"`
	// Requests is every API request the manager made from start to stop.
	Requests float64 `json:"apiRequests"`
	// EventWrites is every Event the manager created or updated from start to stop
	// (EventSource says how they were counted); they are part of Requests.
	EventWrites float64 `json:"eventWrites"`
	EventSource string  `json:"eventSource"`
	// CPUSeconds is the manager's user+system time from start to stop.
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSBytes is the manager's VmHWM at the end.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// Replicas are each replica's totals from start to stop, for a manager of several
	// processes (whose CPUSeconds is their sum and PeakRSSBytes the largest).
	Replicas []ReplicaPhase `json:"replicas,omitempty"`
}

// PhaseResult is one phase of the scenario. A phase runs from its first request to the
// manager having settled after convergence (see settle): WallSeconds is the time to
// convergence, the manager's costs (requests, Events, CPU) cover the settling too, since
// they are work the phase caused, and the next phase starts only once this one settled.
type PhaseResult struct {
	Name        string  `json:"name"`
	WallSeconds float64 `json:"wallSeconds"`
	// SettleSeconds is how long the manager took to become idle after convergence;
	// Settled says whether it did within the limit (else the RSS is read anyway).
	SettleSeconds float64 `json:"settleSeconds"`
	Settled       bool    `json:"settled"`
	Requests      float64 `json:"apiRequests"`
	// EventWrites are the phase's Event creates and updates by the manager, counted
	// within Requests.
	EventWrites float64 `json:"eventWrites"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	// ControlPlaneCPUSeconds is the CPU time of the manager's cluster's kube-apiserver,
	// etcd, kube-scheduler and kwok over the phase, and MachineCPUSeconds the busy time of
	// every CPU of the machine (/proc/stat), the manager's, the driver's and anything else's
	// included: against the wall time times the CPUs, they tell whether convergence waited
	// for the control plane, or for a machine busy with something else.
	ControlPlaneCPUSeconds float64 `json:"controlPlaneCPUSeconds"`
	MachineCPUSeconds      float64 `json:"machineCPUSeconds"`
	// PeakRSSBytes is VmHWM once the phase settled: the peak so far, since the kernel's
	// high-water mark cannot be reset between phases.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
	// SettledRSSBytes is VmRSS once the phase settled.
	SettledRSSBytes int64 `json:"settledRSSBytes"`
	// LiveHeapBytes, HeapGoalBytes and HeapHeldBytes are the Go runtime's live heap, next GC
	// target and heap memory held from the OS once the phase settled (managerMetrics): they
	// tell what the manager holds from what the garbage collector lets it grow to.
	LiveHeapBytes int64 `json:"liveHeapBytes"`
	HeapGoalBytes int64 `json:"heapGoalBytes"`
	HeapHeldBytes int64 `json:"heapHeldBytes"`
	// ObjectViews and ObjectViewsBytes are kcm's per-object views at the phase's end, over
	// every controller (kcm_object_views, kcm_object_views_bytes; upstream has none: 0).
	ObjectViews      int64 `json:"objectViews,omitempty"`
	ObjectViewsBytes int64 `json:"objectViewsBytes,omitempty"`
	// PodsCreated counts pods that came into being during the phase; PodsPerSecond is that
	// over the phase's wall time.
	PodsCreated   int     `json:"podsCreated"`
	PodsPerSecond float64 `json:"podsPerSecond"`
	// ByClient counts the phase's requests by the manager's client (controller), with
	// -by-controller.
	ByClient map[string]int `json:"requestsByClient,omitempty"`
	// ByRequest counts them by client, verb and resource ("replicaset-controller update
	// replicasets/status"), with -by-controller.
	ByRequest map[string]int `json:"requestsByVerbAndResource,omitempty"`
	// Progress names the phase's measure of progress ("ready pods", "pods left"), and
	// Series samples it with the manager's CPU time and RSS through the phase (every tick
	// of the convergence poll and of waitIdle, every second of the quiet cluster): the chart
	// draws them.
	Progress string  `json:"progress,omitempty"`
	Series   []Point `json:"series,omitempty"`
	// Informers are the kinds the manager has a named informer for at the phase's end
	// (informerKinds; every replica's, for a manager of several).
	Informers []string `json:"informers,omitempty"`
	// Replicas are each replica's numbers, for a manager of several processes: the phase's
	// CPUSeconds and Requests are their sums, its RSS and heap the largest replica's.
	Replicas []ReplicaPhase `json:"replicas,omitempty"`
}

// Point is one instant of a phase, from the phase's start: its progress, the manager's CPU
// seconds used since the phase started and its RSS.
type Point struct {
	Seconds    float64 `json:"s"`
	Progress   int     `json:"progress"`
	CPUSeconds float64 `json:"cpuSeconds"`
	RSSBytes   int64   `json:"rssBytes"`
}

type clusterPaths struct{ dir, assets, kwok string }

// sample is the manager's counters at one instant.
type sample struct {
	at time.Time
	// metrics is what the manager's /metrics said.
	metrics managerMetrics
	// events is the API server's count of core/v1 Event writes (eventWrites).
	events float64
	usage  cluster.Usage
	// replicas are each process's metrics and usage, of which metrics and usage are the sums
	// (sumMetricsOf, sumUsage).
	replicas []replicaSample
	// controlPlane is the cluster's control plane's CPU time (Cluster.ControlPlaneCPU),
	// machine the machine's busy CPU time (cluster.MachineCPU).
	controlPlane, machine time.Duration
}

// replicaSample is one process's metrics and usage at an instant.
type replicaSample struct {
	metrics managerMetrics
	usage   cluster.Usage
}

// runOptions select what run measures beyond the phases' convergence.
type runOptions struct {
	// createOnly stops after the create phase (and the quiet cluster): the memory slope.
	createOnly bool
	// profiles, when set, is where each phase's CPU and heap profiles go.
	profiles string
}

// idleCores is the CPU use below which a manager counts as idle: both managers use about
// 0.02 cores on a quiet cluster of 20,000 pods (issue 24), the driver's polling included. A
// manager of several processes counts as idle below idleCores for each (each renews its Leases
// and holds its informers).
const idleCores = 0.05

// run measures one manager on a fresh cluster.
func run(ctx context.Context, cfg Config, m Manager, paths clusterPaths, opts runOptions) (*ManagerResult, error) {
	c, err := cluster.Start(ctx, cluster.Options{Dir: paths.dir, Assets: paths.assets, KWOK: paths.kwok, Nodes: cfg.Nodes, Audit: cfg.ByClient})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()
	apiserver, err := newAPIServerScraper(c.Config)
	if err != nil {
		return nil, err
	}

	if m.RBAC != "" {
		if err := applyGroupsRBAC(ctx, c.Client, m.RBAC); err != nil {
			return nil, err
		}
	}
	var proc procs
	var bases []string
	for i := range max(m.Replicas, 1) {
		port, err := freePort()
		if err != nil {
			return nil, err
		}
		name := m.Name
		if m.Replicas > 1 {
			name = fmt.Sprintf("%s-%d", m.Name, i)
		}
		p, err := c.StartProcess(name, m.Binary, managerArgs(cfg, c, port, m.Args...)...)
		if err != nil {
			return nil, err
		}
		proc = append(proc, p)
		bases = append(bases, fmt.Sprintf("https://127.0.0.1:%d", port))
	}
	// A manager that exits (refusing a flag, say) ends the run at once, not at a timeout.
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		for !proc.Exited() {
			select {
			case <-ctx.Done():
				return
			case <-time.After(500 * time.Millisecond):
			}
		}
		cancel(fmt.Errorf("%s", proc.State()))
	}()
	// -profile takes the first replica's profiles.
	base := bases[0]
	scrape := func(ctx context.Context) ([]managerMetrics, error) {
		var out []managerMetrics
		for _, b := range bases {
			mm, err := scrapeManager(ctx, b+"/metrics")
			if err != nil {
				return nil, fmt.Errorf("scraping %s/metrics: %w", b, err)
			}
			out = append(out, mm)
		}
		return out, nil
	}
	take := func() (sample, error) {
		if proc.Exited() {
			return sample{}, fmt.Errorf("%s", proc.State())
		}
		each, err := scrape(ctx)
		if err != nil {
			return sample{}, fmt.Errorf("%w (%s)", err, proc.State())
		}
		events, err := apiserver.eventWrites(ctx)
		if err != nil {
			return sample{}, fmt.Errorf("scraping the API server's metrics: %w", err)
		}
		u, eachUsage, err := proc.Usage()
		if err != nil {
			return sample{}, err
		}
		replicas := make([]replicaSample, len(each))
		for i := range each {
			replicas[i] = replicaSample{metrics: each[i], usage: eachUsage[i]}
		}
		controlPlane, err := c.ControlPlaneCPU()
		if err != nil {
			return sample{}, fmt.Errorf("the control plane's CPU time: %w", err)
		}
		machine, err := cluster.MachineCPU()
		if err != nil {
			return sample{}, fmt.Errorf("the machine's CPU time: %w", err)
		}
		return sample{at: time.Now(), metrics: sumMetricsOf(each), events: events, usage: u, replicas: replicas, controlPlane: controlPlane, machine: machine}, nil
	}

	if err := c.WaitNodesSchedulable(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, proc.State())
	}
	if err := context.Cause(ctx); err != nil {
		return nil, err
	}
	if err := createNamespace(ctx, c.Client, namespace, 2*time.Minute); err != nil {
		return nil, err
	}
	res := &ManagerResult{Name: m.Name, EventSource: eventsFromMetrics}
	// The phase's pods: Deployments' pods of the phase's template. A slow start of the
	// metrics endpoint would otherwise count against the first phase.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := scrape(ctx)
		return err == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("metrics of %s never answered: %w", proc.State(), err)
	}
	// Several replicas split the controller groups: the phases start once every group is
	// led and each replica leads its share.
	if len(proc) > 1 {
		if err := waitGroupsSplit(ctx, c.Client, proc, 2*time.Minute); err != nil {
			return nil, err
		}
		fmt.Printf("bench: %s: the group Leases split evenly over its %d replicas\n", m.Name, len(proc))
	}
	start, err := take()
	if err != nil {
		return nil, err
	}
	phases := []struct {
		name string
		pods int
		act  func(context.Context, client.Client, Config) error
		// done reports whether the phase converged, and its progress (measured as progress
		// names it) with why it has not.
		done     func(context.Context, client.Client, Config) (bool, int, string, error)
		progress string
	}{
		{"create", cfg.Deployments * cfg.Replicas, createDeployments, deploymentsComplete, readyPods},
		{"rolling update", cfg.Deployments * cfg.Replicas, updateImages, deploymentsComplete, readyPods},
		{"delete", 0, deleteDeployments, podsGone, "pods left"},
	}
	if opts.createOnly {
		phases = phases[:1]
	}
	var prof *profiler
	if opts.profiles != "" {
		prof = &profiler{base: base, dir: opts.profiles}
	}
	prev := start
	var windows []window
	for _, ph := range phases {
		fmt.Printf("bench: %s: %s\n", m.Name, ph.name)
		cpu := prof.startCPU(ctx, ph.name)
		if err := ph.act(ctx, c.Client, cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", ph.name, err)
		}
		var last string
		var progress int
		var series []cpuSample
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, cfg.PhaseTimeout, true, func(ctx context.Context) (bool, error) {
			if proc.Exited() {
				return false, fmt.Errorf("%s", proc.State())
			}
			ok, n, why, err := ph.done(ctx, c.Client, cfg)
			last, progress = why, n
			if err != nil {
				return false, err
			}
			u, _, err := proc.Usage()
			if err != nil {
				return false, err
			}
			series = append(series, cpuSample{at: time.Now(), cpu: u.CPU, rss: u.RSS, progress: n})
			return ok, nil
		})
		if err != nil {
			return nil, fmt.Errorf("%s did not finish within %s (%s): %w", ph.name, cfg.PhaseTimeout, last, err)
		}
		converged := time.Now()
		prof.heap(ctx, ph.name)
		cpu.finish()
		settling, settled, err := waitIdle(ctx, proc, cfg.Settle, progress)
		if err != nil {
			return nil, err
		}
		end, err := take()
		if err != nil {
			return nil, err
		}
		pr := phaseResult(ph.name, prev, end)
		pr.WallSeconds = converged.Sub(prev.at).Seconds()
		pr.SettleSeconds = end.at.Sub(converged).Seconds()
		pr.Settled = settled
		pr.PodsCreated = ph.pods
		pr.Progress = ph.progress
		pr.Series = points(prev, append(series, settling...), end)
		pr.Informers = end.metrics.informers
		pr.Replicas = replicaPhases(proc, prev, end)
		if ph.pods > 0 {
			pr.PodsPerSecond = float64(ph.pods) / pr.WallSeconds
		}
		res.Phases = append(res.Phases, pr)
		windows = append(windows, window{name: ph.name, start: prev.at, end: end.at})
		fmt.Printf("bench: %s: %s took %.1f s (settled in %.1f s), %.0f API requests (%.0f Event writes), %.1f CPU s, RSS %.0f MiB (peak so far %.0f MiB; Go heap live %.0f, GC goal %.0f, held %.0f MiB); control plane %.1f CPU s, machine %.1f CPU s\n",
			m.Name, ph.name, pr.WallSeconds, pr.SettleSeconds, pr.Requests, pr.EventWrites, pr.CPUSeconds, mib(pr.SettledRSSBytes), mib(pr.PeakRSSBytes),
			mib(pr.LiveHeapBytes), mib(pr.HeapGoalBytes), mib(pr.HeapHeldBytes), pr.ControlPlaneCPUSeconds, pr.MachineCPUSeconds)
		if pr.ObjectViews > 0 {
			fmt.Printf("bench: %s: %s: %d per-object views, %.1f MiB (%.1f%% of peak RSS)\n",
				m.Name, ph.name, pr.ObjectViews, mib(pr.ObjectViewsBytes), 100*float64(pr.ObjectViewsBytes)/float64(max(pr.PeakRSSBytes, 1)))
		}
		prev = end

		if ph.name == "create" && cfg.Quiet > 0 {
			fmt.Printf("bench: %s: quiet cluster for %s\n", m.Name, cfg.Quiet)
			cpu := prof.startCPU(ctx, quietPhase)
			quiet, err := sampleFor(ctx, proc, cfg.Quiet, progress)
			if err != nil {
				return nil, err
			}
			end, err := take()
			if err != nil {
				return nil, err
			}
			// The profiles after the measurement: the chunk in flight would stretch it.
			prof.heap(ctx, quietPhase)
			cpu.finish()
			q := phaseResult(quietPhase, prev, end)
			q.WallSeconds = end.at.Sub(prev.at).Seconds()
			q.Settled = true
			q.Progress = readyPods
			q.Series = points(prev, quiet, end)
			q.Informers = end.metrics.informers
			q.Replicas = replicaPhases(proc, prev, end)
			res.Quiet = q
			windows = append(windows, window{name: quietPhase, start: prev.at, end: end.at})
			fmt.Printf("bench: %s: quiet cluster: %.3f cores, %.0f API requests (%.0f Event writes), RSS %.0f MiB (Go heap live %.0f, GC goal %.0f, held %.0f MiB); control plane %.3f cores, machine %.3f cores\n",
				m.Name, q.CPUSeconds/q.WallSeconds, q.Requests, q.EventWrites, mib(q.SettledRSSBytes), mib(q.LiveHeapBytes), mib(q.HeapGoalBytes), mib(q.HeapHeldBytes),
				q.ControlPlaneCPUSeconds/q.WallSeconds, q.MachineCPUSeconds/q.WallSeconds)
			prev = end
		}
	}
	if cfg.ByClient {
		counts, err := requestsByClient(c.AuditLog, filepath.Base(m.Binary), windows)
		if err != nil {
			return nil, err
		}
		events := counts.events
		// The audit log names the writer of each Event: where it is kept, it counts them.
		res.EventSource = eventsFromAudit
		for _, p := range append(slices.Clone(res.Phases), res.Quiet) {
			if p == nil {
				continue
			}
			p.ByClient = counts.byClient[p.Name]
			p.ByRequest = counts.byRequest[p.Name]
			if float64(events[p.Name]) != p.EventWrites {
				fmt.Printf("bench: %s: %s: %d Event writes by the manager in the audit log, %.0f core/v1 Event writes in the API server's metrics\n",
					m.Name, p.Name, events[p.Name], p.EventWrites)
			}
			p.EventWrites = float64(events[p.Name])
		}
	}
	// Totals cover the manager's whole life, start-up and idle included.
	res.Requests = prev.metrics.requests
	res.EventWrites = prev.events
	if cfg.ByClient {
		res.EventWrites = 0
		for _, p := range append(slices.Clone(res.Phases), res.Quiet) {
			if p != nil {
				res.EventWrites += p.EventWrites
			}
		}
	}
	res.CPUSeconds = prev.usage.CPU.Seconds()
	res.PeakRSSBytes = prev.usage.PeakRSS
	res.Replicas = replicaPhases(proc, sample{replicas: make([]replicaSample, len(proc))}, prev)
	return res, nil
}

// quietPhase names the idle cluster after the create phase.
const quietPhase = "quiet"

// readyPods is the progress of the phases that roll out pods: the pods of the Deployments'
// current templates that are available (deploymentsComplete).
const readyPods = "ready pods"

// points is a phase's series, from the sample at its start: the samples taken through it,
// then the phase's last sample (whose progress is the last seen).
func points(from sample, samples []cpuSample, to sample) []Point {
	out := make([]Point, 0, len(samples)+1)
	last := 0
	add := func(at time.Time, cpu time.Duration, rss int64, progress int) {
		out = append(out, Point{Seconds: at.Sub(from.at).Seconds(), Progress: progress, CPUSeconds: (cpu - from.usage.CPU).Seconds(), RSSBytes: rss})
	}
	for _, s := range samples {
		add(s.at, s.cpu, s.rss, s.progress)
		last = s.progress
	}
	add(to.at, to.usage.CPU, to.usage.RSS, last)
	return out
}

// sampleFor samples the manager's CPU time and RSS every second for d, with an unchanging
// progress: the quiet cluster. Only /proc is read, as in waitIdle.
func sampleFor(ctx context.Context, proc procs, d time.Duration, progress int) ([]cpuSample, error) {
	var out []cpuSample
	deadline := time.Now().Add(d)
	for {
		wait := time.Until(deadline)
		if wait <= 0 {
			return out, nil
		}
		select {
		case <-time.After(min(wait, time.Second)):
		case <-ctx.Done():
			return nil, ctx.Err()
		}
		u, _, err := proc.Usage()
		if err != nil {
			return nil, err
		}
		out = append(out, cpuSample{at: time.Now(), cpu: u.CPU, rss: u.RSS, progress: progress})
	}
}

// phaseResult is the manager's costs between two samples and its memory at the second, with
// the CPU time of the control plane and of the machine between them.
func phaseResult(name string, from, to sample) *PhaseResult {
	return &PhaseResult{
		Name:             name,
		Requests:         to.metrics.requests - from.metrics.requests,
		EventWrites:      to.events - from.events,
		CPUSeconds:       (to.usage.CPU - from.usage.CPU).Seconds(),
		PeakRSSBytes:     to.usage.PeakRSS,
		SettledRSSBytes:  to.usage.RSS,
		LiveHeapBytes:    int64(to.metrics.heapLive),
		HeapGoalBytes:    int64(to.metrics.heapGoal),
		HeapHeldBytes:    int64(to.metrics.heapHeld),
		ObjectViews:      int64(to.metrics.views),
		ObjectViewsBytes: int64(to.metrics.viewsBytes),

		ControlPlaneCPUSeconds: (to.controlPlane - from.controlPlane).Seconds(),
		MachineCPUSeconds:      (to.machine - from.machine).Seconds(),
	}
}

// waitIdle waits, after a phase converged, until the manager has used less than idleCores (each process)
// over the last window (at most settleLimit), so that the settled RSS is what the manager
// keeps once its work is done: the Go runtime's background scavenger has returned some of
// the freed heap by then, but no GC is forced, as none is in production. It reports whether
// the manager became idle, and returns its samples (with the phase's progress, for the
// phase's series). Only /proc is read meanwhile: scraping the manager would be work of its own.
func waitIdle(ctx context.Context, proc procs, window time.Duration, progress int) ([]cpuSample, bool, error) {
	if window <= 0 {
		return nil, true, nil
	}
	const tick = 250 * time.Millisecond
	limit := max(settleLimit, 4*window)
	var history []cpuSample
	deadline := time.Now().Add(limit)
	for {
		if proc.Exited() {
			return nil, false, fmt.Errorf("%s", proc.State())
		}
		u, _, err := proc.Usage()
		if err != nil {
			return nil, false, err
		}
		now := time.Now()
		history = append(history, cpuSample{at: now, cpu: u.CPU, rss: u.RSS, progress: progress})
		if idle(history, window, idleCores*float64(len(proc))) {
			return history, true, nil
		}
		if now.After(deadline) {
			return history, false, nil
		}
		select {
		case <-time.After(tick):
		case <-ctx.Done():
			return nil, false, ctx.Err()
		}
	}
}

// cpuSample is a process's CPU time and RSS at an instant, with the phase's progress then.
type cpuSample struct {
	at       time.Time
	cpu      time.Duration
	rss      int64
	progress int
}

// idle reports whether, from the newest sample at least window before the last one to the
// last, the process used less than cores.
func idle(history []cpuSample, window time.Duration, cores float64) bool {
	last := history[len(history)-1]
	for i := len(history) - 2; i >= 0; i-- {
		if d := last.at.Sub(history[i].at); d >= window {
			return (last.cpu-history[i].cpu).Seconds()/d.Seconds() < cores
		}
	}
	return false
}

// settleLimit is the longest waitIdle waits for the manager to become idle.
const settleLimit = 2 * time.Minute

func mib(b int64) float64 { return float64(b) / (1 << 20) }

// managerArgs are the flags both managers get: kubeadm's static pod command line, as the
// user system:kube-controller-manager with --use-service-account-credentials (each
// controller under its own upstream role), with the same controllers, client QPS and burst,
// and /metrics and /debug/pprof (both serve it with upstream's default --profiling) on
// loopback without authorization, so the driver can read rest_client_requests_total and,
// with -profile, take profiles.
func managerArgs(cfg Config, c *cluster.Cluster, port int, extra ...string) []string {
	return c.KubeadmArgs(append([]string{
		"--controllers=" + strings.Join(cfg.Controllers, ","),
		"--kube-api-qps=" + strconv.FormatFloat(cfg.QPS, 'f', -1, 64),
		"--kube-api-burst=" + strconv.Itoa(cfg.Burst),
		"--secure-port=" + strconv.Itoa(port),
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics,/debug/pprof/*",
	}, extra...)...)
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// createNamespace creates the namespace and waits for its default ServiceAccount, without
// which the API server's admission refuses pods: both managers create it.
func createNamespace(ctx context.Context, cl client.Client, name string, timeout time.Duration) error {
	if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}); err != nil {
		return err
	}
	return wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, timeout, true, func(ctx context.Context) (bool, error) {
		err := cl.Get(ctx, client.ObjectKey{Namespace: name, Name: "default"}, &corev1.ServiceAccount{})
		return err == nil, client.IgnoreNotFound(err)
	})
}

func deploymentName(i int) string { return fmt.Sprintf("bench-%04d", i) }

func newDeployment(i, replicas int) *appsv1.Deployment {
	labels := map[string]string{"app": deploymentName(i)}
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deploymentName(i)},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(replicas)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Containers:                    []corev1.Container{{Name: "app", Image: image}},
					TerminationGracePeriodSeconds: ptr.To[int64](1),
				},
			},
		},
	}
}

func createDeployments(ctx context.Context, cl client.Client, cfg Config) error {
	return parallel(ctx, cfg.Deployments, cfg.Workers, func(ctx context.Context, i int) error {
		return cl.Create(ctx, newDeployment(i, cfg.Replicas))
	})
}

func updateImages(ctx context.Context, cl client.Client, cfg Config) error {
	patch := []byte(fmt.Sprintf(`{"spec":{"template":{"spec":{"containers":[{"name":"app","image":%q}]}}}}`, newImage))
	return parallel(ctx, cfg.Deployments, cfg.Workers, func(ctx context.Context, i int) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deploymentName(i)}}
		return cl.Patch(ctx, d, client.RawPatch("application/strategic-merge-patch+json", patch))
	})
}

// deleteDeployments deletes every Deployment as kubectl does (background propagation): the
// garbage collector deletes the ReplicaSets, and then their pods.
func deleteDeployments(ctx context.Context, cl client.Client, cfg Config) error {
	return parallel(ctx, cfg.Deployments, cfg.Workers, func(ctx context.Context, i int) error {
		d := &appsv1.Deployment{ObjectMeta: metav1.ObjectMeta{Namespace: namespace, Name: deploymentName(i)}}
		return cl.Delete(ctx, d, client.PropagationPolicy(metav1.DeletePropagationBackground))
	})
}

// deploymentsComplete reports whether every Deployment has rolled out its current template:
// observed, R replicas all updated and available, none of an older template left, Available.
// Its progress is the ready pods: those of the Deployments' current templates available.
func deploymentsComplete(ctx context.Context, cl client.Client, cfg Config) (bool, int, string, error) {
	list := &appsv1.DeploymentList{}
	if err := cl.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return false, 0, err.Error(), nil
	}
	ready := 0
	for i := range list.Items {
		ready += readyReplicas(&list.Items[i])
	}
	if len(list.Items) != cfg.Deployments {
		return false, ready, fmt.Sprintf("%d of %d Deployments exist", len(list.Items), cfg.Deployments), nil
	}
	pending := 0
	for i := range list.Items {
		if !complete(&list.Items[i], int32(cfg.Replicas)) {
			pending++
		}
	}
	return pending == 0, ready, fmt.Sprintf("%d of %d Deployments not complete", pending, cfg.Deployments), nil
}

// readyReplicas is the Deployment's available pods of its current template: none while its
// status is of an older generation (its updated replicas are then the older template's).
func readyReplicas(d *appsv1.Deployment) int {
	s := d.Status
	if s.ObservedGeneration < d.Generation {
		return 0
	}
	return int(min(s.UpdatedReplicas, s.AvailableReplicas))
}

func complete(d *appsv1.Deployment, replicas int32) bool {
	s := d.Status
	if s.ObservedGeneration < d.Generation || s.Replicas != replicas || s.UpdatedReplicas != replicas || s.AvailableReplicas != replicas {
		return false
	}
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentAvailable {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}

// podsGone reports whether the namespace has no pods left.
// Its progress is the pods left.
func podsGone(ctx context.Context, cl client.Client, cfg Config) (bool, int, string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := cl.List(ctx, list, client.InNamespace(namespace)); err != nil {
		// Unknown: the pods there were.
		return false, cfg.Deployments * cfg.Replicas, err.Error(), nil
	}
	return len(list.Items) == 0, len(list.Items), fmt.Sprintf("%d pods left", len(list.Items)), nil
}

// parallel runs fn for 0..n-1 with workers in flight and returns the first error.
func parallel(ctx context.Context, n, workers int, fn func(context.Context, int) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	next := make(chan int)
	errs := make(chan error, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				if err := fn(ctx, i); err != nil {
					errs <- err
					cancel()
					return
				}
			}
		}()
	}
feed:
	for i := range n {
		select {
		case next <- i:
		case <-ctx.Done():
			break feed
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	return ctx.Err()
}
