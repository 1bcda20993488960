// Package cloudnode is upstream cloud-controller-manager's cloud node controller
// (k8s.io/cloud-provider controllers/node), run by kcm with the --cloud-provider's provider.
//
// A node the kubelet registers with the node.cloudprovider.kubernetes.io/uninitialized taint
// (kubelet --cloud-provider=external) waits for the provider: Reconcile asks it for the
// instance's metadata, gives the node its provider ID, instance-type, zone and region labels
// and the provider's own labels, and removes the taint, in one update; then it writes the
// instance's addresses to the node's status. A node whose instance the provider cannot
// find stays tainted, and its sync is retried with the queue's backoff. An initialised node's
// sync only completes its GA labels from the beta ones.
//
// Separately, every --node-status-update-frequency, a pass over every initialised node
// refreshes its addresses from the provider (upstream's UpdateNodeStatus), with
// --concurrent-node-status-updates calls at once; status is written only when the addresses
// differ. The decisions are in decide.go, the provider's lookups in metadata.go.
package cloudnode

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	cloudprovider "k8s.io/cloud-provider"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/parallel"
)

// ControllerName is upstream's controller name.
const ControllerName = "cloud-node-controller"

// updateBackoff is upstream's UpdateNodeSpecBackoff: how often initialising a node's update
// is retried on a conflict, without asking the provider again.
var updateBackoff = wait.Backoff{Steps: 20, Duration: 50 * time.Millisecond, Jitter: 1.0}

// Reconciler initialises the nodes that wait for the cloud provider.
type Reconciler struct {
	// Client reads nodes from the shared cache and writes them as node-controller.
	Client client.Client
	// APIReader reads a node live after a conflict.
	APIReader client.Reader
	Cloud     cloudprovider.Interface
	Recorder  recorder.EventRecorder
	// StatusUpdateFrequency is how often every initialised node's addresses are refreshed.
	StatusUpdateFrequency time.Duration
	// Workers and StatusWorkers: nodes synced, and addresses refreshed, at once.
	Workers, StatusWorkers int
}

// Nodes are read from the shared cache (kcm's identity) and live after a conflict; a node is
// initialised with an update, its GA labels completed with a patch, its addresses written
// with a patch of its status, as upstream.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch

// Reconcile initialises a tainted node, or completes an initialised node's GA labels.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !tainted(node) {
		return reconcile.Result{}, r.reconcileLabels(ctx, node)
	}
	return reconcile.Result{}, r.initialise(ctx, node)
}

// reconcileLabels adds or corrects the GA labels of an initialised node from its beta ones.
func (r *Reconciler) reconcileLabels(ctx context.Context, node *corev1.Node) error {
	labels := labelsToReconcile(node.Labels)
	if len(labels) == 0 {
		return nil
	}
	// A merge patch of the labels alone, as upstream's AddOrUpdateLabelsOnNode.
	orig := node.DeepCopy()
	for k, v := range labels {
		node.Labels[k] = v
	}
	if err := r.Client.Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		return fmt.Errorf("failed update labels for node %s: %w", node.Name, err)
	}
	log.FromContext(ctx).V(4).Info("Updated labels to Node", "labels", labels)
	return nil
}

// initialise asks the provider for the instance's metadata and applies it to the node, the
// taint removed, in one update retried on conflicts; then it writes the addresses.
func (r *Reconciler) initialise(ctx context.Context, node *corev1.Node) error {
	logger := log.FromContext(ctx)
	logger.Info("Initializing node with cloud provider")
	meta, err := instanceMetadata(ctx, r.Cloud, node)
	if err != nil {
		return fmt.Errorf("failed to get instance metadata for node %s: %w", node.Name, err)
	}
	if meta == nil {
		logger.Info("Skip sync node because cloud provided nil metadata")
		return nil
	}
	// The kubelet's --node-ip must be among the instance's addresses before the node goes
	// into service.
	if _, err := providedAddresses(node, meta.NodeAddresses); err != nil {
		return fmt.Errorf("failed to get node modifiers from cloud provider: provided node ip for node %q is not valid: %w", node.Name, err)
	}

	var updated *corev1.Node
	current, first := node, true
	err = retry.RetryOnConflict(updateBackoff, func() error {
		if !first {
			// The cache may still hold the version that conflicted.
			current = &corev1.Node{}
			if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(node), current); err != nil {
				return err
			}
		}
		first = false
		updated = current.DeepCopy()
		for _, d := range initialise(updated, meta) {
			logger.Info("Warning: discarding node label", "label", d.Key, "reason", d.Reason)
		}
		return r.Client.Update(ctx, updated)
	})
	if err != nil {
		return err
	}
	taintRemovalDelay.Observe(time.Since(updated.CreationTimestamp.Time).Seconds())
	// The addresses at once, rather than at the next refresh.
	r.writeAddresses(ctx, updated, meta.NodeAddresses)
	logger.Info("Successfully initialized node with cloud provider")
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, "Synced", "Synced", "Node synced successfully")
	initialSyncDelay.Observe(time.Since(node.CreationTimestamp.Time).Seconds())
	return nil
}

// writeAddresses writes the addresses the node's status should list, when they differ from
// those it lists. Failures are logged: the next refresh writes them.
func (r *Reconciler) writeAddresses(ctx context.Context, node *corev1.Node, cloudAddresses []corev1.NodeAddress) {
	logger := log.FromContext(ctx)
	addresses, write, err := addressesToWrite(node, cloudAddresses)
	if err != nil {
		logger.Error(err, "Failed to update node addresses")
		return
	}
	if !write {
		return
	}
	// A merge patch replaces the whole list (strategic merge would merge it by type, which
	// upstream's PatchNodeStatus works around), and touches no other status field: the
	// kubelet owns them.
	orig := node.DeepCopy()
	node.Status.Addresses = addresses
	if err := r.Client.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		logger.Error(err, "Error patching node with cloud ip addresses")
	}
}

// refreshAddresses is one pass of upstream's UpdateNodeStatus: every initialised node's
// addresses from the provider, StatusWorkers at a time. A tainted node is Reconcile's.
func (r *Reconciler) refreshAddresses(ctx context.Context) {
	logger := log.FromContext(ctx)
	start := time.Now()
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		logger.Error(err, "Error monitoring node status")
		return
	}
	_ = parallel.Do(ctx, len(nodes.Items), r.StatusWorkers, func(ctx context.Context, i int) error {
		node := nodes.Items[i].DeepCopy()
		if tainted(node) {
			return nil
		}
		nodeCtx := log.IntoContext(ctx, logger.WithValues("Node", client.ObjectKeyFromObject(node)))
		addresses, err := instanceAddresses(nodeCtx, r.Cloud, node)
		if err != nil {
			logger.Error(err, "Error getting instance metadata for node addresses", "Node", client.ObjectKeyFromObject(node))
			return nil
		}
		r.writeAddresses(nodeCtx, node, addresses)
		return nil
	})
	logger.V(2).Info("Updated nodes' status", "nodes", len(nodes.Items), "took", time.Since(start))
}

// SetupWithManager registers the controller and its periodic address refresh, which runs
// while this replica leads, as the controller does.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.StatusUpdateFrequency <= 0 {
		return fmt.Errorf("%s: --node-status-update-frequency must be positive, got %v", ControllerName, r.StatusUpdateFrequency)
	}
	passLog := mgr.GetLogger().WithValues("controller", ControllerName)
	refresh := manager.RunnableFunc(func(ctx context.Context) error {
		// As upstream: a pass at once, then one every period after the last ended.
		wait.UntilWithContext(log.IntoContext(ctx, passLog), r.refreshAddresses, r.StatusUpdateFrequency)
		return nil
	})
	if err := mgr.Add(refresh); err != nil {
		return fmt.Errorf("%s: adding the address refresh: %w", ControllerName, err)
	}
	// Every add and update, as upstream's handlers: a deletion needs nothing.
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}, builder.WithPredicates(noDeletes)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: r.Workers}).
		Complete(r)
}

// noDeletes drops deletion events, which upstream does not handle.
var noDeletes = predicate.Funcs{DeleteFunc: func(event.DeleteEvent) bool { return false }}
