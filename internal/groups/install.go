package groups

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/util/uuid"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kcmmanager "github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/setup"
)

// Install runs the selected controllers in the groups --controller-groups names, each led
// under its own Lease, instead of under the single Lease (which manager.New then does not
// take): the startup pass sets every controller up once (SetUp), the groups are parsed from
// the flag against the controllers that run, and the elections start with the Manager, on
// every replica, once its cache has started, with a guard on the single Lease. /healthz gets a leaderElection-<group> check per
// group, then one per controller, as without groups; leader_election_master_status gets a
// series per group Lease.
func Install(mgr manager.Manager, sctx *setup.Context, sel setup.Selection, registry []setup.Descriptor, cfg *rest.Config) error {
	opts := sctx.Options
	le := opts.LeaderElection
	if !le.Enabled {
		return errors.New("--controller-groups needs leader election (--leader-elect=true): without it one process runs every controller")
	}
	terms, started, err := SetUp(mgr, sctx, sel)
	if err != nil {
		return err
	}
	groups, err := Parse(opts.ControllerGroups, setup.Canonical(registry), started)
	if err != nil {
		return fmt.Errorf("--controller-groups: %w", err)
	}
	// Leader election renews through its own connection, as the single Lease's, so that
	// busy controllers never delay a renewal.
	leCfg := rest.CopyConfig(cfg)
	kcmmanager.SetRateLimit(leCfg, cfg.QPS, cfg.Burst)
	cs, err := kubernetes.NewForConfig(leCfg)
	if err != nil {
		return fmt.Errorf("building the controller groups' leader-election client: %w", err)
	}
	// The single Lease's identity, as controller-runtime (and upstream) make it.
	host, err := os.Hostname()
	if err != nil {
		return fmt.Errorf("the host name for the leader-election identity: %w", err)
	}
	identity := host + "_" + string(uuid.NewUUID())
	e, err := New(Config{
		Client: cs, Namespace: le.ResourceNamespace, Name: le.ResourceName, Identity: identity,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Groups: groups, Run: terms.Run,
		EventRecorder: mgr.GetEventRecorderFor(identity), //nolint:staticcheck // resourcelock records through the core/v1 API
	})
	if err != nil {
		return err
	}
	for _, name := range e.LeaseNames() {
		if err := procmetrics.LeaderElection(name); err != nil {
			return err
		}
	}
	for _, c := range e.HealthCheckers() {
		if err := mgr.AddHealthzCheck(c.Name(), c.Check); err != nil {
			return err
		}
	}
	if err := kcmmanager.AddControllerChecks(mgr, started); err != nil {
		return err
	}
	// Upstream's one Lease too, running nothing under it (guard).
	if err := procmetrics.LeaderElection(le.ResourceName); err != nil {
		return err
	}
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, le.ResourceNamespace, le.ResourceName, nil, cs.CoordinationV1(),
		resourcelock.ResourceLockConfig{Identity: identity, EventRecorder: mgr.GetEventRecorderFor(identity)}) //nolint:staticcheck // as above
	if err != nil {
		return err
	}
	g := guard{leaderelection.LeaderElectionConfig{
		Lock: lock, Name: le.ResourceName, ReleaseOnCancel: true,
		LeaseDuration: le.LeaseDuration, RenewDeadline: le.RenewDeadline, RetryPeriod: le.RetryPeriod,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	}}
	if err := mgr.Add(g); err != nil {
		return err
	}
	names := make([]string, len(groups))
	for i, g := range groups {
		names[i] = g.Name + "=" + fmt.Sprint(g.Controllers)
	}
	log.Log.WithName("controller-groups").Info("Controller groups", "identity", identity, "leases", e.LeaseNames(), "groups", names)
	return mgr.Add(&elections{Elections: e, client: cs, namespace: le.ResourceNamespace, name: le.ResourceName,
		identity: identity, retry: le.RetryPeriod})
}

// elections run on every replica, leader of nothing yet: the Runnable needs no leader
// election, and starts once the cache has. They run only while upstream's one Lease is held
// by a replica with groups (singleLeaseAllows): a kube-controller-manager leading everything
// under it, upstream's or a kcm without groups, would otherwise run every controller beside
// the groups. So kcm with groups started beside upstream stands by until upstream stops and
// a replica's guard takes the Lease, and replicas that see the Lease taken by such a manager
// end their terms (releasing their groups) and wait again.
type elections struct {
	*Elections
	client                    kubernetes.Interface
	namespace, name, identity string
	retry                     time.Duration
}

func (*elections) NeedLeaderElection() bool { return false }

func (e *elections) Start(ctx context.Context) error {
	logger := log.FromContext(ctx).WithName("controller-groups")
	if err := e.waitAllowed(ctx, true); err != nil {
		return nil //nolint:nilerr // stopped while waiting
	}
	runCtx, stop := context.WithCancel(ctx)
	defer stop()
	go func() {
		// The Lease taken by a manager without groups: end every term, then stop.
		if e.waitAllowed(runCtx, false) == nil {
			logger.Info("Upstream's Lease is held by a controller manager without controller groups: ending this replica's terms")
			stop()
		}
	}()
	err := e.Run(runCtx)
	if ctx.Err() == nil && err == nil {
		// Stopped for the other manager: the process goes on, standing by. Elections run
		// once per process, so a replica that gave way leads no group until it restarts.
		<-ctx.Done()
	}
	return err
}

// waitAllowed polls upstream's one Lease every retry period until singleLeaseAllows (start:
// true) or singleLeaseForbids (start: false); it returns ctx's error if ctx ends first. Errors
// reading the Leases are retried: they decide nothing.
func (e *elections) waitAllowed(ctx context.Context, start bool) error {
	for {
		if e.decide(ctx, start) {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(e.retry):
		}
	}
}

func (e *elections) decide(ctx context.Context, start bool) bool {
	leases := e.client.CoordinationV1().Leases(e.namespace)
	single, err := leases.Get(ctx, e.name, metav1.GetOptions{})
	if err != nil {
		// Missing: nobody holds it yet, which neither starts nor stops anything.
		return false
	}
	list, err := leases.List(ctx, metav1.ListOptions{LabelSelector: labels.Set{CandidateLabel: e.name}.String()})
	if err != nil {
		return false
	}
	if start {
		return singleLeaseAllows(single, list.Items, e.identity, time.Now())
	}
	return singleLeaseForbids(single, list.Items, e.identity, time.Now())
}

// singleLeaseAllows says whether groups may run beside upstream's one Lease as it is: held,
// not expired, by this replica or by another replica with groups (one that has a candidate
// Lease, live or not: a replica killed while its guard held the Lease is still one, and its
// candidate Lease may expire first), whose guard runs nothing. A free or expired Lease allows
// nothing yet: a guard will take it within a retry period, or a manager without groups will.
func singleLeaseAllows(single *coordinationv1.Lease, candidates []coordinationv1.Lease, identity string, now time.Time) bool {
	if !expiry(single).After(now) {
		return false
	}
	holder := *single.Spec.HolderIdentity
	if holder == identity {
		return true
	}
	for i := range candidates {
		if h := candidates[i].Spec.HolderIdentity; h != nil && *h == holder {
			return true
		}
	}
	return false
}

// singleLeaseForbids says whether groups must stop: the Lease is held, not expired, by a
// manager without groups.
func singleLeaseForbids(single *coordinationv1.Lease, candidates []coordinationv1.Lease, identity string, now time.Time) bool {
	return expiry(single).After(now) && !singleLeaseAllows(single, candidates, identity, now)
}

// guard holds upstream's one Lease, kube-system/kube-controller-manager, while the groups run,
// and runs nothing under it: an upstream kube-controller-manager (or a kcm without groups)
// started beside the replicas then stands by on it instead of running every controller a
// second time, and the hand-over in either direction stays "start the new, stop the old".
// Any replica may hold it; one that loses it stays a candidate and keeps its groups.
type guard struct {
	cfg leaderelection.LeaderElectionConfig
}

func (guard) NeedLeaderElection() bool { return false }

func (g guard) Start(ctx context.Context) error {
	for ctx.Err() == nil {
		le, err := leaderelection.NewLeaderElector(g.cfg)
		if err != nil {
			return err
		}
		le.Run(ctx)
	}
	return nil
}
