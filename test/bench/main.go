//go:build linux

// Command bench measures kcm against upstream's kube-controller-manager on the same work:
// N Deployments × R replicas created at once on KWOK nodes, rolled to a new image, then
// deleted. Each manager drives a fresh local cluster (test/cluster) with the same controllers
// and the same --kube-api-qps/--kube-api-burst. It prints a side-by-side table and writes
// JSON for tracking over time. `make bench` runs it at the default size; `make e2e` runs a
// small size so it cannot rot.
package main

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
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
}

// Result is the JSON written to -out.
type Result struct {
	Time           time.Time          `json:"time"`
	Machine        Machine            `json:"machine"`
	Config         Config             `json:"config"`
	Managers       []*ManagerResult   `json:"managers"`
	Ratio          map[string]float64 `json:"ratioKCMToUpstream,omitempty"`
	APIServerLimit *Baseline          `json:"apiserverLimit,omitempty"`
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
	flag.StringVar(&managers, "managers", "upstream,kcm", "managers to measure, in order")
	flag.StringVar(&kcmBin, "kcm", "bin/kcm", "kcm binary")
	flag.StringVar(&upBin, "upstream", "bin/k8s/1.37.1/kube-controller-manager", "upstream kube-controller-manager binary")
	flag.StringVar(&assets, "assets", "bin/k8s/1.37.1", "directory with kube-apiserver, etcd and kube-scheduler")
	flag.StringVar(&kwok, "kwok", "bin/kwok-v0.8.0", "kwok binary")
	flag.StringVar(&out, "out", "bin/bench/result.json", "JSON result file")
	flag.StringVar(&logRoot, "logs", "bin/bench/logs", "component logs go under <logs>/<timestamp>/<manager>/")
	flag.BoolVar(&baseline, "apiserver-baseline", true, "also measure a plain client creating the same number of pods")
	flag.Parse()
	ctrllog.SetLogger(logr.Discard()) // envtest's chatter; the components log to files

	if ctrlFlags == "" {
		for _, d := range controller.Registry() {
			if d.Built() {
				cfg.Controllers = append(cfg.Controllers, d.Name)
			}
		}
	} else {
		cfg.Controllers = strings.Split(ctrlFlags, ",")
	}
	binaries := map[string]string{"kcm": kcmBin, "upstream": upBin}
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
	for _, name := range strings.Split(managers, ",") {
		bin, ok := binaries[name]
		if !ok {
			fail(fmt.Errorf("unknown manager %q: kcm or upstream", name))
		}
		abs, _ := filepath.Abs(bin)
		m := Manager{Name: name, Binary: abs}
		fmt.Printf("bench: %s\n", name)
		r, err := run(ctx, cfg, m, clusterPaths{dir: filepath.Join(runDir, name), assets: assets, kwok: kwok})
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
	res.Ratio = ratios(res.Managers)
	printTable(os.Stdout, res)
	printClients(os.Stdout, res)
	if err := writeJSON(out, res); err != nil {
		fail(err)
	}
	fmt.Printf("bench: wrote %s\n", out)
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
