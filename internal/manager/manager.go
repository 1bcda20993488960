// Package manager builds kcm's one controller-runtime Manager from the command line: the
// shared cache, leader election on a Lease, and upstream's secure port (health, metrics and
// debug pages).
package manager

import (
	"context"
	"fmt"
	"math"
	"time"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/server/mux"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/leaderelection"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/track"
)

// What kcm's own identity (kubeadm's user system:kube-controller-manager, or the ServiceAccount
// config/ binds to that user's built-in ClusterRole) does; each controller's markers, in its
// package, name what it does as its own ServiceAccount. internal/controller's RBAC test holds
// these to the built-in role system:kube-controller-manager.
//
// The shared cache lists and watches whatever the controllers read.
// +kubebuilder:rbac:groups=*,resources=*,verbs=list;watch
// Leader election on upstream's Lease, kube-system/kube-controller-manager: the built-in role
// grants get and update on that Lease only.
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=create
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;update,resourceNames=kube-controller-manager
// Events of every controller.
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;update
// Delegated authentication and authorization of the secure port; at startup it reads the API
// server's client CA and request-header settings from kube-system's
// extension-apiserver-authentication ConfigMap (and watches it).
// +kubebuilder:rbac:groups=authentication.k8s.io,resources=tokenreviews,verbs=create
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups="",namespace=kube-system,resources=configmaps,verbs=get,resourceNames=extension-apiserver-authentication
// With --use-service-account-credentials, k8s.io/controller-manager's client builder gets (and
// creates if missing) each controller's ServiceAccount in kube-system and requests its tokens;
// before creating one it gets the namespace kube-system (and would create it were it missing,
// which the API server never lets happen).
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;create
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=serviceaccounts/token,verbs=create

// Scheme knows every built-in API type.
func Scheme() *runtime.Scheme {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		panic(err)
	}
	return s
}

// RESTConfig adapts the API server's configuration to the command line: content type,
// rate limits of the shared informers' client, and kcm's User-Agent.
func RESTConfig(base *rest.Config, opts *options.Options) *rest.Config {
	cfg := rest.CopyConfig(base)
	cfg.ContentType = opts.KubeAPIContentType
	cfg.QPS = opts.KubeAPIQPS
	cfg.Burst = int(opts.KubeAPIBurst)
	cfg.RateLimiter = nil
	// As upstream: no gzip. Compressing every list and watch event costs the API server CPU
	// and kcm as much again to inflate (5.7% of kcm's CPU creating 10,000 pods, issue 24),
	// for a connection that is local or on the control plane's network.
	cfg.DisableCompression = true
	// Upstream silences the API server's warnings (e.g. "v1 Endpoints is deprecated" on every
	// request of the endpoints controller): they are meant for people, not controllers.
	cfg.WarningHandler, cfg.WarningHandlerWithContext = nil, rest.NoWarnings{}
	if cfg.UserAgent == "" {
		cfg.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	return cfg
}

// SetRateLimit gives cfg a token bucket of its own at qps and burst, which every client built
// from cfg shares. The values mean what they mean to upstream's kube-controller-manager, which
// hands --kube-api-qps and --kube-api-burst to client-go as they are: 0 is client-go's default
// (5 QPS, a burst of 10), and a negative QPS means no limit at all.
func SetRateLimit(cfg *rest.Config, qps float32, burst int) {
	if qps == 0 {
		qps = rest.DefaultQPS
	}
	if burst == 0 {
		burst = rest.DefaultBurst
	}
	cfg.QPS, cfg.Burst, cfg.RateLimiter = qps, burst, nil
	if qps > 0 {
		// Timed per sync for the per-object views (track.RateLimiter); the bucket is as is.
		cfg.RateLimiter = track.RateLimiter(flowcontrol.NewTokenBucketRateLimiter(qps, burst))
	}
}

// New returns the Manager. cfg should come from RESTConfig; restrictions limit what the
// shared cache holds of some kinds (setup.CacheRestrictions of the registry); mutate adjusts
// the options last (tests use it, e.g. to skip controller-name validation).
//
// The Manager serves upstream's secure port (unless --secure-port=0) from its Start on, before
// its caches or controllers start, leader or not. Its AddHealthzCheck adds to /healthz there,
// which lists, as upstream's, the leader-election watchdog (with --leader-elect) and then one
// check per controller (AddControllerChecks).
func New(cfg *rest.Config, opts *options.Options, restrictions map[client.Object]cache.ByObject, mutate ...func(*ctrlmanager.Options)) (ctrlmanager.Manager, error) {
	le := opts.LeaderElection
	// Leader election renews through its own connection so that busy controllers never
	// delay a renewal.
	leCfg := rest.CopyConfig(cfg)
	SetRateLimit(leCfg, cfg.QPS, cfg.Burst)

	serving, err := newSecureServing(opts)
	if err != nil {
		return nil, err
	}
	health := newHealth()
	recorders := &lateRecorders{}
	var lock resourcelock.Interface
	// With --controller-groups, each group has a Lease of its own (internal/groups) and the
	// Manager takes none: every Runnable it starts itself runs on every replica.
	single := le.Enabled && opts.ControllerGroups == ""
	if single {
		// leader_election_* from now on, as upstream's process has them once its elector is
		// made at startup.
		if err := procmetrics.LeaderElection(le.ResourceName); err != nil {
			return nil, err
		}
		// controller-runtime's own lock, observed by the watchdog.
		inner, err := newResourceLock(leCfg, recorders, leaderelection.Options{
			LeaderElection:             true,
			LeaderElectionResourceLock: le.ResourceLock,
			LeaderElectionID:           le.ResourceName,
			LeaderElectionNamespace:    le.ResourceNamespace,
			RenewDeadline:              le.RenewDeadline,
		})
		if err != nil {
			return nil, fmt.Errorf("creating leader election lock: %w", err)
		}
		watched := newWatchedLock(inner, le.ResourceName, le.LeaseDuration, watchdogClock)
		if err := health.add(watched); err != nil {
			return nil, err
		}
		lock = watched
	}
	mo := ctrlmanager.Options{
		Scheme: Scheme(),
		Cache: cache.Options{
			DefaultTransform: cache.TransformStripManagedFields(),
			ByObject:         restrictions,
		},
		// As upstream's WaitForNamedCacheSync, controllers wait for their caches as long as it
		// takes: controller-runtime's default (2 minutes) would fail the controller's Start,
		// and so the whole process, on a cluster whose first list is slower, and every
		// restart would list again from the start.
		Controller:                          config.Controller{CacheSyncTimeout: cacheSyncTimeout()},
		LeaderElection:                      single,
		LeaderElectionResourceLockInterface: lock,
		LeaderElectionResourceLock:          le.ResourceLock,
		LeaderElectionID:                    le.ResourceName,
		LeaderElectionNamespace:             le.ResourceNamespace,
		LeaderElectionConfig:                leCfg,
		LeaderElectionReleaseOnCancel:       true,
		LeaseDuration:                       &le.LeaseDuration,
		RenewDeadline:                       &le.RenewDeadline,
		RetryPeriod:                         &le.RetryPeriod,
		// The secure port serves health and metrics; controller-runtime's servers stay off.
		HealthProbeBindAddress: "0",
		Metrics:                metricsserver.Options{BindAddress: "0"},
	}
	informers := informerNames{procmetrics.NewInformerNames(mo.Scheme)}
	mo.Cache.NewInformer = informers.NewInformer
	for _, m := range mutate {
		m(&mo)
	}
	// Every controller's logger derives from the manager's: track's sink learns from it which
	// controller and key a sync's context belongs to, and records the sync's error.
	if mo.Logger.GetSink() == nil {
		mo.Logger = ctrllog.Log
	}
	mo.Logger = track.Logger(mo.Logger)
	mgr, err := ctrlmanager.New(cfg, mo)
	if err != nil {
		informers.Release()
		return nil, fmt.Errorf("creating manager: %w", err)
	}
	if err := mgr.Add(informers); err != nil {
		return nil, err
	}
	recorders.set(mgr)
	return &healthManager{Manager: mgr, health: health, serving: serving}, nil
}

// Start serves the secure port, then runs the Manager; serving stops once the Manager has
// stopped. The port is served from here rather than by a Runnable of the Manager: a Runnable
// that needs no leader election starts only once the caches have synced, and upstream serves
// /healthz and /metrics while its informers make their first lists.
func (m *healthManager) Start(ctx context.Context) error {
	if m.serving == nil {
		return m.Manager.Start(ctx)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stopped, err := m.serving.serve(ctx, m.serving.handler(m.health, m.pages))
	if err != nil {
		return err
	}
	err = m.Manager.Start(ctx)
	cancel()
	<-stopped
	return err
}

// AddPages mounts more pages on the secure port, behind its authentication and authorization
// (internal/debugz's /configz content, /flagz, /statusz, /metrics/slis); install runs once,
// when the Manager starts, after the base handler's pages are mounted. Without a secure port
// it does nothing.
//
// A Manager wrapping the process's (internal/groups' startup pass) reaches it through its
// Unwrap; one whose Unwrap returns nil mounts nothing.
func AddPages(mgr ctrlmanager.Manager, install func(*mux.PathRecorderMux)) {
	if w, ok := mgr.(interface{ Unwrap() ctrlmanager.Manager }); ok {
		if mgr = w.Unwrap(); mgr == nil {
			return
		}
	}
	if m, ok := mgr.(*healthManager); ok {
		prev := m.pages
		m.pages = func(mx *mux.PathRecorderMux) {
			if prev != nil {
				prev(mx)
			}
			install(mx)
		}
	}
}

// Test seams: the lock controller-runtime would build, and the watchdog's clock.
var (
	newResourceLock                    = leaderelection.NewResourceLock
	watchdogClock   clock.PassiveClock = clock.RealClock{}
)

// waitForever is the longest CacheSyncTimeout controller-runtime accepts (it treats 0 as its
// default of 2 minutes and a negative one as already expired).
const waitForever = time.Duration(math.MaxInt64)

// cacheSyncTimeoutForTests, set only by -ldflags -X in test/process, shortens the wait to show
// that the timeout kcm sets is the one in effect; kcm's builds never set it.
var cacheSyncTimeoutForTests string

func cacheSyncTimeout() time.Duration {
	if d, err := time.ParseDuration(cacheSyncTimeoutForTests); err == nil && d > 0 {
		return d
	}
	return waitForever
}
