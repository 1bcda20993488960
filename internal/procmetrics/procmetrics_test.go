package procmetrics_test

import (
	"context"
	"net/http"
	"net/http/httptest"
	"slices"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	dto "github.com/prometheus/client_model/go"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/component-base/metrics/legacyregistry"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	_ "sigs.k8s.io/controller-runtime/pkg/metrics" // sets client-go's hooks too: linked, as in kcm

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/procmetrics"
	kcmversion "github.com/kcm/kcm/internal/version"
)

// gather reads legacyregistry, which kcm's /metrics serves (internal/manager/legacymetrics.go).
func gather(t *testing.T) []*dto.MetricFamily {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	return families
}

// series returns the family's series whose labels include want, and how many families of
// that name were gathered.
func series(t *testing.T, name string, want map[string]string) ([]*dto.Metric, int) {
	t.Helper()
	var out []*dto.Metric
	var n int
	for _, f := range gather(t) {
		if f.GetName() != name {
			continue
		}
		n++
	metrics:
		for _, m := range f.GetMetric() {
			for k, v := range want {
				if !slices.ContainsFunc(m.GetLabel(), func(l *dto.LabelPair) bool { return l.GetName() == k && l.GetValue() == v }) {
					continue metrics
				}
			}
			out = append(out, m)
		}
	}
	return out, n
}

func labelNames(m *dto.Metric) []string {
	var out []string
	for _, l := range m.GetLabel() {
		out = append(out, l.GetName())
	}
	return out
}

func TestUpstreamHooks(t *testing.T) {
	if err := procmetrics.UpstreamHooks(); err != nil {
		t.Fatal(err)
	}
}

// A request through client-go is counted in upstream's rest_client_* families with
// upstream's labels (controller-runtime's adapter would count it in its own registry).
func TestRESTClientMetrics(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"kind":"Namespace","apiVersion":"v1","metadata":{"name":"default"}}`))
	}))
	defer srv.Close()
	host := srv.Listener.Addr().String()
	cs := kubernetes.NewForConfigOrDie(&rest.Config{Host: srv.URL})
	if _, err := cs.CoreV1().Namespaces().Get(context.Background(), "default", metav1.GetOptions{}); err != nil {
		t.Fatal(err)
	}

	for _, c := range []struct {
		family string
		labels map[string]string
		names  []string
	}{
		{"rest_client_requests_total", map[string]string{"code": "200", "method": "GET", "host": host}, []string{"code", "host", "method"}},
		{"rest_client_request_duration_seconds", map[string]string{"verb": "GET", "host": host}, []string{"host", "verb"}},
		{"rest_client_response_size_bytes", map[string]string{"verb": "GET", "host": host}, []string{"host", "verb"}},
		{"rest_client_rate_limiter_duration_seconds", map[string]string{"verb": "GET", "host": host}, []string{"host", "verb"}},
	} {
		got, n := series(t, c.family, c.labels)
		if n != 1 || len(got) != 1 {
			t.Errorf("%s: %d families, %d series with %v; want one of each", c.family, n, len(got), c.labels)
			continue
		}
		if !slices.Equal(labelNames(got[0]), c.names) {
			t.Errorf("%s labelled %v, want %v", c.family, labelNames(got[0]), c.names)
		}
		if v := got[0].GetCounter().GetValue() + float64(got[0].GetHistogram().GetSampleCount()); v != 1 {
			t.Errorf("%s counted %v requests, want 1", c.family, v)
		}
	}
	if _, n := series(t, "rest_client_transport_create_calls_total", nil); n != 1 {
		t.Errorf("rest_client_transport_create_calls_total served %d times, want once", n)
	}
}

// kcm's queues (controller-runtime's priority queue with WorkqueueProvider) and a library's
// (client-go's queue with the global provider, component-base's, as k8s.io/apiserver's
// certificate controllers make them) report into the same workqueue_* families, labelled
// {name}, each family gathered once.
func TestWorkqueueFamilies(t *testing.T) {
	kcm := priorityqueue.New[string]("kcm_test_queue", func(o *priorityqueue.Opts[string]) {
		o.MetricProvider = procmetrics.WorkqueueProvider()
	})
	defer kcm.ShutDown()
	library := workqueue.NewTypedWithConfig(workqueue.TypedQueueConfig[string]{Name: "library_test_queue"})
	defer library.ShutDown()
	kcm.Add("a")
	library.Add("a")
	library.Add("b")

	// The priority queue records an add when its own goroutine takes the item in: wait for
	// every expected value, each on a series labelled [name] only.
	want := []struct {
		family, queue string
		value         float64
	}{
		{"workqueue_adds_total", "kcm_test_queue", 1},
		{"workqueue_adds_total", "library_test_queue", 2},
		{"workqueue_depth", "kcm_test_queue", 1},
		{"workqueue_depth", "library_test_queue", 2},
	}
	g := NewWithT(t)
	for _, w := range want {
		g.Eventually(func(g Gomega) {
			got, n := series(t, w.family, map[string]string{"name": w.queue})
			g.Expect(n).To(Equal(1), "%s families", w.family)
			g.Expect(got).To(HaveLen(1), "%s{name=%s} series", w.family, w.queue)
			g.Expect(labelNames(got[0])).To(Equal([]string{"name"}), "%s{name=%s} label names", w.family, w.queue)
			g.Expect(got[0].GetCounter().GetValue()+got[0].GetGauge().GetValue()).To(Equal(w.value), "%s{name=%s}", w.family, w.queue)
		}).WithTimeout(10 * time.Second).WithPolling(10 * time.Millisecond).Should(Succeed())
	}
}

// kubernetes_build_info carries kcm's version, with component-base's labels.
func TestBuildInfo(t *testing.T) {
	got, n := series(t, "kubernetes_build_info", nil)
	if n != 1 || len(got) != 1 {
		t.Fatalf("kubernetes_build_info: %d families, %d series", n, len(got))
	}
	want := []string{"build_date", "compiler", "git_commit", "git_tree_state", "git_version", "go_version", "major", "minor", "platform"}
	if !slices.Equal(labelNames(got[0]), want) {
		t.Errorf("labels %v, want %v", labelNames(got[0]), want)
	}
	if v, _ := series(t, "kubernetes_build_info", map[string]string{"git_version": kcmversion.Get()}); len(v) != 1 {
		t.Errorf("kubernetes_build_info does not carry kcm's version %s: %v", kcmversion.Get(), got[0].GetLabel())
	}
}

// client-go's elector (which controller-runtime's leader election runs) reports
// leader_election_master_status{name} in legacyregistry.
func TestLeaderElectionMetrics(t *testing.T) {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "procmetrics-test",
		fake.NewClientset().CoreV1(), fake.NewClientset().CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "me"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leading := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: "procmetrics-test",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { close(leading) }, OnStoppedLeading: func() {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	go le.Run(ctx)
	<-leading
	got, n := series(t, "leader_election_master_status", map[string]string{"name": "procmetrics-test"})
	if n != 1 || len(got) != 1 || got[0].GetGauge().GetValue() != 1 || !slices.Equal(labelNames(got[0]), []string{"name"}) {
		t.Fatalf("leader_election_master_status: %d families, series %v; want one labelled [name] at 1", n, got)
	}
}

// version_info, as upstream records it at startup (features.Gates.AddMetrics): upstream's
// binary answers version_info{binary="1.37.1",component="kube",emulation="1.37",min_compat="1.36"}.
func TestVersionInfo(t *testing.T) {
	gates := features.New()
	if err := gates.Set(); err != nil {
		t.Fatal(err)
	}
	gates.AddMetrics()
	want := map[string]string{"binary": "1.37.1", "component": "kube", "emulation": "1.37", "min_compat": "1.36"}
	got, n := series(t, "version_info", want)
	if n != 1 || len(got) != 1 || got[0].GetGauge().GetValue() != 1 || len(got[0].GetLabel()) != len(want) {
		t.Fatalf("version_info: %d families, series %v; want one %v at 1", n, got, want)
	}
}
