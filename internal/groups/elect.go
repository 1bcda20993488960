package groups

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/server/healthz"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Config is what the elections of one replica need.
type Config struct {
	// Client is leader election's own connection (coordination/v1 Leases: get, create, update,
	// list and delete in Namespace).
	Client kubernetes.Interface
	// Namespace is --leader-elect-resource-namespace.
	Namespace string
	// Name is --leader-elect-resource-name: group g's Lease is Name-g.Name, this replica's
	// candidate Lease CandidateLeaseName(Name, Identity).
	Name string
	// Identity is this replica's identity, the single Lease's holder identity (hostname_uuid).
	Identity string
	// The --leader-elect-* durations: LeaseDuration > RenewDeadline > 1.2 × RetryPeriod.
	LeaseDuration, RenewDeadline, RetryPeriod time.Duration
	// Groups are the groups, each led under its own Lease.
	Groups []Group
	// Run runs a group's controllers for one term.
	Run RunFunc
	// EventRecorder, when set, records upstream's "<identity> became leader" and "<identity>
	// stopped leading" Events on each group Lease.
	EventRecorder resourcelock.EventRecorder
}

// maxTolerableExpiredLease is upstream's tolerance of the leader-election watchdog
// (leaderelection.NewLeaderHealthzAdaptor(time.Second * 20) in kube-controller-manager).
const maxTolerableExpiredLease = 20 * time.Second

// Elections are one replica's elections: one client-go leader elector per group, and the
// candidate Lease by which the replicas count each other.
type Elections struct {
	cfg    Config
	groups []*group
	cands  *candidates

	// takes serializes the writes that take a group, so that two groups' electors do not both
	// pass the share check at once.
	takes sync.Mutex

	// stopping counts the groups that may still run a term at a graceful stop; allEnded
	// closes when none does, and only then is any Lease released, all at once.
	stopping  sync.WaitGroup
	allEnded  chan struct{}
	runCalled atomic.Bool
}

// group is one group's election state.
type group struct {
	g      Group
	lease  string
	lock   *shareLock
	health *groupHealth

	mu      sync.Mutex
	endTerm context.CancelFunc // set while a term runs
	givenUp bool               // the last term ended by balance
}

// New checks cfg and returns the Elections, not running yet: their health checks exist from
// now on, for /healthz.
func New(cfg Config) (*Elections, error) {
	if cfg.Client == nil || cfg.Namespace == "" || cfg.Name == "" || cfg.Identity == "" || cfg.Run == nil {
		return nil, errors.New("controller groups' elections need a client, a namespace, a name, an identity and a RunFunc")
	}
	if cfg.LeaseDuration <= cfg.RenewDeadline || cfg.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(cfg.RetryPeriod)) || cfg.RetryPeriod <= 0 {
		return nil, fmt.Errorf("controller groups' elections need lease duration > renew deadline > %v × retry period > 0", leaderelection.JitterFactor)
	}
	if len(cfg.Groups) == 0 {
		return nil, errors.New("no controller groups to elect")
	}
	e := &Elections{cfg: cfg, cands: newCandidates(cfg), allEnded: make(chan struct{})}
	seen := map[string]bool{}
	for _, g := range cfg.Groups {
		if seen[g.Name] {
			return nil, fmt.Errorf("controller group %q twice", g.Name)
		}
		seen[g.Name] = true
		gr := &group{g: g, lease: LeaseName(cfg.Name, g.Name)}
		gr.lock = &shareLock{
			Interface: &resourcelock.LeaseLock{
				LeaseMeta: metav1.ObjectMeta{Namespace: cfg.Namespace, Name: gr.lease},
				Client:    cfg.Client.CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{
					Identity:      cfg.Identity,
					EventRecorder: cfg.EventRecorder,
				},
				Labels: map[string]string{GroupLabel: cfg.Name},
			},
			e: e,
		}
		gr.health = &groupHealth{name: "leaderElection-" + g.Name, adaptor: leaderelection.NewLeaderHealthzAdaptor(maxTolerableExpiredLease)}
		e.groups = append(e.groups, gr)
	}
	return e, nil
}

// LeaseName is group's Lease: the leader-election resource name, "-", the group's name.
func LeaseName(name, group string) string { return name + "-" + group }

// LeaseNames are the group Leases' names, in the groups' order: one leader_election_master_status
// series each (procmetrics.LeaderElection).
func (e *Elections) LeaseNames() []string {
	out := make([]string, len(e.groups))
	for i, gr := range e.groups {
		out[i] = gr.lease
	}
	return out
}

// HealthCheckers are the groups' leader-election watchdogs, "leaderElection-<group>", each
// upstream's: it fails when this replica leads the group by its last observation and has not
// renewed the Lease for the lease duration plus 20 s.
func (e *Elections) HealthCheckers() []healthz.HealthChecker {
	out := make([]healthz.HealthChecker, len(e.groups))
	for i, gr := range e.groups {
		out[i] = gr.health
	}
	return out
}

// Leading lists the groups this replica runs a term of now, sorted.
func (e *Elections) Leading() []string {
	var out []string
	for _, gr := range e.groups {
		if gr.running() {
			out = append(out, gr.g.Name)
		}
	}
	slices.Sort(out)
	return out
}

// Run runs the elections until ctx is done. It then ends every term (each RunFunc has
// returned), only then releases every group Lease this replica holds, and last deletes its
// candidate Lease: a graceful stop hands everything over at once. It returns an error only
// when it cannot run at all.
func (e *Elections) Run(ctx context.Context) error {
	if e.runCalled.Swap(true) {
		return errors.New("controller groups' elections run once")
	}
	logger := log.FromContext(ctx).WithValues("identity", e.cfg.Identity)
	ctx = log.IntoContext(ctx, logger)
	// The candidate Lease first, and the others' counted once, so that a replica starting
	// beside others does not take every group before it sees them.
	e.cands.round(ctx)

	// Our own stop of the candidate Lease and balancing: after every group's Lease is let go.
	bg, stopBg := context.WithCancel(context.WithoutCancel(ctx))
	var bgDone sync.WaitGroup
	bgDone.Go(func() { e.cands.run(bg) })
	bgDone.Go(func() { e.balance(bg) })

	e.stopping.Add(len(e.groups))
	go func() { e.stopping.Wait(); close(e.allEnded) }()
	var groups sync.WaitGroup
	for _, gr := range e.groups {
		groups.Go(func() { e.runGroup(ctx, gr) })
	}
	groups.Wait()
	stopBg()
	bgDone.Wait()

	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RenewDeadline)
	defer cancel()
	if err := e.cands.remove(rctx); err != nil {
		logger.Error(err, "Failed to delete this replica's controller-groups candidate Lease", "lease", e.cfg.Namespace+"/"+e.cands.lease)
	}
	return nil
}

// balance lets groups go at the end of each renew period: the extra ones while this replica
// leads more than its share (a replica joined), and its donations to a replica left below
// floor(groups / live) while others lead more (Donations).
func (e *Elections) balance(ctx context.Context) {
	t := time.NewTicker(e.cfg.RenewDeadline)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		leading := e.Leading()
		share := Share(len(e.groups), e.cands.Live())
		extra := len(leading) - share
		if holders, err := e.holders(ctx); err != nil {
			log.FromContext(ctx).V(2).Info("Could not list the controller groups' Leases; balancing by the share alone", "err", err)
		} else {
			extra = max(extra, Donations(e.cfg.Identity, holders, e.cands.LiveIdentities(), len(e.groups)))
		}
		if extra <= 0 {
			continue
		}
		for _, name := range GiveUp(e.cfg.Identity, leading, len(leading)-extra) {
			for _, gr := range e.groups {
				if gr.g.Name == name && gr.end(true) {
					log.FromContext(ctx).Info("Letting a controller group go to even the split", "controllerGroup", name, "leading", len(leading), "share", share, "liveReplicas", e.cands.Live())
				}
			}
		}
	}
}

// holders counts the group Leases each replica holds, unexpired, by the Leases' labels.
func (e *Elections) holders(ctx context.Context) (map[string]int, error) {
	list, err := e.cfg.Client.CoordinationV1().Leases(e.cfg.Namespace).List(ctx, metav1.ListOptions{LabelSelector: GroupLabel + "=" + e.cfg.Name})
	if err != nil {
		return nil, err
	}
	now := time.Now()
	out := map[string]int{}
	for i := range list.Items {
		if l := &list.Items[i]; expiry(l).After(now) {
			out[*l.Spec.HolderIdentity]++
		}
	}
	return out, nil
}

// runGroup elects gr again and again until ctx is done; after a term it waits a retry period,
// so that a term that fails at once does not loop hot and another replica may take the group.
func (e *Elections) runGroup(ctx context.Context, gr *group) {
	var stopped sync.Once
	defer stopped.Do(e.stopping.Done)
	logger := log.FromContext(ctx).WithValues("controllerGroup", gr.g.Name, "lease", e.cfg.Namespace+"/"+gr.lease)
	ctx = log.IntoContext(ctx, logger)
	for ctx.Err() == nil {
		if !e.term(ctx, gr, func() { stopped.Do(e.stopping.Done) }) {
			continue
		}
		wait := e.cfg.RetryPeriod
		if gr.takeGivenUp() {
			// Given up to even the split: leave the other replicas a renew deadline to take
			// it, rather than race them for it.
			wait += e.cfg.RenewDeadline
		}
		select {
		case <-ctx.Done():
		case <-time.After(wait):
		}
	}
}

// term runs one elector of gr until it has led (one term) or ctx is done, and reports whether
// a term ran. The order at its end is the point: the term's context is cancelled and its
// RunFunc returns while the elector still renews the Lease, then the elector stops, and only
// then is the Lease released, so that no other replica takes the group while its controllers
// still run here. (client-go's ReleaseOnCancel would release before the term's context is
// even cancelled.) stopped says, at a graceful stop, that this group runs no term any more.
func (e *Elections) term(ctx context.Context, gr *group, stopped func()) bool {
	logger := log.FromContext(ctx)
	e.label(ctx, gr)

	// The elector runs until we stop it: not on ctx, which would stop its renewals while
	// the term's controllers stop.
	electCtx, stopElector := context.WithCancel(context.WithoutCancel(ctx))
	defer stopElector()
	leading := make(chan context.Context, 1)
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock:          gr.lock,
		Name:          gr.lease,
		LeaseDuration: e.cfg.LeaseDuration,
		RenewDeadline: e.cfg.RenewDeadline,
		RetryPeriod:   e.cfg.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) { leading <- leadCtx },
			OnStoppedLeading: func() {},
		},
	})
	if err != nil {
		// New checked the durations: nothing else can fail.
		logger.Error(err, "Failed to make a controller group's leader elector")
		return true
	}
	gr.health.set(le)
	defer gr.health.set(nil)
	electorDone := make(chan struct{})
	go func() {
		defer close(electorDone)
		le.Run(electCtx)
	}()

	var leadCtx context.Context
	select {
	case leadCtx = <-leading:
	case <-ctx.Done():
		stopElector()
		<-electorDone
		// It may have taken the Lease as we stopped it (OnStartedLeading runs in a goroutine
		// of its own, so the lock knows it first).
		if gr.lock.mine.Load() || len(leading) > 0 {
			stopped()
			<-e.allEnded
			e.release(ctx, gr)
			notLeading(e.cfg, gr)
		}
		return false
	}

	termCtx, endTerm := context.WithCancel(leadCtx)
	defer endTerm()
	gr.setTerm(endTerm)
	stopOnDone := context.AfterFunc(ctx, endTerm)
	logger.Info("Leading a controller group")
	err = e.cfg.Run(termCtx, gr.g)
	stopOnDone()
	gr.setTerm(nil)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		logger.Error(err, "A controller group's term failed: letting the group go")
	case leadCtx.Err() != nil:
		logger.Info("Lost a controller group's Lease: its controllers have stopped; this replica stays a candidate")
	default:
		logger.Info("Ended a controller group's term")
	}
	if ctx.Err() != nil {
		// A graceful stop: every term ends before any Lease goes.
		stopped()
		<-e.allEnded
	}
	stopElector()
	<-electorDone
	e.release(ctx, gr)
	notLeading(e.cfg, gr)
	return true
}

// notLeading sets leader_election_master_status{name=<gr's Lease>} to 0 once a term has
// ended. client-go's elector sets the series when it is made (0), when it acquires (1) and
// when a renewal fails or its ReleaseOnCancel releases (0); a term given up or ended here is
// released by this package instead, and the next elector is made only a retry period or
// more later, so until then the series would still say this replica leads. An elector made
// and never run says it, as internal/procmetrics does at startup.
func notLeading(cfg Config, gr *group) {
	_, _ = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: gr.lock, Name: gr.lease,
		LeaseDuration: cfg.LeaseDuration, RenewDeadline: cfg.RenewDeadline, RetryPeriod: cfg.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	})
}

// release empties the holder of gr's Lease if this replica still holds it, as client-go's
// release does (lease duration 1 s, so that the next candidate takes it within a retry
// period). The elector has stopped: nothing else uses the lock.
func (e *Elections) release(ctx context.Context, gr *group) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), e.cfg.RenewDeadline)
	defer cancel()
	defer gr.lock.mine.Store(false)
	for range 3 {
		rec, _, err := gr.lock.Get(ctx)
		if err != nil {
			log.FromContext(ctx).Error(err, "Failed to release a controller group's Lease: it expires instead")
			return
		}
		if rec.HolderIdentity != e.cfg.Identity {
			return
		}
		now := metav1.NewTime(time.Now())
		err = gr.lock.Update(ctx, resourcelock.LeaderElectionRecord{
			LeaderTransitions:    rec.LeaderTransitions,
			LeaseDurationSeconds: 1,
			RenewTime:            now,
			AcquireTime:          now,
		})
		if err == nil {
			log.FromContext(ctx).Info("Released a controller group's Lease")
			return
		}
		if !apierrors.IsConflict(err) {
			log.FromContext(ctx).Error(err, "Failed to release a controller group's Lease: it expires instead")
			return
		}
	}
}

// label puts the group's label and controllers on its Lease, creating it unheld if it does
// not exist: client-go's lock writes labels but no annotations. Failures are logged only; the
// election goes on.
func (e *Elections) label(ctx context.Context, gr *group) {
	leases := e.cfg.Client.CoordinationV1().Leases(e.cfg.Namespace)
	controllers := strings.Join(gr.g.Controllers, ",")
	l, err := leases.Get(ctx, gr.lease, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		l = &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{
			Namespace: e.cfg.Namespace, Name: gr.lease,
			Labels:      map[string]string{GroupLabel: e.cfg.Name},
			Annotations: map[string]string{ControllersAnnotation: controllers},
		}}
		_, err = leases.Create(ctx, l, metav1.CreateOptions{})
		if apierrors.IsAlreadyExists(err) {
			err = nil
		}
	case err != nil:
	case l.Labels[GroupLabel] != e.cfg.Name || l.Annotations[ControllersAnnotation] != controllers:
		if l.Labels == nil {
			l.Labels = map[string]string{}
		}
		if l.Annotations == nil {
			l.Annotations = map[string]string{}
		}
		l.Labels[GroupLabel] = e.cfg.Name
		l.Annotations[ControllersAnnotation] = controllers
		_, err = leases.Update(ctx, l, metav1.UpdateOptions{})
	}
	if err != nil && ctx.Err() == nil {
		log.FromContext(ctx).V(2).Info("Could not label a controller group's Lease; electing anyway", "err", err)
	}
}

func (gr *group) setTerm(end context.CancelFunc) {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	gr.endTerm = end
}

func (gr *group) running() bool {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	return gr.endTerm != nil
}

// end ends the running term, if any, given up to balance the split or not; it reports
// whether one was running.
func (gr *group) end(givenUp bool) bool {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	if gr.endTerm == nil {
		return false
	}
	gr.endTerm()
	gr.endTerm = nil
	gr.givenUp = givenUp
	return true
}

// takeGivenUp reports whether the last term was given up, and forgets it.
func (gr *group) takeGivenUp() bool {
	gr.mu.Lock()
	defer gr.mu.Unlock()
	g := gr.givenUp
	gr.givenUp = false
	return g
}

// leading counts the groups whose Lease this replica holds by its last read or write.
func (e *Elections) leading() int {
	n := 0
	for _, gr := range e.groups {
		if gr.lock.mine.Load() {
			n++
		}
	}
	return n
}

// errAtShare refuses a take: this replica leads its share already.
var errAtShare = errors.New("this replica leads its share of controller groups already")

// shareLock is a group's Lease lock as its elector sees it: a write that would take the group
// (this replica is not its holder by the last record read or written) is refused while the
// replica leads its share; renewals and releases pass.
type shareLock struct {
	resourcelock.Interface
	e *Elections
	// mine: the last record read or written names this replica.
	mine atomic.Bool
}

func (l *shareLock) Get(ctx context.Context) (*resourcelock.LeaderElectionRecord, []byte, error) {
	rec, raw, err := l.Interface.Get(ctx)
	if err == nil {
		l.mine.Store(rec.HolderIdentity == l.Identity())
	}
	return rec, raw, err
}

func (l *shareLock) Create(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Create)
}

func (l *shareLock) Update(ctx context.Context, rec resourcelock.LeaderElectionRecord) error {
	return l.write(ctx, rec, l.Interface.Update)
}

func (l *shareLock) write(ctx context.Context, rec resourcelock.LeaderElectionRecord, write func(context.Context, resourcelock.LeaderElectionRecord) error) error {
	taking := rec.HolderIdentity == l.Identity()
	if !taking || l.mine.Load() {
		// A release, or a renewal.
		err := write(ctx, rec)
		if err == nil {
			l.mine.Store(taking)
		}
		return err
	}
	l.e.takes.Lock()
	defer l.e.takes.Unlock()
	if !MayTake(l.e.leading(), Share(len(l.e.groups), l.e.cands.Live())) {
		return errAtShare
	}
	err := write(ctx, rec)
	if err == nil {
		l.mine.Store(true)
	}
	return err
}

// groupHealth is a group's watchdog: client-go's HealthzAdaptor under the group's check name,
// following the group's current elector.
type groupHealth struct {
	name    string
	adaptor *leaderelection.HealthzAdaptor
}

func (h *groupHealth) Name() string                  { return h.name }
func (h *groupHealth) Check(req *http.Request) error { return h.adaptor.Check(req) }
func (h *groupHealth) set(le *leaderelection.LeaderElector) {
	h.adaptor.SetLeaderElection(le)
}
