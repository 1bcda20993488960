package nodeipam_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller/nodeipam"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/parallel"
	"github.com/kcm/kcm/internal/testenv"
)

// BenchmarkAllocate1000Nodes measures the time from the first of 1,000 Nodes created at once
// to all of them having podCIDRs (dual-stack), with kcm's default client rate (20 QPS, burst
// 30, as upstream) and with a rate high enough not to be the limit. Run by hand:
//
//	go test ./internal/controller/nodeipam/ -run '^$' -bench Allocate1000Nodes -benchtime=1x
func BenchmarkAllocate1000Nodes(b *testing.B) {
	// Quiet: client-go logs its client-side throttling at the default rate.
	ctrllog.SetLogger(logr.Discard())
	env, err := testenv.StartAPIServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	// The nodes are created without client-side rate limiting, as by many kubelets.
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, -1
	cl, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	for _, rate := range []struct {
		name string
		args []string
	}{
		{"default-qps", nil},
		{"qps-1000", []string{"--kube-api-qps=1000", "--kube-api-burst=1000"}},
	} {
		b.Run(rate.name, func(b *testing.B) {
			for i := range b.N {
				args := append([]string{"--allocate-node-cidrs=true", "--cluster-cidr=10.0.0.0/8,fd00::/48",
					"--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64"}, rate.args...)
				if err := env.StartManager([]string{nodeipam.ControllerName}, args...); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				elapsed := allocate1000(b, cl, fmt.Sprintf("%s-%d", rate.name, i))
				b.StopTimer()
				b.ReportMetric(elapsed.Seconds(), "s-to-all-allocated")
				if err := env.StopManager(); err != nil {
					b.Fatal(err)
				}
				if err := cl.DeleteAllOf(context.Background(), &corev1.Node{}); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// allocate1000 creates 1,000 nodes 50 at a time and returns how long after the first create
// all had podCIDRs, polling the list every 100ms.
func allocate1000(b *testing.B, cl client.Client, prefix string) time.Duration {
	ctx := context.Background()
	const n = 1000
	start := time.Now()
	if err := parallel.Do(ctx, n, 50, func(ctx context.Context, i int) error {
		return cl.Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-%04d", prefix, i)}})
	}); err != nil {
		b.Fatal(err)
	}
	for {
		nodes := &corev1.NodeList{}
		if err := cl.List(ctx, nodes); err != nil {
			b.Fatal(err)
		}
		done, seen := 0, map[string]bool{}
		for _, node := range nodes.Items {
			if len(node.Spec.PodCIDRs) == 2 {
				done++
				for _, c := range node.Spec.PodCIDRs {
					if seen[c] {
						b.Fatalf("%s handed out twice", c)
					}
					seen[c] = true
				}
			}
		}
		if done == n {
			return time.Since(start)
		}
		if time.Since(start) > 10*time.Minute {
			b.Fatalf("%d of %d nodes allocated after 10 minutes", done, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}
