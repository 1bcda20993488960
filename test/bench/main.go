//go:build linux

// Command bench measures kcm against upstream's kube-controller-manager on the same work:
// N Deployments × R replicas created at once on KWOK nodes, rolled to a new image, then
// deleted, with the idle cluster measured for -quiet after the create phase. Each manager
// drives a fresh local cluster (test/cluster) with the same controllers and the same
// --kube-api-qps/--kube-api-burst. Per phase it measures the time to convergence, then waits
// for the manager to settle (idle for -settle) and reads its API requests (Event writes
// counted apart), CPU seconds, peak RSS so far and settled RSS, with the CPU seconds of the
// control plane (kube-apiserver, etcd, kube-scheduler, kwok) and of the whole machine over the
// phase, which tell whether convergence waited for them. -memory-slope repeats the
// create phase at several sizes for the memory per pod; -profile saves CPU and heap profiles
// per phase. It prints a table with kcm/upstream and issue 39's goals, writes JSON for
// tracking over time and, beside it, an SVG chart of each phase's progress, CPU and RSS. `make bench` runs it at the default size, `make bench-scale` at the
// large preset (-scale); `make e2e` runs a small size so it cannot rot. The manager kcm-groups
// is kcm as three replicas with --controller-groups=auto, held to issue 40's goals against the
// single kcm leader, each replica measured apart (groups.go).
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/go-logr/logr"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller"
)

// Config is one benchmark run's shape; it goes into the JSON as given.
type Config struct {
	Deployments int      `json:"deployments"`
	Replicas    int      `json:"replicas"`
	Nodes       int      `json:"nodes"`
	QPS         float64  `json:"kubeAPIQPS"`
	Burst       int      `json:"kubeAPIBurst"`
	Controllers []string `json:"controllers"`
	// Workers is how many requests the driver (and the API server baseline) has in flight.
	Workers int `json:"driverWorkers"`
	// ByClient has the API server audit every request, to count the manager's by client.
	ByClient bool `json:"byClient"`
	// PhaseTimeout bounds each phase.
	PhaseTimeout time.Duration `json:"-"`
	// Scale says the large preset (-scale) set the sizes not given explicitly.
	Scale bool `json:"scale,omitempty"`
	// Quiet is how long the idle cluster is measured after the create phase; 0: not.
	Quiet        time.Duration `json:"-"`
	QuietSeconds float64       `json:"quietSeconds"`
	// Settle is how long a manager must stay idle after a phase converged before its
	// settled RSS is read.
	Settle        time.Duration `json:"-"`
	SettleSeconds float64       `json:"settleSeconds"`
	// Profile has each phase's CPU and heap profiles taken (-profile).
	Profile bool `json:"profile,omitempty"`
}

// scalePreset is -scale: the size at which issue 24 found kcm slower and heavier.
var scalePreset = map[string]string{
	"deployments":    "2000",
	"replicas":       "10",
	"nodes":          "200",
	"kube-api-qps":   "400",
	"kube-api-burst": "800",
	"managers":       "upstream,kcm," + groupsManager,
}

// Result is the JSON written to -out.
type Result struct {
	Time     time.Time          `json:"time"`
	Machine  Machine            `json:"machine"`
	Config   Config             `json:"config"`
	Managers []*ManagerResult   `json:"managers"`
	Ratio    map[string]float64 `json:"ratioKCMToUpstream,omitempty"`
	// Goals are issue 39's goals for kcm/upstream at the run's size, each met or not.
	Goals []Goal `json:"goals,omitempty"`
	// GroupsGoals are issue 40's goals for kcm-groups over kcm (groupsGoals), each met or not.
	GroupsGoals    []Goal    `json:"groupsGoals,omitempty"`
	APIServerLimit *Baseline `json:"apiserverLimit,omitempty"`
	// MemorySlope is -memory-slope's runs, nil without it.
	MemorySlope *MemorySlope `json:"memorySlope,omitempty"`
}

// Machine says where the numbers come from.
type Machine struct {
	CPUs int    `json:"cpus"`
	Go   string `json:"go"`
}

func main() {
	var (
		cfg       Config
		managers  string
		kcmBin    string
		upBin     string
		assets    string
		kwok      string
		out       string
		logRoot   string
		baseline  bool
		ctrlFlags string
		slope     string
		rbac      string
	)
	flag.IntVar(&cfg.Deployments, "deployments", 500, "Deployments created at once")
	flag.IntVar(&cfg.Replicas, "replicas", 4, "replicas of each Deployment")
	flag.IntVar(&cfg.Nodes, "nodes", 50, "KWOK nodes")
	flag.Float64Var(&cfg.QPS, "kube-api-qps", 20, "--kube-api-qps given to both managers (upstream's default)")
	flag.IntVar(&cfg.Burst, "kube-api-burst", 30, "--kube-api-burst given to both managers (upstream's default)")
	flag.IntVar(&cfg.Workers, "workers", 16, "requests the driver keeps in flight")
	flag.BoolVar(&cfg.ByClient, "by-controller", false, "count each manager's requests by client (controller) from an API server audit log; costs the API server some CPU")
	flag.DurationVar(&cfg.PhaseTimeout, "phase-timeout", 30*time.Minute, "longest a phase may take")
	flag.StringVar(&ctrlFlags, "controllers", "", "--controllers for both managers (default: every controller kcm has built)")
	flag.StringVar(&managers, "managers", "upstream,kcm", "managers to measure, in order: upstream, kcm, and "+groupsManager+" (kcm's binary as three replicas with --controller-groups=auto, issue 40; -scale's default adds it)")
	flag.StringVar(&rbac, "groups-rbac", "config/controller-groups/role.yaml", "the Role and RoleBinding "+groupsManager+"'s Leases need, created before its replicas start")
	flag.StringVar(&kcmBin, "kcm", "bin/kcm", "kcm binary")
	flag.StringVar(&upBin, "upstream", "bin/k8s/1.37.1/kube-controller-manager", "upstream kube-controller-manager binary")
	flag.StringVar(&assets, "assets", "bin/k8s/1.37.1", "directory with kube-apiserver, etcd and kube-scheduler")
	flag.StringVar(&kwok, "kwok", "bin/kwok-v0.8.0", "kwok binary")
	flag.StringVar(&out, "out", "bin/bench/result.json", "JSON result file")
	flag.StringVar(&logRoot, "logs", "bin/bench/logs", "component logs go under <logs>/<timestamp>/<manager>/")
	flag.BoolVar(&baseline, "apiserver-baseline", true, "also measure a plain client creating the same number of pods")
	flag.BoolVar(&cfg.Scale, "scale", false, "the large preset: 2,000 Deployments × 10 replicas on 200 nodes, --kube-api-qps=400 --kube-api-burst=800, managers upstream,kcm,"+groupsManager+" (flags given explicitly override it)")
	flag.DurationVar(&cfg.Quiet, "quiet", time.Minute, "measure the manager's CPU on the idle cluster for this long after the create phase (0: not)")
	flag.DurationVar(&cfg.Settle, "settle", 5*time.Second, "after a phase converged, wait until the manager has used under 0.05 cores for this long (at most 2 minutes) before reading its settled RSS and starting the next phase")
	flag.StringVar(&slope, "memory-slope", "", "pod counts, e.g. 2000,10000,20000: for each, both managers on fresh clusters run the create phase and the quiet cluster only, for peak and settled RSS per pod (-replicas per Deployment; at least -nodes nodes, one per 100 pods)")
	flag.BoolVar(&cfg.Profile, "profile", false, "take each manager's CPU profile during each phase and its heap profile at each phase's convergence from /debug/pprof, into <logs>/<timestamp>/<manager>/<phase>.{cpu,heap}.pprof, with the top 15 functions in <phase>.top.txt (profiling costs the managers some CPU)")
	flag.Parse()
	if cfg.Scale {
		if err := applyPreset(flag.CommandLine, scalePreset); err != nil {
			fail(err)
		}
	}
	cfg.QuietSeconds, cfg.SettleSeconds = cfg.Quiet.Seconds(), cfg.Settle.Seconds()
	slopePods, err := parseSizes(slope)
	if err != nil {
		fail(fmt.Errorf("-memory-slope: %w", err))
	}
	ctrllog.SetLogger(logr.Discard()) // envtest's chatter; the components log to files

	binaries := map[string]string{"kcm": kcmBin, "upstream": upBin}
	names := strings.Split(managers, ",")
	var ms []Manager
	for _, name := range names {
		m, err := newManager(name, binaries)
		if err != nil {
			fail(err)
		}
		if m.Replicas > 1 {
			m.RBAC = rbac
		}
		ms = append(ms, m)
	}
	if ctrlFlags == "" {
		var known map[string]bool
		if slices.Contains(names, "upstream") {
			// kcm also has cloud-controller-manager's loops, which upstream's
			// kube-controller-manager refuses to be given.
			help, _ := exec.Command(upBin, "--help").CombinedOutput()
			if known = upstreamControllers(string(help)); known == nil {
				fail(fmt.Errorf("%s --help lists no controllers", upBin))
			}
		}
		var left []string
		for _, d := range controller.Registry() {
			switch {
			case !d.Built():
			case known != nil && !known[d.Name]:
				left = append(left, d.Name)
			default:
				cfg.Controllers = append(cfg.Controllers, d.Name)
			}
		}
		if len(left) > 0 {
			fmt.Printf("bench: not run, upstream's kube-controller-manager has no such controllers: %s\n", strings.Join(left, ", "))
		}
	} else {
		cfg.Controllers = strings.Split(ctrlFlags, ",")
	}
	for _, path := range []string{kcmBin, upBin, kwok, filepath.Join(assets, "kube-apiserver")} {
		if _, err := os.Stat(path); err != nil {
			fail(fmt.Errorf("%w: run `make bench`, which builds it", err))
		}
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	res := &Result{
		Time:    time.Now().UTC().Truncate(time.Second),
		Machine: Machine{CPUs: runtime.NumCPU(), Go: runtime.Version()},
		Config:  cfg,
	}
	runDir := filepath.Join(logRoot, res.Time.Format("20060102-150405"))
	fmt.Printf("bench: %d Deployments × %d replicas on %d KWOK nodes, --kube-api-qps=%g --kube-api-burst=%d; logs in %s\n",
		cfg.Deployments, cfg.Replicas, cfg.Nodes, cfg.QPS, cfg.Burst, runDir)
	for _, m := range ms {
		name := m.Name
		m.Binary, _ = filepath.Abs(m.Binary)
		fmt.Printf("bench: %s\n", name)
		dir := filepath.Join(runDir, name)
		opts := runOptions{}
		if cfg.Profile {
			opts.profiles = dir
		}
		r, err := run(ctx, cfg, m, clusterPaths{dir: dir, assets: assets, kwok: kwok}, opts)
		if err != nil {
			fail(fmt.Errorf("%s: %w", name, err))
		}
		res.Managers = append(res.Managers, r)
	}
	if baseline {
		fmt.Println("bench: API server baseline")
		b, err := measureAPIServer(ctx, cfg, clusterPaths{dir: filepath.Join(runDir, "apiserver"), assets: assets})
		if err != nil {
			fail(fmt.Errorf("API server baseline: %w", err))
		}
		res.APIServerLimit = b
	}
	if len(slopePods) > 0 {
		ms, err := measureMemorySlope(ctx, cfg, slopePods, ms, runDir, assets, kwok)
		if err != nil {
			fail(fmt.Errorf("memory slope: %w", err))
		}
		res.MemorySlope = ms
	}
	res.Ratio = ratios(res.Managers)
	res.Goals = goals(res)
	res.GroupsGoals = groupsGoals(res)
	printTable(os.Stdout, res)
	printGoals(os.Stdout, res)
	printGroups(os.Stdout, res)
	printClients(os.Stdout, res)
	printRequests(os.Stdout, res)
	printMemorySlope(os.Stdout, res.MemorySlope)
	if err := writeJSON(out, res); err != nil {
		fail(err)
	}
	fmt.Printf("bench: wrote %s\n", out)
	if hasSeries(res.Managers) {
		chart := chartPath(out)
		if err := writeChart(chart, res.Managers); err != nil {
			fail(fmt.Errorf("chart: %w", err))
		}
		fmt.Printf("bench: chart of each phase's progress, CPU and RSS over time in %s\n", chart)
	}
}

// upstreamControllers are the controllers kube-controller-manager --help lists under
// --controllers ("All controllers: a, b, ..."), nil if it lists none.
func upstreamControllers(help string) map[string]bool {
	_, rest, ok := strings.Cut(help, "All controllers:")
	if !ok {
		return nil
	}
	line, _, _ := strings.Cut(rest, "\n")
	known := map[string]bool{}
	for _, name := range strings.Split(line, ",") {
		if name = strings.TrimSpace(name); name != "" {
			known[name] = true
		}
	}
	return known
}

// applyPreset sets the preset's flags that the command line did not give.
func applyPreset(fs *flag.FlagSet, preset map[string]string) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for name, value := range preset {
		if !given[name] {
			if err := fs.Set(name, value); err != nil {
				return fmt.Errorf("-%s=%s: %w", name, value, err)
			}
		}
	}
	return nil
}

func writeJSON(path string, res *Result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(res, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "bench:", err)
	os.Exit(1)
}
