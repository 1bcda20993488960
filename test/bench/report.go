//go:build linux

package main

import (
	"bufio"
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

// scrapeRequests sums the manager's rest_client_requests_total over every code, method and host.
func scrapeRequests(ctx context.Context, url string) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := insecure.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("%s: %s", resp.Status, body)
	}
	return sumMetric(resp.Body, "rest_client_requests_total")
}

// sumMetric adds up every sample of a counter in Prometheus' text format.
func sumMetric(r io.Reader, name string) (float64, error) {
	var sum float64
	found := false
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, name)
		if !ok || (rest != "" && rest[0] != '{' && rest[0] != ' ') {
			continue
		}
		fields := strings.Fields(rest[strings.LastIndexByte(rest, '}')+1:])
		if len(fields) == 0 {
			continue
		}
		v, err := strconv.ParseFloat(fields[0], 64)
		if err != nil {
			return 0, fmt.Errorf("parsing %q: %w", line, err)
		}
		sum += v
		found = true
	}
	if err := sc.Err(); err != nil {
		return 0, err
	}
	if !found {
		return 0, fmt.Errorf("no %s in the metrics", name)
	}
	return sum, nil
}

// ratios divides kcm's numbers by upstream's, where both were measured.
func ratios(ms []*ManagerResult) map[string]float64 {
	var up, k *ManagerResult
	for _, m := range ms {
		switch m.Name {
		case "upstream":
			up = m
		case "kcm":
			k = m
		}
	}
	if up == nil || k == nil || len(up.Phases) != len(k.Phases) {
		return nil
	}
	r := map[string]float64{}
	div := func(key string, a, b float64) {
		if b != 0 {
			r[key] = a / b
		}
	}
	for i := range up.Phases {
		p, q := k.Phases[i], up.Phases[i]
		div(p.Name+" wallSeconds", p.WallSeconds, q.WallSeconds)
		div(p.Name+" apiRequests", p.Requests, q.Requests)
		div(p.Name+" cpuSeconds", p.CPUSeconds, q.CPUSeconds)
	}
	div("apiRequests", k.Requests, up.Requests)
	div("cpuSeconds", k.CPUSeconds, up.CPUSeconds)
	div("peakRSSBytes", float64(k.PeakRSSBytes), float64(up.PeakRSSBytes))
	return r
}

// printTable writes one row per measurement, one column per manager, and kcm/upstream.
func printTable(w io.Writer, res *Result) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	header := []string{""}
	for _, m := range res.Managers {
		header = append(header, m.Name)
	}
	if res.Ratio != nil {
		header = append(header, "kcm/upstream")
	}
	fmt.Fprintf(w, "\n%d Deployments × %d replicas, %d KWOK nodes, --kube-api-qps=%g --kube-api-burst=%d, %d CPUs\n",
		res.Config.Deployments, res.Config.Replicas, res.Config.Nodes, res.Config.QPS, res.Config.Burst, res.Machine.CPUs)
	fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
	row := func(label, ratioKey, format string, value func(*ManagerResult) float64) {
		cells := []string{label}
		for _, m := range res.Managers {
			cells = append(cells, fmt.Sprintf(format, value(m)))
		}
		if res.Ratio != nil {
			if r, ok := res.Ratio[ratioKey]; ok {
				cells = append(cells, fmt.Sprintf("%.2f", r))
			} else {
				cells = append(cells, "")
			}
		}
		fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
	}
	if len(res.Managers) > 0 {
		for i, p := range res.Managers[0].Phases {
			phase := func(m *ManagerResult) *PhaseResult { return m.Phases[i] }
			row(p.Name+": wall s", p.Name+" wallSeconds", "%.1f", func(m *ManagerResult) float64 { return phase(m).WallSeconds })
			if p.PodsCreated > 0 {
				row(p.Name+": pods/s", "", "%.1f", func(m *ManagerResult) float64 { return phase(m).PodsPerSecond })
			}
			row(p.Name+": API requests", p.Name+" apiRequests", "%.0f", func(m *ManagerResult) float64 { return phase(m).Requests })
			row(p.Name+": CPU s", p.Name+" cpuSeconds", "%.1f", func(m *ManagerResult) float64 { return phase(m).CPUSeconds })
		}
	}
	row("total API requests", "apiRequests", "%.0f", func(m *ManagerResult) float64 { return m.Requests })
	row("total CPU s", "cpuSeconds", "%.1f", func(m *ManagerResult) float64 { return m.CPUSeconds })
	row("peak RSS MiB", "peakRSSBytes", "%.0f", func(m *ManagerResult) float64 { return float64(m.PeakRSSBytes) / (1 << 20) })
	_ = tw.Flush()
	if b := res.APIServerLimit; b != nil {
		fmt.Fprintf(w, "API server limit: a plain client (%d in flight, no rate limit) created %d pods in %.1f s = %.0f pods/s\n",
			res.Config.Workers, b.Pods, b.WallSeconds, b.PodsPerSecond)
	}
}
