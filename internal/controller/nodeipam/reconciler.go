// Package nodeipam is upstream's node-ipam-controller with its range allocator: every node
// gets spec.podCIDR and spec.podCIDRs, one CIDR of each cluster CIDR (--cluster-cidr), set
// once and never changed; the CIDRs of deleted nodes are handed out again.
package nodeipam

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	ctrl "sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName is upstream's controller name.
const ControllerName = "node-ipam-controller"

// Upstream's limits: 30 workers; a CIDR patch is tried three times before the CIDRs go back.
const (
	workers       = 30
	patchAttempts = 3
)

// Reconciler gives nodes their pod CIDRs.
type Reconciler struct {
	Client   client.Client
	Recorder events.EventRecorder
	// Config is the cluster CIDRs, node mask sizes and service ranges, as the flags gave them.
	Config config

	// built guards alloc: the allocator is built from every node in the cache on the first
	// Reconcile (the cache has synced by then), before any CIDR is handed out, so that a
	// restart never hands out a CIDR a node already has.
	built sync.Mutex
	alloc *allocator
}

// Nodes are read from the shared cache (kcm's identity); the controller's own identity
// patches their pod CIDRs, as upstream's nodeutil.PatchNodeCIDRs, and lists them live once
// at start (Setup).
// +kubebuilder:rbac:groups="",resources=nodes,verbs=list;patch

// Reconcile gives a node without podCIDRs one CIDR per cluster CIDR, marks those a node has
// as used, and gives back those of a node gone.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	alloc, err := r.allocator(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Observe.
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		if apierrors.IsNotFound(err) {
			alloc.release(req.Name)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if !node.DeletionTimestamp.IsZero() {
		// Upstream keeps a terminating node's CIDRs until it is gone.
		return reconcile.Result{}, nil
	}
	if len(node.Spec.PodCIDRs) > 0 {
		return reconcile.Result{}, alloc.occupy(node.Name, node.UID, node.Spec.PodCIDRs)
	}

	// Act: allocate, then set the CIDRs on the node.
	cidrs, idx, err := alloc.allocate(node.Name, node.UID)
	if err != nil {
		r.recordStatusChange(node, "CIDRNotAvailable")
		return reconcile.Result{}, fmt.Errorf("failed to allocate cidr from cluster cidr at idx:%v: %v", idx, err)
	}
	if err := r.patchCIDRs(ctx, node, cidrStrings(cidrs)); err != nil {
		r.recordStatusChange(node, "CIDRAssignmentFailed")
		// A timeout may have gone through: upstream then rather leaks the CIDRs until the
		// next restart than risks handing them out twice.
		if !apierrors.IsServerTimeout(err) {
			alloc.release(node.Name)
		}
		return reconcile.Result{}, err
	}
	log.FromContext(ctx).Info("Set node PodCIDR", "podCIDRs", cidrStrings(cidrs))
	return reconcile.Result{}, nil
}

// allocator is the allocator, built on first use from every node the cache holds. A node
// whose CIDRs cannot be marked is logged and left to its own Reconcile, which reports the
// error as upstream's sync does.
func (r *Reconciler) allocator(ctx context.Context) (*allocator, error) {
	r.built.Lock()
	defer r.built.Unlock()
	if r.alloc != nil {
		return r.alloc, nil
	}
	logger := log.FromContext(ctx)
	alloc, err := newAllocator(r.Config, logger)
	if err != nil {
		return nil, err
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return nil, err
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if len(n.Spec.PodCIDRs) == 0 {
			continue
		}
		if err := alloc.occupy(n.Name, n.UID, n.Spec.PodCIDRs); err != nil {
			logger.Error(err, "Marking a node's CIDRs as used", "node", n.Name)
		}
	}
	r.alloc = alloc
	return alloc, nil
}

// patchCIDRs sets spec.podCIDR and spec.podCIDRs with upstream's strategic merge patch,
// tried patchAttempts times. The API server refuses to change either once set.
func (r *Reconciler) patchCIDRs(ctx context.Context, node *corev1.Node, cidrs []string) error {
	patch, err := json.Marshal(map[string]any{"spec": map[string]any{"podCIDR": cidrs[0], "podCIDRs": cidrs}})
	if err != nil {
		return err
	}
	for range patchAttempts {
		if err = r.Client.Patch(ctx, node.DeepCopy(), client.RawPatch(types.StrategicMergePatchType, patch)); err == nil {
			return nil
		}
	}
	log.FromContext(ctx).Error(err, "Failed to update node PodCIDR after multiple attempts", "podCIDRs", cidrs)
	return fmt.Errorf("failed to patch node CIDR: %w", err)
}

// recordStatusChange is upstream's node status Event, reported by its cidrAllocator.
func (r *Reconciler) recordStatusChange(node *corev1.Node, status string) {
	r.Recorder.Eventf(node, nil, corev1.EventTypeNormal, status, "NodeStatusChange",
		"Node %s status is now: %s", node.Name, status)
}

// SetupWithManager registers the Reconciler with upstream's 30 workers.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Client == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client and Recorder are required", ControllerName)
	}
	return ctrl.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Node{}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
