package procmetrics_test

import (
	"bufio"
	"context"
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"

	"github.com/kcm/kcm/internal/procmetrics"
)

// upstreamLine is one line of the generated list of upstream's families.
type upstreamLine struct {
	typ, stability string
	labels         []string
}

// readUpstreamList reads test/process/testdata/upstream-families.txt (make upstream-families:
// upstream v1.37.1's registrations): name → type, stability and label names in upstream's order.
func readUpstreamList(t *testing.T) map[string]upstreamLine {
	t.Helper()
	f, err := os.Open(filepath.Join("..", "..", "test", "process", "testdata", "upstream-families.txt"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	out := map[string]upstreamLine{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		if len(fields) != 5 {
			t.Fatalf("line %q: %d fields, want 5", line, len(fields))
		}
		l := upstreamLine{typ: fields[1], stability: fields[2]}
		if fields[3] != "-" {
			l.labels = strings.Split(fields[3], ",")
		}
		out[fields[0]] = l
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

var (
	descName   = regexp.MustCompile(`fqName: "([^"]*)"`)
	descHelp   = regexp.MustCompile(`help: "\[([A-Z]+)\] `)
	descLabels = regexp.MustCompile(`variableLabels: \{([^}]*)\}\}$`)
)

// describe reads a registered component-base metric's name, stability (the help's prefix that
// component-base adds) and label names in declaration order, and its type from its Go type.
func describe(t *testing.T, c k8smetrics.Registerable) (string, upstreamLine) {
	t.Helper()
	descs := make(chan *prometheus.Desc, 10)
	c.Describe(descs)
	close(descs)
	var all []*prometheus.Desc
	for d := range descs {
		all = append(all, d)
	}
	if len(all) != 1 {
		t.Fatalf("%T describes %d families, want 1", c, len(all))
	}
	s := all[0].String()
	name, stability, labels := descName.FindStringSubmatch(s), descHelp.FindStringSubmatch(s), descLabels.FindStringSubmatch(s)
	if name == nil || stability == nil || labels == nil {
		t.Fatalf("unexpected descriptor %s", s)
	}
	got := upstreamLine{stability: stability[1]}
	if labels[1] != "" {
		got.labels = strings.Split(labels[1], ",")
	}
	switch c.(type) {
	case *k8smetrics.Counter, *k8smetrics.CounterVec:
		got.typ = "counter"
	case *k8smetrics.Gauge, *k8smetrics.GaugeVec:
		got.typ = "gauge"
	case *k8smetrics.Histogram, *k8smetrics.HistogramVec:
		got.typ = "histogram"
	}
	return name[1], got
}

// The families declared by hand (linked.go) for upstream packages kcm cannot import are
// registered in legacyregistry, each as its line of the generated list says: type, stability
// and label names in upstream's order.
func TestLinkedFamiliesAsUpstream(t *testing.T) {
	list := readUpstreamList(t)
	want := []string{
		"aggregator_openapi_v2_regeneration_count",
		"aggregator_openapi_v2_regeneration_duration",
		"apiextensions_openapi_v2_regeneration_count",
		"apiextensions_openapi_v3_regeneration_count",
		"apiserver_certificates_registry_csr_honored_duration_total",
		"apiserver_certificates_registry_csr_requested_duration_total",
		"apiserver_conversion_webhook_duration_seconds",
		"apiserver_conversion_webhook_request_total",
		"apiserver_externaljwt_fetch_keys_data_timestamp",
		"apiserver_externaljwt_fetch_keys_request_total",
		"apiserver_externaljwt_fetch_keys_success_timestamp",
		"apiserver_externaljwt_request_duration_seconds",
		"apiserver_externaljwt_sign_request_total",
		"apiserver_kube_aggregator_x509_insecure_sha1_total",
		"apiserver_kube_aggregator_x509_missing_san_total",
	}
	var declared []string
	for _, c := range procmetrics.LinkedFamilies() {
		name, got := describe(t, c)
		declared = append(declared, name)
		line, ok := list[name]
		if !ok {
			t.Errorf("%s is not in upstream's list", name)
			continue
		}
		if got.typ != line.typ || got.stability != line.stability || !slices.Equal(got.labels, line.labels) {
			t.Errorf("%s: %s %s %v; upstream's line: %s %s %v", name, got.typ, got.stability, got.labels, line.typ, line.stability, line.labels)
		}
		// legacyregistry refuses a collector it holds already: the declared one is served.
		var already prometheus.AlreadyRegisteredError
		if err := legacyregistry.Register(c); !errors.As(err, &already) {
			t.Errorf("%s: registering it again answered %v; want it registered already", name, err)
		}
	}
	slices.Sort(declared)
	if !slices.Equal(declared, want) {
		t.Errorf("declared families %v, want %v", declared, want)
	}
}

// The CEL histograms are k8s.io/apiserver's own, linked: served at zero from the start, as
// upstream's binary serves them.
func TestCELFamiliesLinked(t *testing.T) {
	list := readUpstreamList(t)
	for _, name := range []string{"apiserver_cel_compilation_duration_seconds", "apiserver_cel_evaluation_duration_seconds"} {
		got, n := series(t, name, nil)
		line := list[name]
		if n != 1 || len(got) != 1 || got[0].GetHistogram() == nil || len(got[0].GetLabel()) != 0 || line.typ != "histogram" || line.labels != nil {
			t.Errorf("%s: %d families, series %v; want one histogram without labels (upstream's line %+v)", name, n, got, line)
		}
	}
}

// leader_election_slowpath_total is component-base's, registered by LeaderElection before any
// elector runs (as upstream's is from startup) and counted by client-go's elector when a
// renewal falls back to its slow path: here the optimistic update of the lease fails once.
func TestLeaderElectionSlowpath(t *testing.T) {
	const name = "procmetrics-slowpath"
	if err := procmetrics.LeaderElection(name); err != nil {
		t.Fatal(err)
	}
	again := legacyregistry.Register(k8smetrics.NewCounterVec(&k8smetrics.CounterOpts{
		Name:           "leader_election_slowpath_total",
		StabilityLevel: k8smetrics.ALPHA,
		Help:           "Total number of slow path exercised in renewing leader leases. 'name' is the string used to identify the lease. Please make sure to group by name.",
	}, []string{"name"}))
	var already prometheus.AlreadyRegisteredError
	if !errors.As(again, &already) {
		t.Errorf("leader_election_slowpath_total was not registered by LeaderElection: registering it again answered %v", again)
	}
	// Made, not running: upstream's elector reports itself a backup from its construction.
	if got, _ := series(t, "leader_election_master_status", map[string]string{"name": name}); len(got) != 1 || got[0].GetGauge().GetValue() != 0 {
		t.Errorf("leader_election_master_status{name=%q} = %v; want one series at 0", name, got)
	}
	cs := fake.NewClientset()
	var (
		armed   = make(chan struct{})
		renewed = make(chan struct{})
		updates int
	)
	// Once the elector leads, the first lease update (the fast path) fails; the second (the
	// slow path's, made after it counts) goes through.
	cs.PrependReactor("update", "leases", func(action k8stesting.Action) (bool, runtime.Object, error) {
		select {
		case <-armed:
		default:
			return false, nil, nil
		}
		updates++
		switch updates {
		case 1:
			return true, nil, errors.New("optimistic update refused by the test")
		case 2:
			close(renewed)
		}
		return false, nil, nil
	})
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", name,
		nil, cs.CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "me"})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	leading := make(chan struct{})
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: name,
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 100 * time.Millisecond,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) { close(leading) }, OnStoppedLeading: func() {}},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := series(t, "leader_election_slowpath_total", map[string]string{"name": name}); len(got) != 0 {
		t.Fatalf("slow path counted before any renewal: %v", got)
	}
	go le.Run(ctx)
	<-leading
	close(armed)
	<-renewed
	got, n := series(t, "leader_election_slowpath_total", map[string]string{"name": name})
	if n != 1 || len(got) != 1 || got[0].GetCounter().GetValue() != 1 || !slices.Equal(labelNames(got[0]), []string{"name"}) {
		t.Fatalf("leader_election_slowpath_total: %d families, series %v; want one labelled [name] at 1", n, got)
	}
}
