// Package tainteviction is upstream's taint-eviction-controller: it deletes the pods bound to
// nodes with NoExecute taints they do not tolerate, at once, or when the shortest
// tolerationSeconds of the matching tolerations has passed since it saw the taint.
package tainteviction

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/index"
	podutil "github.com/kcm/kcm/internal/pod"
)

const (
	// ControllerName is upstream's name, which its Events report.
	ControllerName = "taint-eviction-controller"
	// ClientName is the client upstream gives this controller: the node-controller's, whose
	// role it shares.
	ClientName = "node-controller"
	// Workers is upstream's fixed number of workers (UpdateWorkerSize); no flag sets it.
	Workers = 8

	// EventReason is the reason of the Events announcing and cancelling an eviction.
	EventReason = "TaintManagerEviction"
	// ConditionReason and ConditionMessage are those of the DisruptionTarget condition an
	// evicted pod gets before it is deleted.
	ConditionReason  = "DeletionByTaintManager"
	ConditionMessage = "Taint manager: deleting due to NoExecute taint"
)

// Reconciler decides, pod by pod, whether the taints of the pod's node evict it, and when.
type Reconciler struct {
	Client   client.Client
	Recorder recorder.EventRecorder
	Clock    clock.PassiveClock
	// ComparisonOperators lets Gt and Lt tolerations match (upstream's
	// TaintTolerationComparisonOperators gate, alpha and off in v1.37).
	ComparisonOperators bool

	pending *pendingEvictions
}

// What taint-eviction-controller's own client (node-controller, as upstream) does (reads of
// the shared cache and Events run as kcm's identity): the DisruptionTarget condition patched
// into the pod's status, as upstream's PatchPodStatus, and the pod deleted.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// Reconcile reads the pod and its node, decides, and deletes the pod when its time has come,
// coming back at that time otherwise.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.NamespacedName
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, key, pod); err != nil {
		if apierrors.IsNotFound(err) {
			r.cancel(ctx, key)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if pod.Spec.NodeName == "" {
		return reconcile.Result{}, nil
	}
	if e, ok := r.pending.get(key); ok && e.uid != pod.UID {
		// The pod the eviction was for is gone; this one of the same name starts afresh.
		r.cancel(ctx, key)
	}

	now := r.Clock.Now()
	node := &corev1.Node{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: pod.Spec.NodeName}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		// As upstream, a node that is gone has no taints to act on, but an eviction already
		// decided still happens.
		if e, ok := r.pending.get(key); ok {
			return r.evictWhenDue(ctx, pod, e, now)
		}
		return reconcile.Result{}, nil
	}

	when, evict := evictionTime(node.Spec.Taints, pod.Spec.Tolerations, now, r.ComparisonOperators)
	if !evict {
		r.cancel(ctx, key)
		return reconcile.Result{}, nil
	}
	logger := log.FromContext(ctx).WithValues("node", node.Name)
	e, pending := r.pending.get(key)
	switch {
	case !when.After(now):
		logger.V(2).Info("Not all taints are tolerated by the pod on its node")
		if pending && e.timed {
			// A later eviction gives way to this one.
			r.cancel(ctx, key)
			pending = false
		}
		if !pending {
			e = eviction{uid: pod.UID, fireAt: now}
			r.pending.set(key, e)
		}
	case !pending:
		logger.V(2).Info("Pod tolerates the taints of its node for a time", "evictAt", when)
		e = eviction{uid: pod.UID, fireAt: when, timed: true}
		r.pending.set(key, e)
	default:
		// As upstream, an eviction already scheduled keeps its time while the pod is still
		// tolerated for a time: lengthening a toleration does not postpone it.
	}
	return r.evictWhenDue(ctx, pod, e, now)
}

// evictWhenDue deletes the pod if e's time has come, or asks to come back then.
func (r *Reconciler) evictWhenDue(ctx context.Context, pod *corev1.Pod, e eviction, now time.Time) (reconcile.Result, error) {
	if wait := e.fireAt.Sub(now); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	key := client.ObjectKeyFromObject(pod)
	if !e.announced {
		r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventReason, "Delete", "Marking for deletion Pod %s", key)
		e.announced = true
		r.pending.set(key, e)
	}
	if err := r.evict(ctx, pod, now, e.fireAt); err != nil {
		// The eviction stays pending: the retry deletes at once.
		return reconcile.Result{}, err
	}
	r.pending.remove(key)
	return reconcile.Result{}, nil
}

// evict marks the pod as a disruption target through the status subresource, then deletes
// it, as upstream, counting the deletion in upstream's metrics with its latency since
// fireAt, when the eviction became due. A pod already gone is no error.
func (r *Reconciler) evict(ctx context.Context, pod *corev1.Pod, now, fireAt time.Time) error {
	log.FromContext(ctx).Info("Deleting pod")
	if cond, changed := disruptionTarget(&pod.Status, pod.Generation, now); changed {
		found, err := podutil.PatchCondition(ctx, r.Client, pod, cond)
		if err != nil {
			return fmt.Errorf("adding the DisruptionTarget condition: %w", err)
		}
		if !found {
			return nil
		}
	}
	switch err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); {
	case apierrors.IsNotFound(err):
		// Not counted: upstream counts only the deletions the API server accepted.
		return nil
	case err != nil:
		return fmt.Errorf("deleting pod: %w", err)
	}
	// Upstream's help says seconds; its code observes the duration multiplied by a second,
	// a sample in +Inf (or, past 9s, overflowed). kcm observes the seconds the help promises.
	podDeletions.Inc()
	podDeletionLatency.Observe(r.Clock.Since(fireAt).Seconds())
	return nil
}

// cancel forgets the pod's pending eviction, announcing it when it was scheduled for later.
func (r *Reconciler) cancel(ctx context.Context, key types.NamespacedName) {
	e, ok := r.pending.remove(key)
	if !ok || !e.timed {
		return
	}
	log.FromContext(ctx).V(2).Info("Cancelling the pod's eviction")
	gone := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, UID: e.uid}}
	r.Recorder.Eventf(gone, nil, corev1.EventTypeNormal, EventReason, "Cancel", "Cancelling deletion of Pod %s", key)
}

// podsOnNode queues the pods bound to the node.
func (r *Reconciler) podsOnNode(ctx context.Context, node client.Object) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.MatchingFields{index.PodNodeName: node.GetName()}, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "Listing the pods of a node", "node", node.GetName())
		return nil
	}
	reqs := make([]reconcile.Request, len(pods.Items))
	for i := range pods.Items {
		reqs[i] = reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])}
	}
	return reqs
}

// podChanges passes the pod events that can change a decision, as upstream's pod handler:
// a bound pod appearing or going, its binding, and changes of its tolerations.
var podChanges = predicate.Funcs{
	CreateFunc: func(e event.CreateEvent) bool { return e.Object.(*corev1.Pod).Spec.NodeName != "" },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
		return old.Spec.NodeName != cur.Spec.NodeName ||
			!equality.Semantic.DeepEqual(old.Spec.Tolerations, cur.Spec.Tolerations)
	},
	DeleteFunc:  func(e event.DeleteEvent) bool { return e.Object.(*corev1.Pod).Spec.NodeName != "" },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// nodeChanges passes the node events that can change a decision for its pods: a node
// appearing, and changes of its NoExecute taints. A node going away changes nothing: its
// pods' scheduled evictions stay, as upstream.
var nodeChanges = predicate.Funcs{
	CreateFunc: func(event.CreateEvent) bool { return true },
	UpdateFunc: func(e event.UpdateEvent) bool {
		old, cur := e.ObjectOld.(*corev1.Node), e.ObjectNew.(*corev1.Node)
		return !equality.Semantic.DeepEqual(noExecuteTaints(old.Spec.Taints), noExecuteTaints(cur.Spec.Taints))
	},
	DeleteFunc:  func(event.DeleteEvent) bool { return false },
	GenericFunc: func(event.GenericEvent) bool { return false },
}

// SetupWithManager reconciles pods, and the pods of a node when its NoExecute taints change.
// The cache must index pods by index.PodNodeName.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client and Recorder are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.pending = newPendingEvictions()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(podChanges)).
		Watches(&corev1.Node{}, handler.EnqueueRequestsFromMapFunc(r.podsOnNode), builder.WithPredicates(nodeChanges)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
