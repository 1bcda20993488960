// Package cloudnodelifecycle is upstream cloud-controller-manager's node lifecycle
// controller (k8s.io/cloud-provider/controllers/nodelifecycle), run by kcm as
// cloud-node-lifecycle-controller: every --node-monitor-period it asks the cloud provider
// about each node that is not Ready, deletes the nodes whose instance no longer exists, and
// taints node.cloudprovider.kubernetes.io/shutdown:NoSchedule those whose instance is shut
// down; the taint is lifted when the node is Ready again.
//
// A pass over all nodes is the controller's one request, which requeues itself a period after
// it ends (upstream's wait.Until); the nodes are processed --concurrent-node-lifecycle-syncs
// at a time.
package cloudnodelifecycle

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/util/workqueue"
	cloudprovider "k8s.io/cloud-provider"
	cloudproviderapi "k8s.io/cloud-provider/api"
	cloudnodeutil "k8s.io/cloud-provider/node/helpers"
	nodeutil "k8s.io/component-helpers/node/util"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/parallel"
	"github.com/kcm/kcm/internal/setup"
)

const (
	// ControllerName is the controller's name in --controllers (k8s.io/cloud-provider/names)
	// and upstream's Event source.
	ControllerName = "cloud-node-lifecycle-controller"

	// Upstream's Event reasons.
	reasonDeletingNode       = "DeletingNode"
	reasonDeletingNodeFailed = "DeletingNodeFailed"
)

// ShutdownTaint is the taint a node whose instance is shut down gets.
var ShutdownTaint = &corev1.Taint{Key: cloudproviderapi.TaintNodeShutdown, Effect: corev1.TaintEffectNoSchedule}

// monitorRequest is the controller's one request: a pass over every node.
var monitorRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "monitor-nodes"}}

// Reconciler is the periodic pass of the cloud node lifecycle controller.
type Reconciler struct {
	// Client reads nodes from the shared cache.
	Client client.Client
	// Clientset deletes and taints nodes through the controller's own connection (with
	// k8s.io/cloud-provider's taint helpers, as upstream).
	Clientset kubernetes.Interface
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock

	// Cloud is the provider; it has InstancesV2 or Instances.
	Cloud cloudprovider.Interface
	// Period is --node-monitor-period, between the end of a pass and the next.
	Period time.Duration
	// Workers is --concurrent-node-lifecycle-syncs: nodes processed at once.
	Workers int
}

// What node-controller's own client does: nodes deleted, and tainted or untainted through a
// patch after a live get (the helpers read the node first); nodes are listed from the shared
// cache.
//
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get;list;watch;patch;delete

// Reconcile runs one pass and comes back Period after it ends. Failures are per node, logged,
// and tried again by the next pass, as upstream's loop does.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	start := r.Clock.Now()
	if err := r.monitorNodes(ctx); err != nil {
		log.FromContext(ctx).Error(err, "Error listing nodes from cache")
		return reconcile.Result{RequeueAfter: r.Period}, nil
	}
	monitorNodesDuration.Observe(r.Clock.Since(start).Seconds())
	return reconcile.Result{RequeueAfter: r.Period}, nil
}

// monitorNodes processes every node, Workers at a time.
func (r *Reconciler) monitorNodes(ctx context.Context) error {
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list); err != nil {
		return err
	}
	_ = parallel.Do(ctx, len(list.Items), r.Workers, func(ctx context.Context, i int) error {
		r.processNode(ctx, &list.Items[i])
		return nil
	})
	return nil
}

// processNode is upstream's order: a Ready node loses the shutdown taint; for another, the
// provider is asked whether its instance exists (gone: the node is deleted, its taints no
// longer matter), then whether it is shut down (tainted). A provider error leaves the node as
// it is until the next pass.
func (r *Reconciler) processNode(ctx context.Context, node *corev1.Node) {
	logger := log.FromContext(ctx).WithValues("node", node.Name)
	if ready(node) {
		if err := cloudnodeutil.RemoveTaintOffNode(r.Clientset, node.Name, node, ShutdownTaint); err != nil {
			logger.Error(err, "Error patching node taints")
		}
		return
	}
	exists, err := r.instanceExists(ctx, node)
	if err != nil {
		logger.Error(err, "Error checking if node exists")
		return
	}
	if !exists {
		logger.V(2).Info("Deleting node since it is no longer present in cloud provider")
		ref := &corev1.ObjectReference{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}
		r.Recorder.Eventf(ref, nil, corev1.EventTypeNormal, reasonDeletingNode, "",
			fmt.Sprintf("Deleting node %s because it does not exist in the cloud provider", node.Name))
		if err := r.Clientset.CoreV1().Nodes().Delete(ctx, node.Name, metav1.DeleteOptions{}); err != nil {
			logger.Error(err, "Unable to delete node")
			r.Recorder.Eventf(ref, nil, corev1.EventTypeWarning, reasonDeletingNodeFailed, "",
				fmt.Sprintf("Failed deleting node %s: %v", node.Name, err))
		}
		return
	}
	shutdown, err := r.instanceShutdown(ctx, node)
	if err != nil {
		logger.Error(err, "Error checking if node is shutdown")
		return
	}
	if shutdown {
		if err := cloudnodeutil.AddOrUpdateTaintOnNode(r.Clientset, node.Name, ShutdownTaint); err != nil {
			logger.Error(err, "Failed to apply shutdown taint to node, it may have been deleted")
		}
	}
}

// ready: the node's Ready condition is True (a node without one is Unknown).
func ready(node *corev1.Node) bool {
	_, c := nodeutil.GetNodeCondition(&node.Status, corev1.NodeReady)
	return c != nil && c.Status == corev1.ConditionTrue
}

// instanceExists asks InstancesV2 with the node, or Instances with its provider ID. A node
// whose provider ID the provider cannot find does not exist.
func (r *Reconciler) instanceExists(ctx context.Context, node *corev1.Node) (bool, error) {
	if v2, ok := r.Cloud.InstancesV2(); ok {
		exists, err := v2.InstanceExists(ctx, node)
		observeExists(exists, err)
		return exists, err
	}
	instances, ok := r.Cloud.Instances()
	if !ok {
		return false, errors.New("instances interface not supported in the cloud provider")
	}
	id, err := r.providerID(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	exists, err := instances.InstanceExistsByProviderID(ctx, id)
	observeExists(exists, err)
	return exists, err
}

// observeExists counts an existence check; an instance that does not exist counts as
// instance_not_found, as upstream.
func observeExists(exists bool, err error) {
	if err == nil && !exists {
		err = cloudprovider.InstanceNotFound
	}
	observeCall(opInstanceExists, err)
}

// instanceShutdown asks InstancesV2 with the node, or Instances with its provider ID. An
// instance the provider cannot find, or a provider that cannot tell, is not shut down.
func (r *Reconciler) instanceShutdown(ctx context.Context, node *corev1.Node) (bool, error) {
	if v2, ok := r.Cloud.InstancesV2(); ok {
		shutdown, err := v2.InstanceShutdown(ctx, node)
		observeCall(opInstanceShutdown, err)
		return shutdown, err
	}
	instances, ok := r.Cloud.Instances()
	if !ok {
		return false, errors.New("cloud provider does not support instances")
	}
	id, err := r.providerID(ctx, node)
	if errors.Is(err, cloudprovider.InstanceNotFound) {
		return false, nil
	}
	if err != nil {
		return false, err
	}
	shutdown, err := instances.InstanceShutdownByProviderID(ctx, id)
	observeCall(opInstanceShutdown, err)
	if errors.Is(err, cloudprovider.NotImplemented) {
		return false, nil
	}
	return shutdown, err
}

// providerID is the node's spec.providerID or, for a node without one, the provider's
// (InstancesV2's metadata, else the instance ID by node name).
func (r *Reconciler) providerID(ctx context.Context, node *corev1.Node) (string, error) {
	if node.Spec.ProviderID != "" {
		return node.Spec.ProviderID, nil
	}
	if v2, ok := r.Cloud.InstancesV2(); ok {
		md, err := v2.InstanceMetadata(ctx, node)
		observeCall(opInstanceMetadata, err)
		if err != nil {
			return "", err
		}
		return md.ProviderID, nil
	}
	id, err := cloudprovider.GetInstanceProviderID(ctx, r.Cloud, types.NodeName(node.Name))
	observeCall(opInstanceMetadata, err)
	return id, err
}

// SetupWithManager runs the controller as one request that a source queues at start and
// that requeues itself every Period.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.Clientset == nil || r.Recorder == nil || r.Cloud == nil {
		return fmt.Errorf("%s: Client, Clientset, Recorder and Cloud are required", ControllerName)
	}
	if r.Period <= 0 || r.Workers < 1 {
		return fmt.Errorf("%s: Period and Workers must be positive", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	start := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(monitorRequest)
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(start).
		// Upstream runs a loop, not a queue: the queue keeps the controller's name.
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName), MaxConcurrentReconciles: 1}).
		Complete(r)
}
