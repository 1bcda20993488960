// Package ttl is upstream's ttl-controller: it annotates every node with
// node.alpha.kubernetes.io/ttl, how long the node's kubelet may cache the Secrets and
// ConfigMaps of its pods, growing with the size of the cluster.
package ttl

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName is upstream's controller name.
const ControllerName = "ttl-controller"

// Reconciler keeps each node's TTL annotation at the value the cluster size asks for.
type Reconciler struct {
	Client client.Client

	// mu guards the cluster size, kept by the node event handler as upstream keeps it, and
	// the boundary step it puts the cluster in.
	mu    sync.RWMutex
	nodes map[string]struct{}
	step  int
	ttl   int
}

// Nodes are read from the shared cache (kcm's identity); the controller's own identity
// patches their TTL annotation, as upstream's strategic merge patch.
// +kubebuilder:rbac:groups="",resources=nodes,verbs=patch

// Reconcile patches the node's annotation when it differs from the desired TTL.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, req.NamespacedName, node); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	desired := r.desired()
	current, ok := currentTTL(node)
	if ok && current == desired {
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx)
	if v, found := node.Annotations[corev1.ObjectTTLAnnotationKey]; found && !ok {
		logger.Info("Could not convert the value with annotation key for the node", "annotationValue", v, "annotationKey", corev1.ObjectTTLAnnotationKey)
	}
	orig := node.DeepCopy()
	if node.Annotations == nil {
		node.Annotations = map[string]string{}
	}
	node.Annotations[corev1.ObjectTTLAnnotationKey] = strconv.Itoa(desired)
	if err := r.Client.Patch(ctx, node, client.StrategicMergeFrom(orig)); err != nil {
		return reconcile.Result{}, fmt.Errorf("patching ttl annotation: %w", err)
	}
	logger.V(2).Info("Changed ttl annotation", "TTL", time.Duration(desired)*time.Second)
	return reconcile.Result{}, nil
}

// desired is the TTL in seconds every node should have now.
func (r *Reconciler) desired() int {
	r.mu.RLock()
	defer r.mu.RUnlock()
	return r.ttl
}

// resize records a node added (or deleted) and reports whether the cluster moved to another
// boundary step, with the new TTL.
func (r *Reconciler) resize(name string, added bool) (changed bool, ttlSeconds, nodes int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if added {
		r.nodes[name] = struct{}{}
	} else {
		delete(r.nodes, name)
	}
	step, ttl := desiredTTL(r.step, len(r.nodes))
	changed = step != r.step
	r.step, r.ttl = step, ttl
	return changed, ttl, len(r.nodes)
}

// names returns the nodes the handler has seen and not seen deleted.
func (r *Reconciler) names() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	out := make([]string, 0, len(r.nodes))
	for n := range r.nodes {
		out = append(out, n)
	}
	return out
}

// SetupWithManager watches nodes through nodeHandler, which counts them before queueing
// them, so that a node is reconciled with the TTL of a cluster that includes it.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	r.nodes = map[string]struct{}{}
	r.step, r.ttl = desiredTTL(0, 0)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&corev1.Node{}, &nodeHandler{r: r}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
