package manager

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/options"
)

func TestLeaseCheck(t *testing.T) {
	const lease = 15 * time.Second
	tests := []struct {
		name         string
		leading      bool
		sinceRenewal time.Duration
		wantErr      bool
	}{
		{"leader, just renewed", true, 0, false},
		{"leader, renewal due", true, lease, false},
		{"leader, lease expired within upstream's 20 s allowance", true, lease + 20*time.Second, false},
		{"leader, past the allowance", true, lease + 20*time.Second + time.Millisecond, true},
		{"standby, nothing observed for long", false, time.Hour, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := leaseCheck(tt.leading, tt.sinceRenewal, lease, "kube-controller-manager")
			if (err != nil) != tt.wantErr {
				t.Fatalf("leaseCheck = %v, want error %v", err, tt.wantErr)
			}
			if err != nil && err.Error() != "failed election to renew leadership on lease kube-controller-manager" {
				t.Errorf("message %q is not upstream's", err)
			}
		})
	}
}

// fakeLock is an in-memory Lease; Update blocks (ignoring its context, as a wedged call
// would) while wedged.
type fakeLock struct {
	identity string

	mu       sync.Mutex
	record   *resourcelock.LeaderElectionRecord
	failNext error
	wedged   chan struct{} // closed to release wedged Updates
	stuck    chan struct{} // closed when an Update is wedged
}

func newFakeLock(identity string) *fakeLock { return &fakeLock{identity: identity} }

func (f *fakeLock) Get(context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.record == nil {
		return nil, nil, apierrors.NewNotFound(schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}, "lease")
	}
	rec := *f.record
	raw, _ := json.Marshal(rec)
	return &rec, raw, nil
}

func (f *fakeLock) Create(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	return f.write(rec)
}

func (f *fakeLock) Update(_ context.Context, rec resourcelock.LeaderElectionRecord) error {
	f.mu.Lock()
	wedged, stuck := f.wedged, f.stuck
	f.wedged, f.stuck = nil, nil // one Update wedges
	f.mu.Unlock()
	if wedged != nil {
		close(stuck)
		<-wedged
	}
	return f.write(rec)
}

func (f *fakeLock) write(rec resourcelock.LeaderElectionRecord) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if err := f.failNext; err != nil {
		f.failNext = nil
		return err
	}
	f.record = &rec
	return nil
}

// set writes the Lease as another client would.
func (f *fakeLock) set(holder string, renew time.Time) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.record = &resourcelock.LeaderElectionRecord{HolderIdentity: holder, LeaseDurationSeconds: 15,
		AcquireTime: metav1.NewTime(renew), RenewTime: metav1.NewTime(renew)}
}

// wedge makes the next Update block until the returned release is called; stuck is closed
// once it blocks. Later Updates (the release on shutdown) pass.
func (f *fakeLock) wedge() (stuck <-chan struct{}, release func()) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.wedged, f.stuck = make(chan struct{}), make(chan struct{})
	w := f.wedged
	var once sync.Once
	return f.stuck, func() { once.Do(func() { close(w) }) }
}

func (f *fakeLock) RecordEvent(string) {}
func (f *fakeLock) Identity() string   { return f.identity }
func (f *fakeLock) Describe() string   { return "kube-system/kube-controller-manager" }
func (f *fakeLock) holder() (string, bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.record == nil {
		return "", false
	}
	return f.record.HolderIdentity, true
}

// TestWatchedLockObserves drives the watched lock through what client-go's elector does and
// checks the watchdog's verdict after each step, as upstream's observedRecord and
// observedTime would give it.
func TestWatchedLockObserves(t *testing.T) {
	const lease = 15 * time.Second
	stale := lease + 20*time.Second + time.Second
	ctx := context.Background()
	ours := func(clk *clocktesting.FakeClock) resourcelock.LeaderElectionRecord {
		return resourcelock.LeaderElectionRecord{HolderIdentity: "me", RenewTime: metav1.NewTime(clk.Now())}
	}
	type step func(t *testing.T, inner *fakeLock, l *watchedLock, clk *clocktesting.FakeClock)
	create := func(t *testing.T, _ *fakeLock, l *watchedLock, clk *clocktesting.FakeClock) {
		if err := l.Create(ctx, ours(clk)); err != nil {
			t.Fatal(err)
		}
	}
	renew := func(t *testing.T, _ *fakeLock, l *watchedLock, clk *clocktesting.FakeClock) {
		if err := l.Update(ctx, ours(clk)); err != nil {
			t.Fatal(err)
		}
	}
	failedRenew := func(t *testing.T, inner *fakeLock, l *watchedLock, clk *clocktesting.FakeClock) {
		inner.failNext = apierrors.NewConflict(schema.GroupResource{Resource: "leases"}, "lease", nil)
		if err := l.Update(ctx, ours(clk)); err == nil {
			t.Fatal("update succeeded")
		}
	}
	get := func(t *testing.T, _ *fakeLock, l *watchedLock, _ *clocktesting.FakeClock) {
		if _, _, err := l.Get(ctx); err != nil {
			t.Fatal(err)
		}
	}
	takenOver := func(_ *testing.T, inner *fakeLock, _ *watchedLock, clk *clocktesting.FakeClock) {
		inner.set("other", clk.Now())
	}
	release := func(t *testing.T, _ *fakeLock, l *watchedLock, clk *clocktesting.FakeClock) {
		if err := l.Update(ctx, resourcelock.LeaderElectionRecord{RenewTime: metav1.NewTime(clk.Now())}); err != nil {
			t.Fatal(err)
		}
	}
	wait := func(d time.Duration) step {
		return func(_ *testing.T, _ *fakeLock, _ *watchedLock, clk *clocktesting.FakeClock) { clk.Step(d) }
	}
	tests := []struct {
		name    string
		steps   []step
		wantErr bool
	}{
		{"nothing observed yet", []step{wait(time.Hour)}, false},
		{"acquired by create, renewed in time", []step{create, wait(lease)}, false},
		{"acquired by create, never renewed", []step{create, wait(stale)}, true},
		{"renewed after a while", []step{create, wait(stale), renew}, false},
		{"renewals failing past the allowance", []step{create, wait(stale / 2), failedRenew, wait(stale / 2), failedRenew}, true},
		{"reading our own unchanged record is no renewal", []step{create, get, wait(stale), get}, true},
		{"another holder seen: standing by", []step{create, wait(time.Second), takenOver, get, wait(stale)}, false},
		{"released on shutdown", []step{create, release, wait(stale)}, false},
		{"someone else's Lease never concerns us", []step{takenOver, get, wait(stale)}, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			clk := clocktesting.NewFakeClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			inner := newFakeLock("me")
			l := newWatchedLock(inner, "kube-controller-manager", lease, clk)
			for _, s := range tt.steps {
				s(t, inner, l, clk)
			}
			if err := l.Check(nil); (err != nil) != tt.wantErr {
				t.Errorf("Check = %v, want error %v", err, tt.wantErr)
			}
		})
	}
}

func TestNewWaitsForCachesAsLongAsItTakes(t *testing.T) {
	opts := options.New()
	if err := opts.Parse([]string{"--leader-elect=false", "--secure-port=0"}); err != nil {
		t.Fatal(err)
	}
	mgr, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := mgr.GetControllerOptions().CacheSyncTimeout; got != waitForever {
		t.Errorf("controllers' CacheSyncTimeout = %s, want %s (upstream waits for caches forever)", got, waitForever)
	}
}

// TestHealthz runs kcm's Manager (no API server is needed: the Lease is a fake) and reads
// /healthz on the secure port as the kubelet would: upstream's checks, in upstream's format,
// and the watchdog failing once the elector is stuck in a renewal for longer than the lease
// duration plus 20 s while the process runs on.
func TestHealthz(t *testing.T) {
	clk := clocktesting.NewFakeClock(time.Now())
	inner := newFakeLock("kcm-test")
	restore := seams(t, inner, clk)
	defer restore()

	port := freePort(t)
	opts := options.New()
	if err := opts.Parse([]string{"--bind-address=127.0.0.1", fmt.Sprintf("--secure-port=%d", port),
		"--authorization-always-allow-paths=/healthz,/healthz/*,/readyz,/livez",
		"--leader-elect-resource-name=kcm-health", "--leader-elect-lease-duration=2s",
		"--leader-elect-renew-deadline=1s", "--leader-elect-retry-period=100ms"}); err != nil {
		t.Fatal(err)
	}
	mgr, err := New(&rest.Config{Host: "https://127.0.0.1:1"}, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := AddControllerChecks(mgr, []string{"deployment-controller", "job-controller"}); err != nil {
		t.Fatal(err)
	}
	if err := AddControllerChecks(mgr, []string{"job-controller"}); err == nil {
		t.Error("a second check named job-controller was accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var stuck <-chan struct{}
	release := func() {}
	defer func() {
		release()
		cancel()
		if err := <-done; err != nil {
			t.Errorf("manager: %v", err)
		}
	}()
	select {
	case <-mgr.Elected():
	case err := <-done:
		t.Fatalf("manager stopped: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("not elected")
	}

	get := healthGetter(t, port)
	want := "200 [+]leaderElection ok\n[+]deployment-controller ok\n[+]job-controller ok\nhealthz check passed\n"
	if got := get("/healthz?verbose"); got != want {
		t.Errorf("/healthz?verbose:\n%s\nwant\n%s", got, want)
	}
	for path, want := range map[string]string{
		"/healthz":                       "200 ok",
		"/healthz/leaderElection":        "200 ok",
		"/healthz/deployment-controller": "200 ok",
		"/healthz/ping":                  "404 404 page not found\n",
		"/readyz":                        "404 404 page not found\n",
		"/livez":                         "404 404 page not found\n",
	} {
		if got := get(path); got != want {
			t.Errorf("%s: %q, want %q", path, got, want)
		}
	}

	// The elector's next renewal never returns; the process runs on, leading by its last
	// observation.
	stuck, release = inner.wedge()
	select {
	case <-stuck:
	case <-time.After(30 * time.Second):
		t.Fatal("no renewal")
	}
	clk.Step(2*time.Second + 20*time.Second)
	if got := get("/healthz/leaderElection"); got != "200 ok" {
		t.Errorf("within the lease duration plus 20 s: /healthz/leaderElection %q", got)
	}
	clk.Step(time.Millisecond)
	want = "500 [-]leaderElection failed: reason withheld\n[+]deployment-controller ok\n[+]job-controller ok\nhealthz check failed\n"
	if got := get("/healthz?verbose"); got != want {
		t.Errorf("stuck past the allowance: /healthz?verbose:\n%s\nwant\n%s", got, want)
	}
	if got := get("/healthz/leaderElection"); got != "500 internal server error: failed election to renew leadership on lease kcm-health\n" {
		t.Errorf("stuck past the allowance: /healthz/leaderElection %q", got)
	}
	if h, _ := inner.holder(); h != "kcm-test" {
		t.Errorf("Lease holder %q: the test's premise (the process still holds it) broke", h)
	}
}

// seams replaces the lock controller-runtime would build with inner and the watchdog's clock
// with clk, and returns what restores them.
func seams(t *testing.T, inner resourcelock.Interface, clk *clocktesting.FakeClock) func() {
	t.Helper()
	savedLock, savedClock := newResourceLock, watchdogClock
	newResourceLock = func(*rest.Config, recorder.Provider, leaderelection.Options) (resourcelock.Interface, error) {
		return inner, nil
	}
	watchdogClock = clk
	return func() { newResourceLock, watchdogClock = savedLock, savedClock }
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// healthGetter returns a GET of a path on the secure port, answering "<status> <body>", after
// waiting for the server to listen.
func healthGetter(t *testing.T, port int) func(path string) string {
	t.Helper()
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // self-signed
	}}
	t.Cleanup(hc.CloseIdleConnections)
	get := func(path string) (string, error) {
		resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
		if err != nil {
			return "", err
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %s", resp.StatusCode, body), err
	}
	NewWithT(t).Eventually(func() error {
		_, err := get("/healthz")
		return err
	}).WithTimeout(30*time.Second).WithPolling(50*time.Millisecond).Should(Succeed(), "the secure port answers")
	return func(path string) string {
		t.Helper()
		got, err := get(path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		return got
	}
}
