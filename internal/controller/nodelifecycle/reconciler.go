// Package nodelifecycle is upstream's node-lifecycle-controller: it watches every node's
// heartbeats (its Lease and its Ready condition), marks a node that stopped reporting
// Unknown, keeps the condition taints in step (NoSchedule at once, NoExecute at a rate
// limited per zone, so that a zone outage does not evict everything at once), and marks the
// pods of a node that is not ready NotReady.
//
// Two kinds of work share the Reconciler's state: Reconcile syncs one node (observe the node
// and its Lease, judge its health, taint, write status); the zone passes (zonepass.go), a
// Runnable of their own, classify the zones through the pure planZones (zones.go) and drain
// the zones' NoExecute tainting queues at the rates it sets.
package nodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/patch"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "node-lifecycle-controller"

// EventSource is the source.component of its Events, upstream's former name for it.
const EventSource = "node-controller"

// evictionPeriod is how often queued NoExecute taints are tried, as upstream's
// NodeEvictionPeriod.
const evictionPeriod = 100 * time.Millisecond

// Reconciler is the node-lifecycle-controller. The command line's values go in the
// exported fields; upstream's defaults are the flags' defaults.
type Reconciler struct {
	Client client.Client
	// Leases is where node Leases are read: the shared cache.
	Leases client.Reader
	// APIReader reads around the cache: a Lease the cache shows expired, under the lease
	// circuit breaker.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.Clock
	// LeaseCircuitBreaker is the NodeControllerLeaseCircuitBreaker gate: before a node is
	// declared Unknown from its cached Lease, the API server's Lease is read, and a cache
	// found stale holds every node's health until it has caught up.
	LeaseCircuitBreaker bool
	// LeaseCacheVersion is the last resourceVersion the Lease cache has synced ("" when
	// unknown); SetupWithManager takes it from the cache's Lease informer.
	LeaseCacheVersion func() string

	MonitorPeriod          time.Duration // --node-monitor-period
	MonitorGracePeriod     time.Duration // --node-monitor-grace-period
	StartupGracePeriod     time.Duration // --node-startup-grace-period
	EvictionRate           float32       // --node-eviction-rate
	SecondaryEvictionRate  float32       // --secondary-node-eviction-rate
	LargeClusterThreshold  int32         // --large-cluster-size-threshold
	UnhealthyZoneThreshold float32       // --unhealthy-zone-threshold

	// mu guards what the node reconciles and the zone passes share.
	mu         sync.Mutex
	healths    map[string]*health
	known      map[string]types.UID
	zoneStates map[string]zoneState
	tainters   map[string]*tainter
	// kick asks the zone passes (runZonePasses) for a pass now.
	kick chan struct{}
	// leaseVersionSeen is the newest Lease resourceVersion the breaker read from the API
	// server that the cache had not shown yet ("" when none is pending).
	leaseVersionSeen string
}

// What node-lifecycle-controller's own client (node-controller) does (reads of the shared
// cache, Leases' included, and Events run as kcm's identity): nodes' taints and labels
// patched, as upstream's PatchNodeTaints and label patch; the Ready condition and pods' Ready
// condition written with an update of the status subresource, as upstream's UpdateStatus;
// the live get of a Lease the cache shows expired (the lease circuit breaker).
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=update
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=update
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get

// Reconcile syncs one node: it observes the node and its Lease, judges its health, brings
// its taints and labels in line, and writes the node's and its pods' conditions last.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	// Observe: the node and its Lease, before anything is written.
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(req.Name)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	// The sync of an existing node is upstream's health update of a single node.
	start := r.Clock.Now()
	defer func() { updateNodeHealthDuration.Observe(r.Clock.Since(start).Seconds()) }()
	lease := &coordinationv1.Lease{}
	if err := r.Leases.Get(ctx, types.NamespacedName{Namespace: corev1.NamespaceNodeLease, Name: node.Name}, lease); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		lease = nil
	}
	r.register(node)
	// A Lease cache found stale is trusted for no node until it catches up.
	if r.LeaseCircuitBreaker {
		if err := r.leaseCacheBehind(); err != nil {
			return r.skipHealth(ctx, node, err)
		}
	}
	now := r.Clock.Now()
	r.mu.Lock()
	prev := r.healths[node.Name]
	h := observe(prev, node, lease, now)
	r.healths[node.Name] = h
	r.mu.Unlock()

	// Compare: has the node been seen alive within its grace period? A node past it is
	// Unknown from now on, before the write that says so.
	wasReady := prev != nil && prev.ready != nil && prev.ready.Status == corev1.ConditionTrue
	deadline := r.deadline(node, h)
	silent := now.After(deadline)
	// Under the lease circuit breaker the API server confirms it first: a Lease it shows
	// renewed since means the cache is stale, not the node.
	if silent && r.LeaseCircuitBreaker {
		if err := r.confirmLeaseExpired(ctx, node.Name, h.leaseVersion); err != nil {
			return r.skipHealth(ctx, node, err)
		}
	}
	ready := readyStatus(node)
	if silent {
		r.setExpiry(node.Name, expiryConfirmed)
		ready = corev1.ConditionUnknown
	}

	// Act: condition taints and labels that follow the node's own report, then the
	// NoExecute taint that follows its health.
	if err := r.syncNoScheduleTaintsAndLabels(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	if wasReady && ready != corev1.ConditionTrue {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "NodeNotReady", "NodeStatusChange",
			"Node %s status is now: NodeNotReady", node.Name)
	}
	if err := r.syncNoExecuteTaint(ctx, node, ready); err != nil {
		return reconcile.Result{}, err
	}

	// Status: the node's conditions once it fell silent, and its pods' Ready conditions.
	if silent {
		if err := r.markUnknown(ctx, node, now); err != nil {
			return reconcile.Result{}, err
		}
	}
	if ready != corev1.ConditionTrue {
		if err := r.markPodsNotReady(ctx, node); err != nil {
			return reconcile.Result{}, err
		}
	}
	if silent {
		return reconcile.Result{}, nil
	}
	// Come back when the grace period runs out, unless a heartbeat comes first.
	return reconcile.Result{RequeueAfter: deadline.Sub(now) + time.Millisecond}, nil
}

// skipHealth leaves the node's health alone this period, as upstream skips a node whose
// health update the lease circuit breaker stopped: no condition, taint for its health or pod
// is written. The taints and labels that follow the node's own report still do. The Lease
// event that brings the cache up to date queues the node again; the monitor period is the
// fallback.
func (r *Reconciler) skipHealth(ctx context.Context, node *corev1.Node, cause error) (reconcile.Result, error) {
	r.setExpiry(node.Name, expiryHeld)
	log.FromContext(ctx).Error(cause, "Update health of Node from Controller error, Skipping - no pods will be evicted", "node", node.Name)
	if err := r.syncNoScheduleTaintsAndLabels(ctx, node); err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: r.MonitorPeriod}, nil
}

// setExpiry records the verdict on the node's expired grace period for the zone passes.
func (r *Reconciler) setExpiry(node string, v expiryVerdict) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if h := r.healths[node]; h != nil {
		h.expiry = v
	}
}

// deadline is when a node unseen since h.probe is declared Unknown: its grace period after
// the last sign of life, rounded up to the --node-monitor-period grid, as upstream checks
// every node once a period. Nodes that fall silent together are judged together, so a zone
// outage is classified before its first node is tainted.
func (r *Reconciler) deadline(node *corev1.Node, h *health) time.Time {
	d := h.probe.Add(gracePeriod(node, r.MonitorGracePeriod, r.StartupGracePeriod))
	if grid := d.Truncate(r.MonitorPeriod); grid.Before(d) {
		return grid.Add(r.MonitorPeriod)
	}
	return d
}

// register notes a node seen for the first time, with upstream's Event.
func (r *Reconciler) register(node *corev1.Node) {
	r.mu.Lock()
	_, seen := r.known[node.Name]
	r.known[node.Name] = node.UID
	r.mu.Unlock()
	if !seen {
		r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "RegisteredNode", "Register",
			"Node %s event: Registered Node %s in Controller", node.Name, node.Name)
	}
}

// forget drops a deleted node, with upstream's Event.
func (r *Reconciler) forget(name string) {
	r.mu.Lock()
	uid, seen := r.known[name]
	delete(r.known, name)
	delete(r.healths, name)
	for _, t := range r.tainters {
		t.queue = without(t.queue, name)
	}
	r.mu.Unlock()
	if seen {
		gone := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, UID: uid}}
		r.Recorder.Eventf(gone, nil, corev1.EventTypeNormal, "RemovingNode", "Remove",
			"Node %s event: Removing Node %s from Controller", name, name)
	}
}

// syncNoScheduleTaintsAndLabels keeps the condition NoSchedule taints and the deprecated
// beta OS/arch labels in step, in one patch.
func (r *Reconciler) syncNoScheduleTaintsAndLabels(ctx context.Context, node *corev1.Node) error {
	taints, taintsChanged := noScheduleTaints(node)
	labels, labelsChanged := betaLabels(node.Labels)
	if !taintsChanged && !labelsChanged {
		return nil
	}
	orig := node.DeepCopy()
	node.Spec.Taints, node.Labels = taints, labels
	// At the version read: a merge patch replaces the whole taints list, which must not drop
	// a taint another writer added since.
	if err := r.Client.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating taints and labels of node %s: %w", node.Name, err)
	}
	return nil
}

// betaLabels mirrors the stable OS and architecture labels onto their deprecated beta
// names, as upstream does for old clients.
func betaLabels(labels map[string]string) (map[string]string, bool) {
	pairs := [][2]string{{corev1.LabelOSStable, "beta.kubernetes.io/os"}, {corev1.LabelArchStable, "beta.kubernetes.io/arch"}}
	var out map[string]string
	for _, p := range pairs {
		v, ok := labels[p[0]]
		if !ok || labels[p[1]] == v {
			continue
		}
		if out == nil {
			out = make(map[string]string, len(labels)+2)
			for k, v := range labels {
				out[k] = v
			}
		}
		out[p[1]] = v
	}
	if out == nil {
		return labels, false
	}
	return out, true
}

// markUnknown writes the node's conditions as Unknown when its Ready condition is not yet.
func (r *Reconciler) markUnknown(ctx context.Context, node *corev1.Node, now time.Time) error {
	conds, readyChanged := conditionsUnknown(node, now)
	if !readyChanged {
		return nil
	}
	node.Status.Conditions = conds
	// Optimistic: a heartbeat the kubelet wrote since the read must not be overwritten with
	// Unknown; on a conflict the node is read and judged again.
	if err := patch.Status(ctx, r.Client, node); err != nil {
		return fmt.Errorf("marking node %s Unknown: %w", node.Name, err)
	}
	log.FromContext(ctx).Info("Node stopped posting status; marked Unknown", "node", node.Name)
	r.mu.Lock()
	if h := r.healths[node.Name]; h != nil {
		h.readyTransition = now
	}
	r.mu.Unlock()
	return nil
}

// syncNoExecuteTaint removes the NoExecute taints of a ready node at once, swaps one for
// the other at once when the node goes from not-ready to unreachable or back, and queues a
// newly unhealthy node for tainting at its zone's rate.
func (r *Reconciler) syncNoExecuteTaint(ctx context.Context, node *corev1.Node, ready corev1.ConditionStatus) error {
	key := noExecuteKey(ready)
	swap := key != "" && (hasNoExecute(node, corev1.TaintNodeNotReady) || hasNoExecute(node, corev1.TaintNodeUnreachable))
	if key == "" || swap {
		r.dequeue(node)
		return r.setNoExecute(ctx, node, key)
	}
	if !hasNoExecute(node, key) && r.enqueue(node) {
		r.kickZonePass()
	}
	return nil
}

func (r *Reconciler) setNoExecute(ctx context.Context, node *corev1.Node, key string) error {
	taints, changed := withNoExecute(node.Spec.Taints, key, r.Clock.Now())
	if !changed {
		return nil
	}
	orig := node.DeepCopy()
	node.Spec.Taints = taints
	// At the version read, as above.
	if err := r.Client.Patch(ctx, node, client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})); err != nil {
		return fmt.Errorf("updating NoExecute taints of node %s: %w", node.Name, err)
	}
	if key != "" {
		log.FromContext(ctx).Info("Tainted node NoExecute", "node", node.Name, "taint", key)
	}
	return nil
}

// markPodsNotReady sets the Ready condition of the node's pods to False, with upstream's
// Event, as the kubelet of an unreachable node cannot.
func (r *Reconciler) markPodsNotReady(ctx context.Context, node *corev1.Node) error {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.MatchingFields{index.PodNodeName: node.Name}); err != nil {
		return err
	}
	var errs []error
	for i := range pods.Items {
		p := &pods.Items[i]
		cond := podReadyIndex(p)
		if cond < 0 || p.Status.Conditions[cond].Status == corev1.ConditionFalse {
			continue
		}
		p.Status.Conditions[cond].Status = corev1.ConditionFalse
		p.Status.Conditions[cond].LastTransitionTime = metav1.NewTime(r.Clock.Now())
		// Optimistic, as upstream's UpdateStatus: the kubelet, if it is back, may have
		// reported the pod since the read; its report wins and the next sync judges again.
		err := patch.Status(ctx, r.Client, p)
		switch {
		case apierrors.IsNotFound(err):
		case err != nil:
			errs = append(errs, err)
		default:
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, "NodeNotReady", "MarkNotReady", "Node is not ready")
		}
	}
	return errors.Join(errs...)
}

func podReadyIndex(p *corev1.Pod) int {
	for i, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			return i
		}
	}
	return -1
}

// SetupWithManager reconciles nodes on their own changes, their Leases' and those of pods
// newly bound to them, and adds the zone passes as a Runnable of their own.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	if r.Client == nil || r.Leases == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, Leases and Recorder are required", ControllerName)
	}
	if r.LeaseCircuitBreaker && r.APIReader == nil {
		return fmt.Errorf("%s: the lease circuit breaker requires APIReader", ControllerName)
	}
	if r.MonitorPeriod <= 0 || r.MonitorGracePeriod <= 0 || r.StartupGracePeriod <= 0 {
		return fmt.Errorf("%s: monitor period and grace periods must be positive", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.healths, r.known = map[string]*health{}, map[string]types.UID{}
	r.zoneStates, r.tainters = map[string]zoneState{}, map[string]*tainter{}
	r.kick = make(chan struct{}, 1)
	if r.LeaseCircuitBreaker && r.LeaseCacheVersion == nil {
		informer, err := mgr.GetCache().GetInformer(context.Background(), &coordinationv1.Lease{})
		if err != nil {
			return fmt.Errorf("%s: the Lease informer: %w", ControllerName, err)
		}
		// The informer's store knows the last resourceVersion it synced (client-go's
		// AtomicFIFO, on by default); without it the breaker still reads the live Lease
		// of every node the cache shows expired.
		if s, ok := informer.(interface{ GetStore() toolscache.Store }); ok {
			r.LeaseCacheVersion = s.GetStore().LastStoreSyncResourceVersion
		}
	}
	// The zone passes log as the controller does, which a Runnable's context does not.
	passLog := mgr.GetLogger().WithValues("controller", ControllerName)
	passes := manager.RunnableFunc(func(ctx context.Context) error {
		return r.runZonePasses(log.IntoContext(ctx, passLog))
	})
	if err := mgr.Add(passes); err != nil {
		return fmt.Errorf("%s: adding the zone passes: %w", ControllerName, err)
	}

	nodeOfLease := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		if o.GetNamespace() != corev1.NamespaceNodeLease {
			return nil
		}
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.GetName()}}}
	})
	nodeOfPod := handler.EnqueueRequestsFromMapFunc(func(_ context.Context, o client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: o.(*corev1.Pod).Spec.NodeName}}}
	})
	// Only a pod newly bound to a node matters: it may need marking NotReady.
	newlyBound := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return e.Object.(*corev1.Pod).Spec.NodeName != "" },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.(*corev1.Pod).Spec.NodeName != e.ObjectNew.(*corev1.Pod).Spec.NodeName
		},
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}).
		Watches(&coordinationv1.Lease{}, nodeOfLease).
		Watches(&corev1.Pod{}, nodeOfPod, builder.WithPredicates(newlyBound)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
