//go:build linux

package main

import (
	"context"
	"flag"
	"fmt"
	"sort"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/resourceclaim"
	"github.com/kcm/kcm/internal/testenv"
)

// claimPods is how many pods BenchmarkResourceClaimCreation creates at once (go test -args
// -claim-pods=N).
var claimPods = flag.Int("claim-pods", 200, "pods created at once by BenchmarkResourceClaimCreation, each with a claim from a template")

// BenchmarkResourceClaimCreation measures resourceclaim-controller on N pods (200,
// -claim-pods) created at once, each asking for one device through a ResourceClaimTemplate,
// on an envtest API server, the manager run as kubeadm runs it (its own ServiceAccount,
// upstream's default --kube-api-qps and burst): each iteration creates the pods in a fresh
// namespace (16 creates in flight, not rate limited) and times from the first create until
// every pod's status names its generated claim. Reported: seconds until the last, and the
// median and 90th percentile of each pod's latency (its creation until its claim is recorded
// in its status, as the benchmark's 50 ms polling sees it). manager=kcm runs kcm in the test
// process; manager=upstream, the same on a fresh API server, upstream's
// kube-controller-manager ($UPSTREAM_KCM, else bin/k8s/1.37.1's) as a process (skipped when
// it is not built).
//
//	KUBEBUILDER_ASSETS=$PWD/bin/k8s/1.37.1 go test ./test/bench/ -run '^$' -bench BenchmarkResourceClaimCreation -benchtime 1x
func BenchmarkResourceClaimCreation(b *testing.B) {
	benchManagers(b, []string{resourceclaim.ControllerName}, resourceclaim.ControllerName, benchmarkClaims)
}

// benchmarkClaims runs the iterations on a fresh API server with the manager start runs.
func benchmarkClaims(b *testing.B, start startManager) {
	env, err := testenv.StartAPIServer()
	if err != nil {
		b.Fatal(err)
	}
	defer func() { _ = env.Stop() }()
	ctx := context.Background()
	cl := unthrottledClient(b, env)
	stop, err := start(env)
	if err != nil {
		b.Fatal(err)
	}
	defer stop()

	var total float64
	var latencies []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		ns := fmt.Sprintf("claims-%d", i)
		if err := cl.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}); err != nil {
			b.Fatal(err)
		}
		if err := cl.Create(ctx, benchTemplate(ns)); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		began := time.Now()
		created, err := createClaimPods(ctx, cl, ns, *claimPods)
		if err != nil {
			b.Fatal(err)
		}
		recorded, err := waitClaimsRecorded(ctx, cl, ns, *claimPods, 10*time.Minute)
		if err != nil {
			b.Fatal(err)
		}
		took := time.Since(began)
		b.StopTimer()
		for name, at := range recorded {
			latencies = append(latencies, at.Sub(created[name]))
		}
		b.Logf("iteration %d: %d pods' claims recorded in %s", i, len(recorded), took.Round(time.Millisecond))
		total += took.Seconds()
	}
	sort.Slice(latencies, func(i, j int) bool { return latencies[i] < latencies[j] })
	b.ReportMetric(total/float64(b.N), "s/all-claims")
	if n := len(latencies); n > 0 {
		b.ReportMetric(latencies[n/2].Seconds(), "p50-s/claim")
		b.ReportMetric(latencies[n*9/10].Seconds(), "p90-s/claim")
	}
}

func benchTemplate(ns string) *resourceapi.ResourceClaimTemplate {
	return &resourceapi.ResourceClaimTemplate{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "gpu"},
		Spec: resourceapi.ResourceClaimTemplateSpec{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{
			Requests: []resourceapi.DeviceRequest{{Name: "gpu", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "gpu.example.com"}}},
		}}},
	}
}

// createClaimPods creates n pods asking for the template's claim, 16 creates in flight, and
// returns when each was created.
func createClaimPods(ctx context.Context, cl client.Client, ns string, n int) (map[string]time.Time, error) {
	var mu sync.Mutex
	created := map[string]time.Time{}
	names := make(chan int)
	errs := make(chan error, 16)
	var wg sync.WaitGroup
	for range 16 {
		wg.Go(func() {
			for i := range names {
				p := &corev1.Pod{
					ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("pod-%04d", i)},
					Spec: corev1.PodSpec{
						Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10",
							Resources: corev1.ResourceRequirements{Claims: []corev1.ResourceClaim{{Name: "gpu"}}}}},
						ResourceClaims: []corev1.PodResourceClaim{{Name: "gpu", ResourceClaimTemplateName: new("gpu")}},
					},
				}
				if err := cl.Create(ctx, p); err != nil {
					select {
					case errs <- fmt.Errorf("creating %s: %w", p.Name, err):
					default:
					}
					continue
				}
				mu.Lock()
				created[p.Name] = time.Now()
				mu.Unlock()
			}
		})
	}
	for i := range n {
		names <- i
	}
	close(names)
	wg.Wait()
	select {
	case err := <-errs:
		return nil, err
	default:
		return created, nil
	}
}

// waitClaimsRecorded polls the namespace's pods until n of them name their claim in their
// status, and returns when each was first seen doing so.
func waitClaimsRecorded(ctx context.Context, cl client.Client, ns string, n int, timeout time.Duration) (map[string]time.Time, error) {
	seen := map[string]time.Time{}
	deadline := time.Now().Add(timeout)
	for time.Now().Before(deadline) {
		pods := &corev1.PodList{}
		if err := cl.List(ctx, pods, client.InNamespace(ns)); err != nil {
			return nil, err
		}
		now := time.Now()
		for _, p := range pods.Items {
			if _, ok := seen[p.Name]; ok {
				continue
			}
			for _, s := range p.Status.ResourceClaimStatuses {
				if s.Name == "gpu" && s.ResourceClaimName != nil {
					seen[p.Name] = now
				}
			}
		}
		if len(seen) >= n {
			return seen, nil
		}
		time.Sleep(50 * time.Millisecond)
	}
	return nil, fmt.Errorf("%d of %d pods' claims recorded within %s", len(seen), n, timeout)
}
