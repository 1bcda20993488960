// Package noderoute is upstream cloud-controller-manager's route controller
// (k8s.io/cloud-provider/controllers/route), run by kcm as node-route-controller: it programs
// the cloud provider's routes so that each node's pod CIDRs (spec.podCIDRs) are routed to the
// node, deletes the routes in --cluster-cidr no node needs any more, and writes each node's
// NetworkUnavailable condition.
//
// Every reconcile is cluster-wide: it lists the provider's routes (--cluster-name's) and the
// nodes, plans the deletions and creations (plan.go, pure), makes them, and then writes the
// condition of each node the plan speaks for. As upstream, how reconciles are triggered
// depends on the CloudControllerManagerWatchBasedRoutesReconciliation gate: off (the
// default), one every --route-reconciliation-period; on, one when a node is added or deleted
// or its pod CIDRs or addresses change, at most one every 10 seconds, and one on every resync
// of the shared cache.
package noderoute

import (
	"context"
	"errors"
	"fmt"
	"net"
	"reflect"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	clientretry "k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/parallel"
	"github.com/kcm/kcm/internal/setup"
)

const (
	// ControllerName is the controller's name in --controllers (k8s.io/cloud-provider/names).
	ControllerName = "node-route-controller"
	// DefaultMinInterval is how often, at most, node changes trigger a reconcile with the
	// watch-based gate on (upstream's minRouteResyncInterval, KEP 5237).
	DefaultMinInterval = 10 * time.Second
	// maxConcurrentRouteOperations bounds the provider calls in flight, as upstream.
	maxConcurrentRouteOperations = 200
	// eventSource is upstream's Event source of the route controller.
	eventSource = "route_controller"
	// reasonFailedToCreateRoute is upstream's Event reason when the provider refuses a route.
	reasonFailedToCreateRoute = "FailedToCreateRoute"
)

// The controller's two requests are upstream's two keys: both reconcile the whole cluster,
// and name what triggered it in route_controller_route_sync_total.
var (
	nodeChange = reconcile.Request{NamespacedName: types.NamespacedName{Name: "node_change"}}
	periodic   = reconcile.Request{NamespacedName: types.NamespacedName{Name: "periodic"}}
)

// updateNetworkConditionBackoff is upstream's retry of a node's condition on conflicts.
var updateNetworkConditionBackoff = wait.Backoff{Steps: 5, Duration: 100 * time.Millisecond, Jitter: 1.0}

// Reconciler programs the provider's routes for the nodes' pod CIDRs.
type Reconciler struct {
	// Client reads nodes from the shared cache.
	Client client.Client
	// Clientset writes nodes' status through the controller's own connection, with
	// k8s.io/component-helpers' SetNodeCondition as upstream.
	Clientset kubernetes.Interface
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock

	// Routes is the provider's route interface.
	Routes cloudprovider.Routes
	// ClusterName is --cluster-name: the provider's routes of this cluster.
	ClusterName string
	// ClusterCIDRs are --cluster-cidr's (one, or one per family): only routes in them are
	// ever deleted.
	ClusterCIDRs []*net.IPNet

	// WatchNodes is CloudControllerManagerWatchBasedRoutesReconciliation: reconcile on node
	// changes (and cache resyncs) instead of every Period.
	WatchNodes bool
	// Period is --route-reconciliation-period, between the starts of two reconciles when
	// WatchNodes is off.
	Period time.Duration
	// MinInterval is, when WatchNodes is on, the least time between two reconciles that node
	// changes trigger.
	MinInterval time.Duration
}

// What route-controller's own client does: nodes' NetworkUnavailable condition patched
// through their status. Nodes are read from the shared cache.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch

// Reconcile reconciles every node's routes. Without WatchNodes it comes back Period after it
// started, whatever happened, as upstream's loop; with it, a failure is retried through the
// queue's rate limiter, as upstream's work queue does.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := r.Clock.Now()
	changed, err := r.reconcileRoutes(ctx)
	routeSyncs.WithLabelValues(syncOutcome(changed, err), req.Name).Inc()
	if r.WatchNodes {
		if err != nil {
			return reconcile.Result{}, fmt.Errorf("couldn't reconcile node routes: %w", err)
		}
		return reconcile.Result{}, nil
	}
	if err != nil {
		log.FromContext(ctx).Error(err, "Couldn't reconcile node routes")
	}
	// Non-sliding: a reconcile longer than Period is followed at once by the next.
	return reconcile.Result{RequeueAfter: max(r.Period-r.Clock.Since(start), time.Nanosecond)}, nil
}

// reconcileRoutes observes the routes and the nodes, deletes and creates routes as planned,
// then writes the nodes' condition. It fails only when it cannot list; a route the provider
// refuses is an Event (creation) or a log line (deletion), and is tried again next time.
// changed: a route was created or deleted.
func (r *Reconciler) reconcileRoutes(ctx context.Context) (bool, error) {
	routes, err := r.Routes.ListRoutes(ctx, r.ClusterName)
	if err != nil {
		return false, fmt.Errorf("error listing routes: %w", err)
	}
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return false, fmt.Errorf("error listing nodes: %w", err)
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	p := planRoutes(nodes, routes, r.ClusterCIDRs)
	logger := log.FromContext(ctx)
	for node, actions := range p.actions {
		for cidr, a := range actions {
			logger.V(4).Info("Route action", "node", node, "cidr", cidr, "action", a)
		}
	}

	var changed atomic.Bool
	// Deletions first, always: a route being updated (the provider routes by node address)
	// must be gone before it is created again; upstream runs both at once otherwise.
	_ = parallel.Do(ctx, len(p.deletes), maxConcurrentRouteOperations, func(ctx context.Context, i int) error {
		if r.deleteRoute(ctx, p.deletes[i]) {
			changed.Store(true)
		}
		return nil
	})
	created := make([]bool, len(p.creates))
	_ = parallel.Do(ctx, len(p.creates), maxConcurrentRouteOperations, func(ctx context.Context, i int) error {
		created[i] = r.createRoute(ctx, p.creates[i])
		return nil
	})
	for i, c := range p.creates {
		if created[i] {
			changed.Store(true)
			p.actions[c.route.TargetNode][c.route.DestinationCIDR] = keep
		}
	}

	_ = parallel.Do(ctx, len(nodes), maxConcurrentRouteOperations, func(ctx context.Context, i int) error {
		actions, known := p.actions[types.NodeName(nodes[i].Name)]
		if created, ok := routesCreated(actions, known); ok {
			r.setNetworkCondition(ctx, nodes[i], created)
		}
		return nil
	})
	return changed.Load(), nil
}

// deleteRoute deletes one route, logging the outcome as upstream; true when it is deleted.
func (r *Reconciler) deleteRoute(ctx context.Context, rt *cloudprovider.Route) bool {
	logger := log.FromContext(ctx).WithValues("route", rt.Name, "cidr", rt.DestinationCIDR)
	start := r.Clock.Now()
	logger.Info("Deleting route")
	if err := r.Routes.DeleteRoute(ctx, r.ClusterName, rt); err != nil {
		logger.Error(err, "Could not delete route", "after", r.Clock.Since(start))
		return false
	}
	logger.Info("Deleted route", "after", r.Clock.Since(start))
	return true
}

// createRoute creates one route, named after the node's UID; a refusal is upstream's
// FailedToCreateRoute Event on the node. True when it is created.
func (r *Reconciler) createRoute(ctx context.Context, c creation) bool {
	logger := log.FromContext(ctx).WithValues("node", c.node.Name, "cidr", c.route.DestinationCIDR, "nameHint", c.nameHint)
	start := r.Clock.Now()
	logger.Info("Creating route")
	if err := r.Routes.CreateRoute(ctx, r.ClusterName, c.nameHint, c.route); err != nil {
		msg := fmt.Sprintf("Could not create route %s %s for node %s after %v: %v",
			c.nameHint, c.route.DestinationCIDR, c.node.Name, r.Clock.Since(start), err)
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: c.node.Name, UID: c.node.UID}
		r.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, reasonFailedToCreateRoute, "", msg)
		logger.Error(err, "Could not create route")
		return false
	}
	logger.Info("Created route", "after", r.Clock.Since(start))
	return true
}

// setNetworkCondition writes the node's NetworkUnavailable condition unless it already says
// so, through a patch of its status (upstream's SetNodeCondition), retried on conflicts.
// A failure is logged: the next reconcile writes it again.
func (r *Reconciler) setNetworkCondition(ctx context.Context, node *corev1.Node, created bool) {
	logger := log.FromContext(ctx).WithValues("node", node.Name)
	if conditionCurrent(node, created) {
		logger.V(2).Info("NetworkUnavailable condition already set", "routesCreated", created)
		return
	}
	_, previous := nodeutil.GetNodeCondition(&node.Status, corev1.NodeNetworkUnavailable)
	logger.Info("Patching node's NetworkUnavailable condition", "routesCreated", created, "previous", previous)
	err := clientretry.RetryOnConflict(updateNetworkConditionBackoff, func() error {
		c := networkCondition(created)
		c.LastTransitionTime = metav1.NewTime(r.Clock.Now())
		return nodeutil.SetNodeCondition(r.Clientset, types.NodeName(node.Name), c)
	})
	if err != nil {
		logger.Error(err, "Error updating node's NetworkUnavailable condition")
	}
}

// SetupWithManager registers the controller: with WatchNodes, node changes through a rate
// limiter of one reconcile per MinInterval; without, one periodic request queued at start
// that requeues itself.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Clientset == nil || r.Recorder == nil || r.Routes == nil {
		return fmt.Errorf("%s: Client, Clientset, Recorder and Routes are required", ControllerName)
	}
	if len(r.ClusterCIDRs) == 0 {
		return errors.New("RouteController: Must specify clusterCIDR")
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.MinInterval <= 0 {
		r.MinInterval = DefaultMinInterval
	}
	// Upstream's limiter: a token every MinInterval, at most MinInterval of wait.
	limiter := workqueue.NewTypedWithMaxWaitRateLimiter[reconcile.Request](
		&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Every(r.MinInterval), 1)},
		r.MinInterval)
	// Upstream's queue is named "Routes" with the gate; without it upstream has none.
	queue := setup.Queue(ControllerName)
	if r.WatchNodes {
		queue = setup.Queue("Routes")
	}
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{NewQueue: queue, RateLimiter: limiter, MaxConcurrentReconciles: 1})
	if r.WatchNodes {
		b = b.Watches(&corev1.Node{}, nodeEvents)
	} else {
		if r.Period <= 0 {
			return fmt.Errorf("%s: Period must be positive", ControllerName)
		}
		b = b.WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(periodic)
			return nil
		}))
	}
	return b.Complete(r)
}

// nodeEvents queues a node_change reconcile, rate-limited, when a node is added or deleted,
// or its pod CIDRs or addresses change; a resync (an update to the same resourceVersion)
// queues a periodic one. Other updates (status heartbeats) do not matter to routes.
var nodeEvents = handler.TypedFuncs[client.Object, reconcile.Request]{
	CreateFunc: func(_ context.Context, _ event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q.AddRateLimited(nodeChange)
	},
	DeleteFunc: func(_ context.Context, _ event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		q.AddRateLimited(nodeChange)
	},
	UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		if req, ok := updateTrigger(e.ObjectOld, e.ObjectNew); ok {
			q.AddRateLimited(req)
		}
	},
}

// updateTrigger is the request a node update queues, if any.
func updateTrigger(oldObj, newObj client.Object) (reconcile.Request, bool) {
	o, ok1 := oldObj.(*corev1.Node)
	n, ok2 := newObj.(*corev1.Node)
	if !ok1 || !ok2 {
		return reconcile.Request{}, false
	}
	if !reflect.DeepEqual(o.Spec.PodCIDRs, n.Spec.PodCIDRs) ||
		!reflect.DeepEqual(o.Status.Addresses, n.Status.Addresses) {
		return nodeChange, true
	}
	if o.ResourceVersion == n.ResourceVersion {
		return periodic, true
	}
	return reconcile.Request{}, false
}
