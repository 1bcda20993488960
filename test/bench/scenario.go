//go:build linux

package main

import (
	"context"
	"fmt"
	"net"
	"path/filepath"
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

// Manager is a controller manager binary under test.
type Manager struct {
	Name   string
	Binary string
}

// ManagerResult is one manager's measurements.
type ManagerResult struct {
	Name   string         `json:"name"`
	Phases []*PhaseResult `json:"phases"`
	// Requests is every API request the manager made from start to stop.
	Requests float64 `json:"apiRequests"`
	// CPUSeconds is the manager's user+system time from start to stop.
	CPUSeconds float64 `json:"cpuSeconds"`
	// PeakRSSBytes is the manager's VmHWM at the end.
	PeakRSSBytes int64 `json:"peakRSSBytes"`
}

// PhaseResult is one phase of the scenario.
type PhaseResult struct {
	Name        string  `json:"name"`
	WallSeconds float64 `json:"wallSeconds"`
	Requests    float64 `json:"apiRequests"`
	CPUSeconds  float64 `json:"cpuSeconds"`
	// PodsCreated counts pods that came into being during the phase; PodsPerSecond is that
	// over the phase's wall time.
	PodsCreated   int     `json:"podsCreated"`
	PodsPerSecond float64 `json:"podsPerSecond"`
	// ByClient counts the phase's requests by the manager's client (controller), with
	// -by-controller.
	ByClient map[string]int `json:"requestsByClient,omitempty"`
}

type clusterPaths struct{ dir, assets, kwok string }

// sample is the manager's counters at one instant.
type sample struct {
	at       time.Time
	requests float64
	usage    cluster.Usage
}

// run measures one manager on a fresh cluster.
func run(ctx context.Context, cfg Config, m Manager, paths clusterPaths) (*ManagerResult, error) {
	c, err := cluster.Start(ctx, cluster.Options{Dir: paths.dir, Assets: paths.assets, KWOK: paths.kwok, Nodes: cfg.Nodes, Audit: cfg.ByClient})
	if err != nil {
		return nil, err
	}
	defer func() { _ = c.Stop() }()

	port, err := freePort()
	if err != nil {
		return nil, err
	}
	proc, err := c.StartProcess(m.Name, m.Binary, managerArgs(cfg, c, port)...)
	if err != nil {
		return nil, err
	}
	metricsURL := fmt.Sprintf("https://127.0.0.1:%d/metrics", port)
	take := func() (sample, error) {
		if proc.Exited() {
			return sample{}, fmt.Errorf("%s", proc.State())
		}
		reqs, err := scrapeRequests(ctx, metricsURL)
		if err != nil {
			return sample{}, fmt.Errorf("scraping %s: %w (%s)", metricsURL, err, proc.State())
		}
		u, err := proc.Usage()
		return sample{at: time.Now(), requests: reqs, usage: u}, err
	}

	if err := c.WaitNodesSchedulable(ctx, 3*time.Minute); err != nil {
		return nil, fmt.Errorf("%w (%s)", err, proc.State())
	}
	if err := createNamespace(ctx, c.Client, namespace, 2*time.Minute); err != nil {
		return nil, err
	}
	res := &ManagerResult{Name: m.Name}
	// The phase's pods: Deployments' pods of the phase's template. A slow start of the
	// metrics endpoint would otherwise count against the first phase.
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := scrapeRequests(ctx, metricsURL)
		return err == nil, nil
	}); err != nil {
		return nil, fmt.Errorf("metrics of %s never answered: %w", proc.State(), err)
	}
	start, err := take()
	if err != nil {
		return nil, err
	}
	phases := []struct {
		name string
		pods int
		act  func(context.Context, client.Client, Config) error
		done func(context.Context, client.Client, Config) (bool, string, error)
	}{
		{"create", cfg.Deployments * cfg.Replicas, createDeployments, deploymentsComplete},
		{"rolling update", cfg.Deployments * cfg.Replicas, updateImages, deploymentsComplete},
		{"delete", 0, deleteDeployments, podsGone},
	}
	prev := start
	var windows []window
	for _, ph := range phases {
		fmt.Printf("bench: %s: %s\n", m.Name, ph.name)
		if err := ph.act(ctx, c.Client, cfg); err != nil {
			return nil, fmt.Errorf("%s: %w", ph.name, err)
		}
		var last string
		err := wait.PollUntilContextTimeout(ctx, 250*time.Millisecond, cfg.PhaseTimeout, true, func(ctx context.Context) (bool, error) {
			if proc.Exited() {
				return false, fmt.Errorf("%s", proc.State())
			}
			ok, why, err := ph.done(ctx, c.Client, cfg)
			last = why
			return ok, err
		})
		if err != nil {
			return nil, fmt.Errorf("%s did not finish within %s (%s): %w", ph.name, cfg.PhaseTimeout, last, err)
		}
		end, err := take()
		if err != nil {
			return nil, err
		}
		pr := &PhaseResult{
			Name:        ph.name,
			WallSeconds: end.at.Sub(prev.at).Seconds(),
			Requests:    end.requests - prev.requests,
			CPUSeconds:  (end.usage.CPU - prev.usage.CPU).Seconds(),
			PodsCreated: ph.pods,
		}
		if ph.pods > 0 {
			pr.PodsPerSecond = float64(ph.pods) / pr.WallSeconds
		}
		res.Phases = append(res.Phases, pr)
		windows = append(windows, window{name: ph.name, start: prev.at, end: end.at})
		fmt.Printf("bench: %s: %s took %.1f s, %.0f API requests, %.1f CPU s\n", m.Name, ph.name, pr.WallSeconds, pr.Requests, pr.CPUSeconds)
		prev = end
	}
	if cfg.ByClient {
		byPhase, err := requestsByClient(c.AuditLog, filepath.Base(m.Binary), windows)
		if err != nil {
			return nil, err
		}
		for _, p := range res.Phases {
			p.ByClient = byPhase[p.Name]
		}
	}
	// Totals cover the manager's whole life, start-up and idle included.
	res.Requests = prev.requests
	res.CPUSeconds = prev.usage.CPU.Seconds()
	res.PeakRSSBytes = prev.usage.PeakRSS
	return res, nil
}

// managerArgs are the flags both managers get: kubeadm's static pod command line, as the
// user system:kube-controller-manager with --use-service-account-credentials (each
// controller under its own upstream role), with the same controllers, client QPS and burst,
// and /metrics on loopback without authentication, so the driver can read
// rest_client_requests_total.
func managerArgs(cfg Config, c *cluster.Cluster, port int) []string {
	return c.KubeadmArgs(
		"--controllers="+strings.Join(cfg.Controllers, ","),
		"--kube-api-qps="+strconv.FormatFloat(cfg.QPS, 'f', -1, 64),
		"--kube-api-burst="+strconv.Itoa(cfg.Burst),
		"--secure-port="+strconv.Itoa(port),
		"--authorization-always-allow-paths=/healthz,/readyz,/livez,/metrics",
	)
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
func deploymentsComplete(ctx context.Context, cl client.Client, cfg Config) (bool, string, error) {
	list := &appsv1.DeploymentList{}
	if err := cl.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return false, err.Error(), nil
	}
	if len(list.Items) != cfg.Deployments {
		return false, fmt.Sprintf("%d of %d Deployments exist", len(list.Items), cfg.Deployments), nil
	}
	pending := 0
	for i := range list.Items {
		if !complete(&list.Items[i], int32(cfg.Replicas)) {
			pending++
		}
	}
	return pending == 0, fmt.Sprintf("%d of %d Deployments not complete", pending, cfg.Deployments), nil
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
func podsGone(ctx context.Context, cl client.Client, _ Config) (bool, string, error) {
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("PodList"))
	if err := cl.List(ctx, list, client.InNamespace(namespace)); err != nil {
		return false, err.Error(), nil
	}
	return len(list.Items) == 0, fmt.Sprintf("%d pods left", len(list.Items)), nil
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
