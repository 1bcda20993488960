package garbagecollector

import (
	"context"
	"fmt"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// The collector's work: its requests (the work items), the queue they wait in, and the
// sources that fill it: the discovery request at start, the watches' events through the
// graph, and the requests the workers themselves produce, through a channel.

// op is what a request asks for.
type op int

const (
	// opDiscover: the discovery pass (one request, requeued every DiscoveryPeriod).
	opDiscover op = iota
	// opDelete: upstream's attemptToDelete for the item with the UID.
	opDelete
	// opOrphan: upstream's attemptToOrphan for the owner with the UID.
	opOrphan
)

// request is the controller's work item.
type request struct {
	Op  op
	UID types.UID
}

func (r request) String() string {
	switch r.Op {
	case opDiscover:
		return "discovery"
	case opDelete:
		return "attemptToDelete " + string(r.UID)
	default:
		return "attemptToOrphan " + string(r.UID)
	}
}

var discoverRequest = request{Op: opDiscover}

type queue = workqueue.TypedRateLimitingInterface[request]

func (e effects) requests() []request {
	out := make([]request, 0, len(e.Delete)+len(e.Orphan))
	for _, uid := range e.Delete {
		out = append(out, request{Op: opDelete, UID: uid})
	}
	for _, uid := range e.Orphan {
		out = append(out, request{Op: opOrphan, UID: uid})
	}
	return out
}

// SetupWithManager builds the collector's cache and controller. The controller starts with
// the discovery request, which adds the resources' watches to it as it finds them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Config == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Config and Recorder are required", ControllerName)
	}
	if workers < 1 {
		return fmt.Errorf("%s: workers must be positive, got %d", ControllerName, workers)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.DiscoveryPeriod <= 0 {
		r.DiscoveryPeriod = DefaultDiscoveryPeriod
	}
	if r.IgnoredResources == nil {
		r.IgnoredResources = DefaultIgnoredResources()
	}
	var err error
	if r.metadata, err = metadata.NewForConfig(r.Config); err != nil {
		return fmt.Errorf("%s: metadata client: %w", ControllerName, err)
	}
	if r.discovery, err = discovery.NewDiscoveryClientForConfig(r.Config); err != nil {
		return fmt.Errorf("%s: discovery client: %w", ControllerName, err)
	}
	r.mapper = mgr.GetRESTMapper()
	r.shared, r.scheme = mgr.GetCache(), mgr.GetScheme()
	r.graph = newGraph()
	r.watches = map[schema.GroupVersionResource]*resourceWatch{}
	r.requests = make(chan event.TypedGenericEvent[request], 1024)

	// A cache of the collector's own: the shared one restricts some kinds (ByObject), and
	// would give the collector's metadata informers those restrictions.
	informerCfg := rest.CopyConfig(mgr.GetConfig())
	informerCfg.UserAgent = r.Config.UserAgent
	if r.cache, err = cache.New(informerCfg, cache.Options{
		Scheme:           mgr.GetScheme(),
		Mapper:           mgr.GetRESTMapper(),
		DefaultTransform: cache.TransformStripManagedFields(),
	}); err != nil {
		return fmt.Errorf("%s: cache: %w", ControllerName, err)
	}
	if err := mgr.Add(r.cache); err != nil {
		return err
	}

	start := source.TypedFunc[request](func(_ context.Context, q queue) error {
		q.Add(discoverRequest)
		return nil
	})
	fromWorkers := source.TypedChannel(r.requests, handler.TypedFuncs[request, request]{
		GenericFunc: func(_ context.Context, e event.TypedGenericEvent[request], q queue) { q.Add(e.Object) },
	})
	logger := mgr.GetLogger().WithValues("controller", ControllerName)
	r.controller, err = builder.TypedControllerManagedBy[request](mgr).
		Named(ControllerName).
		WatchesRawSource(start).
		WatchesRawSource(fromWorkers).
		WithOptions(controller.TypedOptions[request]{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		WithLogConstructor(func(req *request) logr.Logger {
			if req == nil {
				return logger
			}
			return logger.WithValues("request", req.String())
		}).
		Build(r)
	return err
}

// informerSource feeds one resource's metadata events to the graph.
func (r *Reconciler) informerSource(inf cache.Informer, gvk schema.GroupVersionKind) source.TypedSource[request] {
	return &source.TypedInformer[client.Object, request]{
		Informer: inf,
		Handler: handler.TypedFuncs[client.Object, request]{
			CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
				r.observe(ctx, q, change{Type: added, GVK: gvk, Object: metaOf(e.Object)})
			},
			UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
				old := metaOf(e.ObjectOld)
				r.observe(ctx, q, change{Type: updated, GVK: gvk, Object: metaOf(e.ObjectNew), Old: &old})
			},
			DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
				r.observe(ctx, q, change{Type: deleted, GVK: gvk, Object: metaOf(e.Object)})
			},
		},
	}
}

// observe applies a watch event to the graph and queues what it asks for.
func (r *Reconciler) observe(ctx context.Context, q queue, c change) {
	eff := r.graph.apply(c)
	for _, req := range eff.requests() {
		q.Add(req)
	}
	r.report(ctx, eff.InvalidNamespace)
}

// enqueue hands requests for other items to the queue, through the controller's channel
// source.
func (r *Reconciler) enqueue(ctx context.Context, reqs ...request) {
	for _, req := range reqs {
		select {
		case r.requests <- event.TypedGenericEvent[request]{Object: req}:
		case <-ctx.Done():
			return
		}
	}
}
