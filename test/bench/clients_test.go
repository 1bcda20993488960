//go:build linux

package main

import (
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

func TestClientName(t *testing.T) {
	for ua, want := range map[string]string{
		"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc1234/replicaset-controller":                            "replicaset-controller",
		"kcm/v0.1.0-dev (linux/amd64) kubernetes/kcm/garbage-collector":                                                     "garbage-collector",
		"kcm/v0.1.0-dev (linux/amd64) kubernetes/$Format":                                                                   noClient,
		"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc1234/shared-informers":                                 "shared-informers",
		"kube-controller-manager/v1.37.1 (linux/amd64) kubernetes/abc1234/system:serviceaccount:kube-system:job-controller": "job-controller",
		"kcm/v0.1.0-dev (linux/amd64) kubernetes/kcm/system:serviceaccount:kube-system:job-controller":                      "job-controller",
		"curl/8.0": noClient,
	} {
		if got := clientName(ua); got != want {
			t.Errorf("clientName(%q) = %q, want %q", ua, got, want)
		}
	}
}

func TestRequestsByClient(t *testing.T) {
	t0 := time.Date(2026, 11, 22, 4, 0, 0, 0, time.UTC)
	line := func(ua string, at time.Time) string {
		return `{"kind":"Event","verb":"create","userAgent":"` + ua + `","requestReceivedTimestamp":"` + at.Format(time.RFC3339Nano) + `","objectRef":{"resource":"pods"}}`
	}
	event := func(ua, verb string, at time.Time) string {
		return `{"kind":"Event","verb":"` + verb + `","userAgent":"` + ua + `","requestReceivedTimestamp":"` + at.Format(time.RFC3339Nano) + `","objectRef":{"resource":"events"}}`
	}
	rs := "kcm/v0 (linux/amd64) kubernetes/kcm/replicaset-controller"
	log := strings.Join([]string{
		line(rs, t0.Add(time.Second)),
		line(rs, t0.Add(2*time.Second)),
		line("kcm/v0 (linux/amd64) kubernetes/kcm/deployment-controller", t0.Add(11*time.Second)),
		line("kube-scheduler/v1.37.1 (linux/amd64) kubernetes/abc/scheduler", t0.Add(time.Second)),
		line(rs, t0.Add(time.Hour)),
		event(rs, "create", t0.Add(3*time.Second)),
		event(rs, "patch", t0.Add(4*time.Second)),
		event(rs, "get", t0.Add(5*time.Second)),
		event("kube-scheduler/v1.37.1 (linux/amd64) kubernetes/abc/scheduler", "create", t0.Add(time.Second)),
	}, "\n") + "\n"
	path := filepath.Join(t.TempDir(), "audit.log")
	if err := os.WriteFile(path, []byte(log), 0o644); err != nil {
		t.Fatal(err)
	}
	got, err := requestsByClient(path, "kcm", []window{
		{"create", t0, t0.Add(10 * time.Second)},
		{"update", t0.Add(10 * time.Second), t0.Add(20 * time.Second)},
	})
	if err != nil {
		t.Fatal(err)
	}
	if got.events["create"] != 2 || got.events["update"] != 0 {
		t.Errorf("Event writes = %v; want the manager's create and patch of Events in the create phase", got.events)
	}
	if got.byClient["create"]["replicaset-controller"] != 5 || got.byClient["update"]["deployment-controller"] != 1 || len(got.byClient["create"]) != 1 || len(got.byClient["update"]) != 1 {
		t.Errorf("requests by client = %v; want the manager's requests only, each in its phase", got.byClient)
	}
	want := map[string]int{
		"replicaset-controller create pods":   2,
		"replicaset-controller create events": 1,
		"replicaset-controller patch events":  1,
		"replicaset-controller get events":    1,
	}
	if !maps.Equal(got.byRequest["create"], want) {
		t.Errorf("create: requests by verb and resource = %v, want %v", got.byRequest["create"], want)
	}
}

func TestRequestKey(t *testing.T) {
	e := func(verb, resource, sub string) *auditEvent {
		ev := &auditEvent{Verb: verb}
		if resource != "" {
			ev.ObjectRef = &struct {
				Resource    string `json:"resource"`
				Subresource string `json:"subresource"`
			}{resource, sub}
		}
		return ev
	}
	for want, ev := range map[string]*auditEvent{
		"replicaset-controller update replicasets/status": e("update", "replicasets", "status"),
		"replicaset-controller create pods":               e("create", "pods", ""),
		"replicaset-controller get -":                     e("get", "", ""),
	} {
		if got := requestKey("replicaset-controller", ev); got != want {
			t.Errorf("requestKey = %q, want %q", got, want)
		}
	}
}

// With two managers, printRequests shows each phase's rows by the size of the difference,
// with the difference, the quiet cluster after create.
func TestPrintRequests(t *testing.T) {
	phase := func(name string, byRequest map[string]int) *PhaseResult {
		return &PhaseResult{Name: name, ByRequest: byRequest}
	}
	res := &Result{Managers: []*ManagerResult{
		{Name: "upstream", Phases: []*PhaseResult{
			phase("create", map[string]int{"rs update replicasets/status": 10, "rs create pods": 100}),
		}, Quiet: phase("quiet", map[string]int{"leader-election update leases": 30})},
		{Name: "kcm", Phases: []*PhaseResult{
			phase("create", map[string]int{"rs update replicasets/status": 40, "rs create pods": 100, "gc get nodes": 3}),
		}, Quiet: phase("quiet", map[string]int{"leader-election update leases": 30})},
	}}
	var b strings.Builder
	printRequests(&b, res)
	out := b.String()
	create := strings.Index(out, "create: API requests by client, verb and resource")
	quiet := strings.Index(out, "quiet: API requests by client, verb and resource")
	if create < 0 || quiet < create {
		t.Fatalf("want the create table, then the quiet one:\n%s", out)
	}
	section := strings.Fields(out[create:quiet])
	joined := strings.Join(section, " ")
	for _, want := range []string{
		"rs update replicasets/status 10 40 +30 gc get nodes 0 3 +3 rs create pods 100 100 +0",
		"upstream kcm kcm - upstream",
	} {
		if !strings.Contains(joined, want) {
			t.Errorf("create table lacks %q:\n%s", want, out)
		}
	}
}

// A rotated audit log holds only the tail of the run: counting it would undercount.
func TestRequestsByClientRefusesARotatedLog(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"audit.log", "audit-2026-11-25T06-37-28.069.log"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := requestsByClient(filepath.Join(dir, "audit.log"), "kcm", nil); err == nil || !strings.Contains(err.Error(), "rotated") {
		t.Errorf("err = %v, want the rotation named", err)
	}
}

func TestSumMetrics(t *testing.T) {
	text := `# HELP rest_client_requests_total Number of HTTP requests
# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="127.0.0.1:1",method="GET"} 7
rest_client_requests_total{code="201",host="127.0.0.1:1",method="POST"} 5
rest_client_requests_total_other 100
# TYPE go_gc_heap_live_bytes gauge
go_gc_heap_live_bytes 1.048576e+08
`
	got, err := sumMetrics(strings.NewReader(text), "rest_client_requests_total", "go_gc_heap_live_bytes")
	if err != nil || got["rest_client_requests_total"] != 12 || got["go_gc_heap_live_bytes"] != 1<<20*100 {
		t.Errorf("sumMetrics = %v, %v; want 12 requests and 100 MiB live", got, err)
	}
	if _, err := sumMetrics(strings.NewReader(text), "rest_client_requests_total", "go_gc_heap_goal_bytes"); err == nil {
		t.Errorf("a missing metric must be an error")
	}
}
