// Package servicelb is service-lb-controller: upstream cloud-controller-manager's service
// controller (k8s.io/cloud-provider v0.37.1, controllers/service), which gives Services of
// type LoadBalancer a load balancer from the cloud provider and keeps the nodes it sends
// traffic to current.
//
// Upstream runs two queues: Services, and nodes whose changes re-run UpdateLoadBalancer for
// every Service it has synced. Here node changes map to the Keys of the Services served,
// in the one "service" queue, and Reconcile tells the two apart as upstream's two workers
// would: a Service whose last sync succeeded and whose load-balancer-relevant fields have
// not changed since (needsUpdate) only has its node set compared and, if it changed,
// UpdateLoadBalancer called; any other Service is synced in full (syncLoadBalancerIfNeeded).
// What the controller remembers of a Service between syncs (the state last synced, the
// nodes last given) is upstream's cache, kept in records.
//
// decide.go holds the pure decisions (which Services, which nodes, what changed), watch.go
// what is queued and why, metrics.go upstream's metric families.
package servicelb

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/api"
	servicehelper "k8s.io/cloud-provider/service/helpers"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// ControllerName is upstream's controller name (k8s.io/cloud-provider/names).
const ControllerName = "service-lb-controller"

// EventSource is upstream's event recorder component for this controller.
const EventSource = "service-controller"

// Upstream's retry backoff of a failed Service sync.
const (
	minRetryDelay = 5 * time.Second
	maxRetryDelay = 300 * time.Second
)

// Reconciler keeps each served Service's load balancer in the provider and its
// status.loadBalancer in step.
type Reconciler struct {
	// Client reads Services and Nodes from the shared cache and patches Services' status
	// subresource with the controller's identity.
	Client   client.Client
	Recorder recorder.EventRecorder
	// Balancer is the provider's load balancer interface; ProviderName names it in logs.
	Balancer     cloudprovider.LoadBalancer
	ProviderName string
	// ClusterName is --cluster-name, handed to the provider.
	ClusterName string
	// Class is the provider's own spec.loadBalancerClass (cloud.LoadBalancerClasser), served
	// besides Services without a class; empty: only those.
	Class string
	// RequeueWaiting: when a load balancer is deleted, sync at once the served Services that
	// have no address yet (kcm's addition for an address pool, where a deletion frees the
	// address a Service is waiting for). Set for kcm's pool provider.
	RequeueWaiting bool
	// RateLimiter spaces the retries of a failing Service: upstream's 5s doubling to 300s.
	RateLimiter workqueue.TypedRateLimiter[reconcile.Request]

	// mu guards records; a record itself is only read and written by its Service's
	// Reconcile, which controller-runtime never runs twice at once.
	mu      sync.Mutex
	records map[types.NamespacedName]*record
	// released carries the Services whose load balancers were deleted to the watch that
	// queues the Services waiting for an address.
	released chan event.GenericEvent
}

// record is what the controller remembers of one Service: upstream's cachedService and its
// lastSyncedNodes.
type record struct {
	// state is the Service as last synced in full; synced: that sync ensured its load
	// balancer without error.
	state  *corev1.Service
	synced bool
	// nodes were last handed to the provider for this Service.
	nodes []*corev1.Node
}

// Services are read from the shared cache; the finalizer and status.loadBalancer are written
// through services/status patches as upstream's servicehelper.PatchService does (the role
// has no patch on services). Nodes are listed from the cache.
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;watch

// Reconcile syncs one Service as upstream's syncService: a Service gone is cleaned up from
// what was remembered of it; a synced one only follows the node set; any other is synced in
// full.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, req.NamespacedName, svc); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.processServiceDeletion(ctx, req.NamespacedName)
	}
	rec := r.record(req.NamespacedName)
	if rec == nil && !wantsLoadBalancer(svc, r.Class) && !servicehelper.HasLBFinalizer(svc) {
		// Never served and holding nothing: another class, or another type (upstream never
		// queues such a Service).
		return reconcile.Result{}, nil
	}
	if rec != nil && rec.synced && rec.state.UID == svc.UID && wantsLoadBalancer(svc, r.Class) &&
		!needsCleanup(svc) && !needsUpdate(rec.state, svc, r.Class) {
		done, err := r.nodeSyncService(ctx, svc, rec)
		if err != nil || done {
			return reconcile.Result{}, err
		}
		// The provider refused the new node set: sync the Service in full, as upstream
		// queues it again.
	}
	err := r.processServiceCreateOrUpdate(ctx, svc)
	var retry *api.RetryError
	if errors.As(err, &retry) {
		log.FromContext(ctx).Info("Error processing service, retrying", "retryAfter", retry.RetryAfter(), "err", err.Error())
		return reconcile.Result{RequeueAfter: retry.RetryAfter()}, nil
	}
	return reconcile.Result{}, err
}

// processServiceCreateOrUpdate syncs svc in full, and records an error as the Service's
// SyncLoadBalancerFailed Event.
func (r *Reconciler) processServiceCreateOrUpdate(ctx context.Context, svc *corev1.Service) error {
	key := client.ObjectKeyFromObject(svc)
	rec := r.ensureRecord(key)
	if previous := rec.state; previous != nil && previous.UID != svc.UID {
		// Deleted and created again under the same name before it was synced, which only a
		// Service without the finalizer can be: the old one's load balancer goes first.
		if err := r.processLoadBalancerDelete(ctx, rec.state); err != nil {
			return err
		}
	}
	rec.state, rec.synced = svc.DeepCopy(), false
	deleted, err := r.syncLoadBalancerIfNeeded(ctx, svc, rec)
	if err != nil {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "SyncLoadBalancerFailed", "", "Error syncing load balancer: %v", err)
		return err
	}
	if deleted {
		r.forget(key)
		return nil
	}
	rec.synced = true
	return nil
}

// syncLoadBalancerIfNeeded is upstream's: the load balancer deleted and the finalizer
// removed when the Service no longer wants one, else the finalizer added and the load
// balancer ensured; then status.loadBalancer written if it changed. deleted: the first.
func (r *Reconciler) syncLoadBalancerIfNeeded(ctx context.Context, svc *corev1.Service, rec *record) (deleted bool, err error) {
	logger := log.FromContext(ctx)
	previousStatus := svc.Status.LoadBalancer.DeepCopy()
	var newStatus *corev1.LoadBalancerStatus
	if !wantsLoadBalancer(svc, r.Class) || needsCleanup(svc) {
		deleted = true
		newStatus = &corev1.LoadBalancerStatus{}
		_, exists, err := r.Balancer.GetLoadBalancer(ctx, r.ClusterName, svc)
		if err != nil {
			return deleted, fmt.Errorf("failed to check if load balancer exists before cleanup: %w", err)
		}
		if exists {
			logger.V(2).Info("Deleting existing load balancer for service")
			r.Recorder.Eventf(svc, nil, corev1.EventTypeNormal, "DeletingLoadBalancer", "", "Deleting load balancer")
			if err := r.Balancer.EnsureLoadBalancerDeleted(ctx, r.ClusterName, svc); err != nil {
				if !errors.Is(err, cloudprovider.ImplementedElsewhere) {
					return deleted, fmt.Errorf("failed to delete load balancer: %w", err)
				}
				logger.V(4).Info("LoadBalancer for service implemented by a different controller, ignoring error on deletion", "provider", r.ProviderName)
			} else {
				r.notifyReleased(ctx, svc)
			}
		}
		// The finalizer goes once the load balancer is gone, so that the Service can go.
		if err := r.removeFinalizer(ctx, svc); err != nil {
			return deleted, fmt.Errorf("failed to remove load balancer cleanup finalizer: %w", err)
		}
		r.Recorder.Eventf(svc, nil, corev1.EventTypeNormal, "DeletedLoadBalancer", "", "Deleted load balancer")
	} else {
		logger.V(2).Info("Ensuring load balancer for service")
		r.Recorder.Eventf(svc, nil, corev1.EventTypeNormal, "EnsuringLoadBalancer", "", "Ensuring load balancer")
		// The finalizer comes before the load balancer, so that the Service cannot go
		// before its load balancer does.
		if err := r.addFinalizer(ctx, svc); err != nil {
			return deleted, fmt.Errorf("failed to add load balancer cleanup finalizer: %w", err)
		}
		newStatus, err = r.ensureLoadBalancer(ctx, svc, rec)
		if err != nil {
			if errors.Is(err, cloudprovider.ImplementedElsewhere) {
				logger.V(4).Info("LoadBalancer for service implemented by a different controller, ignoring error", "provider", r.ProviderName)
				return deleted, nil
			}
			// %w, so that a provider's api.RetryError reaches Reconcile.
			return deleted, fmt.Errorf("failed to ensure load balancer: %w", err)
		}
		if newStatus == nil {
			return deleted, errors.New("service status returned by EnsureLoadBalancer is nil")
		}
		r.Recorder.Eventf(svc, nil, corev1.EventTypeNormal, "EnsuredLoadBalancer", "", "Ensured load balancer")
	}
	if err := r.patchStatus(ctx, svc, previousStatus, newStatus); err != nil && !apierrors.IsNotFound(err) {
		// Not found: the Service went as soon as its finalizer did.
		return deleted, fmt.Errorf("failed to update load balancer status: %w", err)
	}
	return deleted, nil
}

// ensureLoadBalancer hands the provider svc with the current stable node set, remembered
// as the Service's last synced nodes.
func (r *Reconciler) ensureLoadBalancer(ctx context.Context, svc *corev1.Service, rec *record) (*corev1.LoadBalancerStatus, error) {
	nodes, err := r.nodes(ctx)
	if err != nil {
		return nil, err
	}
	if len(nodes) == 0 {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "UnAvailableLoadBalancer", "", "There are no available nodes for LoadBalancer")
	}
	rec.nodes = nodes
	return r.Balancer.EnsureLoadBalancer(ctx, r.ClusterName, svc, nodes)
}

// nodeSyncService is upstream's node sync of one Service: when the stable node set differs
// from the one last handed to the provider, UpdateLoadBalancer with the new one. done: no
// further sync is needed; false with no error: the provider refused, sync in full.
func (r *Reconciler) nodeSyncService(ctx context.Context, svc *corev1.Service, rec *record) (done bool, err error) {
	start := time.Now()
	defer func() { nodeSyncLatency.Observe(time.Since(start).Seconds()) }()
	nodes, err := r.nodes(ctx)
	if err != nil {
		nodeSyncErrorCount.Inc()
		return false, err
	}
	old := rec.nodes
	// Stored before trying, as upstream: a failure is retried by the full sync.
	rec.nodes = nodes
	if nodesSufficientlyEqual(old, nodes) {
		return true, nil
	}
	if err := r.updateLoadBalancerHosts(ctx, svc, nodes); err != nil {
		log.FromContext(ctx).Error(err, "Failed to update load balancer hosts for service")
		nodeSyncErrorCount.Inc()
		return false, nil
	}
	return true, nil
}

// updateLoadBalancerHosts is upstream's lockedUpdateLoadBalancerHosts: UpdateLoadBalancer,
// and one Event for the result.
func (r *Reconciler) updateLoadBalancerHosts(ctx context.Context, svc *corev1.Service, hosts []*corev1.Node) error {
	start := time.Now()
	loadBalancerSyncCount.Inc()
	defer func() { updateLoadBalancerHostLatency.Observe(time.Since(start).Seconds()) }()
	logger := log.FromContext(ctx)
	logger.V(2).Info("Updating backends for load balancer", "nodes", len(hosts), "nodeNames", loggableNodeNames(hosts))
	err := r.Balancer.UpdateLoadBalancer(ctx, r.ClusterName, svc, hosts)
	switch {
	case err == nil && len(hosts) == 0:
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "UnAvailableLoadBalancer", "", "There are no available nodes for LoadBalancer")
		return nil
	case err == nil:
		r.Recorder.Eventf(svc, nil, corev1.EventTypeNormal, "UpdatedLoadBalancer", "", "Updated load balancer with new hosts")
		return nil
	case errors.Is(err, cloudprovider.ImplementedElsewhere):
		return nil
	}
	// Only an error while the load balancer still exists.
	if _, exists, getErr := r.Balancer.GetLoadBalancer(ctx, r.ClusterName, svc); getErr != nil {
		logger.Error(getErr, "Failed to check if load balancer exists for service")
	} else if !exists {
		return nil
	}
	r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "UpdateLoadBalancerFailed", "",
		"Error updating load balancer with new hosts %v [node names limited, total number of nodes: %d], error: %v",
		loggableNodeNames(hosts), len(hosts), err)
	return err
}

// processServiceDeletion cleans up after a Service that is gone while the controller
// remembers a load balancer for it (one that never had the finalizer).
func (r *Reconciler) processServiceDeletion(ctx context.Context, key types.NamespacedName) error {
	rec := r.record(key)
	if rec == nil || rec.state == nil {
		return nil
	}
	log.FromContext(ctx).V(2).Info("Service has been deleted. Attempting to cleanup load balancer resources")
	if err := r.processLoadBalancerDelete(ctx, rec.state); err != nil {
		return err
	}
	r.forget(key)
	return nil
}

// processLoadBalancerDelete deletes the load balancer of a Service (as last synced) that
// had one.
func (r *Reconciler) processLoadBalancerDelete(ctx context.Context, svc *corev1.Service) error {
	if !wantsLoadBalancer(svc, r.Class) {
		return nil
	}
	r.Recorder.Eventf(svc, nil, corev1.EventTypeNormal, "DeletingLoadBalancer", "", "Deleting load balancer")
	if err := r.Balancer.EnsureLoadBalancerDeleted(ctx, r.ClusterName, svc); err != nil {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "DeleteLoadBalancerFailed", "", "Error deleting load balancer: %v", err)
		return err
	}
	r.Recorder.Eventf(svc, nil, corev1.EventTypeNormal, "DeletedLoadBalancer", "", "Deleted load balancer")
	r.notifyReleased(ctx, svc)
	return nil
}

// nodes is the stable node set from the shared cache, sorted by name.
func (r *Reconciler) nodes(ctx context.Context) ([]*corev1.Node, error) {
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	return stableNodes(list.Items), nil
}

// addFinalizer and removeFinalizer patch the Service's finalizers through its status
// subresource, as upstream.
func (r *Reconciler) addFinalizer(ctx context.Context, svc *corev1.Service) error {
	if servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = append(updated.Finalizers, servicehelper.LoadBalancerCleanupFinalizer)
	log.FromContext(ctx).V(2).Info("Adding finalizer to service")
	return r.patchService(ctx, svc, updated)
}

func (r *Reconciler) removeFinalizer(ctx context.Context, svc *corev1.Service) error {
	if !servicehelper.HasLBFinalizer(svc) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Finalizers = nil
	for _, f := range svc.Finalizers {
		if f != servicehelper.LoadBalancerCleanupFinalizer {
			updated.Finalizers = append(updated.Finalizers, f)
		}
	}
	log.FromContext(ctx).V(2).Info("Removing finalizer from service")
	return r.patchService(ctx, svc, updated)
}

// patchStatus writes status.loadBalancer when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, svc *corev1.Service, previous, status *corev1.LoadBalancerStatus) error {
	if servicehelper.LoadBalancerStatusEqual(previous, status) {
		return nil
	}
	updated := svc.DeepCopy()
	updated.Status.LoadBalancer = *status
	log.FromContext(ctx).V(2).Info("Patching status for service")
	return r.patchService(ctx, svc, updated)
}

// patchService is servicehelper.PatchService through the controller's client: a strategic
// merge patch of the metadata and status from old to updated (spec changes dropped), sent
// to the status subresource. Neither argument is changed.
func (r *Reconciler) patchService(ctx context.Context, old, updated *corev1.Service) error {
	updated = updated.DeepCopy()
	updated.Spec = old.Spec
	return r.Client.Status().Patch(ctx, updated, client.StrategicMergeFrom(old))
}

// record returns what is remembered of key, or nil.
func (r *Reconciler) record(key types.NamespacedName) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.records[key]
}

// ensureRecord returns what is remembered of key, a new empty record if nothing.
func (r *Reconciler) ensureRecord(key types.NamespacedName) *record {
	r.mu.Lock()
	defer r.mu.Unlock()
	rec, ok := r.records[key]
	if !ok {
		rec = &record{}
		r.records[key] = rec
	}
	return rec
}

// forget drops what is remembered of key, once its load balancer is deleted.
func (r *Reconciler) forget(key types.NamespacedName) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.records, key)
}

// notifyReleased hands the watch of waiting Services a Service whose load balancer was
// deleted (RequeueWaiting).
func (r *Reconciler) notifyReleased(ctx context.Context, svc *corev1.Service) {
	if !r.RequeueWaiting {
		return
	}
	select {
	case r.released <- event.GenericEvent{Object: svc.DeepCopy()}:
	case <-ctx.Done():
	}
}
