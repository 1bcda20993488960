package manager

import (
	"bytes"
	"context"
	"fmt"
	"net/http"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	apihealthz "k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/tools/record"
	controllerhealthz "k8s.io/controller-manager/pkg/healthz"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/healthz"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// maxTolerableExpiredLease is upstream's allowance past the lease duration before the
// leader-election watchdog reports the leader unhealthy
// (leaderelection.NewLeaderHealthzAdaptor(time.Second * 20) in kube-controller-manager).
const maxTolerableExpiredLease = 20 * time.Second

// healthManager is controller-runtime's Manager that serves the secure port (serving.go) and
// whose AddHealthzCheck adds to kcm's /healthz there, in upstream's format (k8s.io/apiserver's
// healthz handler behind k8s.io/controller-manager's mutable handler); controller-runtime's
// own probe server is off.
type healthManager struct {
	ctrlmanager.Manager
	health *health
	// serving is nil with --secure-port=0; pages mounts AddPages' pages.
	serving *secureServing
	pages   func(*mux.PathRecorderMux)
}

// AddHealthzCheck adds a named check to /healthz (and /healthz/<name>).
func (m *healthManager) AddHealthzCheck(name string, check healthz.Checker) error {
	return m.health.add(apihealthz.NamedCheck(name, check))
}

// AddControllerChecks adds upstream's check for each running controller, named after it:
// upstream registers controllerhealthz.NamedPingChecker for every controller it starts (no
// upstream controller implements a HealthChecker of its own), so a check reports that the
// controller was started, not that its workers make progress.
func AddControllerChecks(mgr ctrlmanager.Manager, names []string) error {
	for _, name := range names {
		if err := mgr.AddHealthzCheck(name, healthz.Ping); err != nil {
			return err
		}
	}
	return nil
}

// health holds /healthz's checks in the order upstream lists them: leaderElection first,
// then the controllers as they are set up.
type health struct {
	mu      sync.Mutex
	names   map[string]bool
	handler *controllerhealthz.MutableHealthzHandler
}

func newHealth(checks ...apihealthz.HealthChecker) *health {
	h := &health{names: map[string]bool{}, handler: controllerhealthz.NewMutableHealthzHandler()}
	for _, c := range checks {
		if err := h.add(c); err != nil {
			panic(err)
		}
	}
	return h
}

func (h *health) add(check apihealthz.HealthChecker) error {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.names[check.Name()] {
		return fmt.Errorf("health check %q already registered", check.Name())
	}
	h.names[check.Name()] = true
	h.handler.AddHealthChecker(check)
	return nil
}

// ServeHTTP serves /healthz, ?verbose and ?exclude= as upstream, and /healthz/<check> (which
// upstream's handler installs but its outer mux, routing only /healthz, never reaches).
func (h *health) ServeHTTP(w http.ResponseWriter, r *http.Request) { h.handler.ServeHTTP(w, r) }

// watchedLock is the leader-election lock seen by kcm's watchdog: controller-runtime's
// elector takes no WatchDog, so the lock records what client-go's LeaderElector observes
// through it (the same rules as its observedRecord and observedTime), and Check is upstream's
// LeaderElector.Check on those observations: it fails when this process holds the lease by
// its last observation and has not renewed it for the lease duration plus 20 s. Renewals
// that fail make the elector give up (and kcm exit) within the renew deadline; the check
// catches the elector that can no longer give up, e.g. stuck in a call.
type watchedLock struct {
	resourcelock.Interface
	name          string
	leaseDuration time.Duration
	clock         clock.PassiveClock

	mu       sync.Mutex
	holder   string
	observed time.Time
	raw      []byte
}

func newWatchedLock(inner resourcelock.Interface, name string, leaseDuration time.Duration, clk clock.PassiveClock) *watchedLock {
	return &watchedLock{Interface: inner, name: name, leaseDuration: leaseDuration, clock: clk}
}

// Get observes the record read when it differs from the last one read, as the elector does.
func (l *watchedLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil && rec != nil {
		l.mu.Lock()
		if !bytes.Equal(l.raw, raw) {
			l.holder, l.observed, l.raw = rec.HolderIdentity, l.clock.Now(), raw
		}
		l.mu.Unlock()
	}
	return rec, raw, err
}

// Create observes the record written.
func (l *watchedLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Create(ctx, rec)
	if err == nil {
		l.wrote(rec)
	}
	return err
}

// Update observes the record written: a renewal, an acquisition, or the release on shutdown.
func (l *watchedLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	err := l.Interface.Update(ctx, rec)
	if err == nil {
		l.wrote(rec)
	}
	return err
}

func (l *watchedLock) wrote(rec resourcelock.LeaderElectionRecord) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.holder, l.observed = rec.HolderIdentity, l.clock.Now()
}

// Name is upstream's check name.
func (l *watchedLock) Name() string { return "leaderElection" }

// Check is upstream's leader-election watchdog.
func (l *watchedLock) Check(*http.Request) error {
	l.mu.Lock()
	holder, observed := l.holder, l.observed
	l.mu.Unlock()
	return leaseCheck(holder == l.Identity(), l.clock.Since(observed), l.leaseDuration, l.name)
}

// leaseCheck decides the watchdog: only a leader can be unhealthy (a standby is not
// concerned), once its last renewal is older than the lease duration plus upstream's 20 s.
func leaseCheck(leading bool, sinceRenewal, leaseDuration time.Duration, name string) error {
	if leading && sinceRenewal > leaseDuration+maxTolerableExpiredLease {
		return fmt.Errorf("failed election to renew leadership on lease %s", name)
	}
	return nil
}

// lateRecorders gives the lock, built before the Manager, the Manager's event recorders once
// it exists (leader election records its "became leader" Event only after Start).
type lateRecorders struct {
	mu  sync.Mutex
	mgr ctrlmanager.Manager
}

func (p *lateRecorders) set(mgr ctrlmanager.Manager) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.mgr = mgr
}

func (p *lateRecorders) get() ctrlmanager.Manager {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.mgr
}

func (p *lateRecorders) GetEventRecorderFor(name string) record.EventRecorder {
	return &lateRecorder{provider: p, name: name}
}

func (p *lateRecorders) GetEventRecorder(name string) recorder.EventRecorder {
	if mgr := p.get(); mgr != nil {
		return mgr.GetEventRecorder(name)
	}
	return nil
}

// lateRecorder is the lock's recorder: it drops Events recorded before the Manager exists.
type lateRecorder struct {
	provider *lateRecorders
	name     string
}

func (r *lateRecorder) recorder() record.EventRecorder {
	if mgr := r.provider.get(); mgr != nil {
		return mgr.GetEventRecorderFor(r.name) //nolint:staticcheck // resourcelock records through the core/v1 API
	}
	return nil
}

func (r *lateRecorder) Event(obj runtime.Object, eventtype, reason, message string) {
	if rec := r.recorder(); rec != nil {
		rec.Event(obj, eventtype, reason, message)
	}
}

func (r *lateRecorder) Eventf(obj runtime.Object, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.recorder(); rec != nil {
		rec.Eventf(obj, eventtype, reason, messageFmt, args...)
	}
}

func (r *lateRecorder) AnnotatedEventf(obj runtime.Object, annotations map[string]string, eventtype, reason, messageFmt string, args ...any) {
	if rec := r.recorder(); rec != nil {
		rec.AnnotatedEventf(obj, annotations, eventtype, reason, messageFmt, args...)
	}
}
