// Package podgc is upstream's pod-garbage-collector-controller: every 20 seconds it
// force-deletes the terminated pods above --terminated-pod-gc-threshold, the pods bound to
// nodes that no longer exist, the terminating pods no node will ever finish (unscheduled),
// and the terminating pods of nodes declared out of service.
package podgc

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/parallel"
	"github.com/kcm/kcm/internal/setup"
)

const (
	// ControllerName is upstream's controller name.
	ControllerName = "pod-garbage-collector-controller"
	// DefaultPeriod is how often upstream collects (gcCheckPeriod).
	DefaultPeriod = 20 * time.Second
	// DefaultQuarantine is how long upstream waits for a node that pods are bound to but the
	// cache does not know to show up, before asking the API server (quarantineTime).
	DefaultQuarantine = 40 * time.Second

	// ReasonDeletionByPodGC is the reason of the DisruptionTarget condition podgc gives the
	// pods of deleted nodes.
	ReasonDeletionByPodGC = "DeletionByPodGC"
)

// How many deletions of one kind are in flight at once, as upstream: the terminated pods
// above the threshold and the terminating pods of out-of-service nodes all at once (one
// goroutine each; the client's rate limit paces them), the pods of deleted nodes and the
// unscheduled terminating pods one after the other.
const (
	allAtOnce = 0
	oneByOne  = 1
)

// gcRequest is the one request of the controller: a pass over all pods, which queues itself
// again Period after it ends.
var gcRequest = reconcile.Request{NamespacedName: types.NamespacedName{Name: "pod-garbage-collection"}}

// Reconciler is the periodic pass of the pod garbage collector.
type Reconciler struct {
	// Client reads pods and nodes from the cache (which must index pods by index.PodNodeName)
	// and writes through the controller's own connection.
	Client client.Client
	// APIReader confirms, around the cache, that a node is gone.
	APIReader client.Reader
	// Pods, when set, returns the shared cache's own pods, which the pass only reads. Setup
	// sets it to the pod informer's store (cachedPods); without it the pass lists pods
	// through Client, as unit tests over a fake client do.
	Pods  func(ctx context.Context) ([]*corev1.Pod, error)
	Clock clock.PassiveClock

	// TerminatedPodThreshold is --terminated-pod-gc-threshold: terminated pods above it are
	// deleted, evicted then oldest first; 0 or less keeps them all.
	TerminatedPodThreshold int
	// Period is the time between the end of a pass and the start of the next.
	Period time.Duration
	// Quarantine is how long a node missing from the cache is given to show up.
	Quarantine time.Duration

	// quarantined is only used by Reconcile, which never runs twice at once for the single
	// request.
	quarantined quarantine
}

// What pod-garbage-collector's own client does (reads of the shared cache run as kcm's
// identity): pods not yet finished patched to Failed through their status, as upstream's
// PatchPodStatus, and deleted; a node missing from the cache confirmed gone by a live get
// (APIReader), as upstream's kubeClient Get. Pods are never read live: the role grants no get
// on them.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get

// Reconcile runs one pass of the collector and comes back after Period. Failures are logged
// and retried by the next pass, as upstream does: the pass must keep its rhythm rather than
// back off.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	if err := r.gc(ctx); err != nil {
		log.FromContext(ctx).Error(err, "Pod garbage collection pass failed")
	}
	return reconcile.Result{RequeueAfter: r.Period}, nil
}

// gc is one pass, in upstream's order: terminated pods above the threshold, terminating pods
// of out-of-service nodes, pods of deleted nodes, unscheduled terminating pods.
func (r *Reconciler) gc(ctx context.Context) error {
	// Read only: the pods and nodes are the cache's own objects.
	all, err := r.allPods(ctx)
	if err != nil {
		return fmt.Errorf("listing pods: %w", err)
	}
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes, client.UnsafeDisableDeepCopy); err != nil {
		return fmt.Errorf("listing nodes: %w", err)
	}
	p := &pass{r: r, now: r.Clock.Now(), done: map[types.UID]bool{}}
	var errs []error
	if victims := terminatedToDelete(all, r.TerminatedPodThreshold); len(victims) > 0 {
		log.FromContext(ctx).Info("Garbage collecting pods", "numPods", len(victims))
		errs = append(errs, p.collect(ctx, victims, nil, "terminated", allAtOnce))
	}
	errs = append(errs, p.outOfService(ctx, nodes.Items))
	errs = append(errs, p.orphaned(ctx, all, nodes.Items))
	errs = append(errs, p.unscheduledTerminating(ctx))
	return errors.Join(errs...)
}

// pass holds what one pass has done, so that a pod is deleted once even when it qualifies
// twice (e.g. terminated and bound to a deleted node).
type pass struct {
	r    *Reconciler
	now  time.Time
	done map[types.UID]bool
}

// outOfService deletes the terminating pods of nodes that are not Ready and are tainted
// node.kubernetes.io/out-of-service: their kubelet will not finish them.
func (p *pass) outOfService(ctx context.Context, nodes []corev1.Node) error {
	var victims []*corev1.Pod
	for i := range nodes {
		if !isOutOfService(&nodes[i]) {
			continue
		}
		pods, err := p.r.podsOn(ctx, nodes[i].Name)
		if err != nil {
			return err
		}
		for _, pod := range pods {
			if pod.DeletionTimestamp != nil {
				victims = append(victims, pod)
			}
		}
	}
	if len(victims) == 0 {
		return nil
	}
	log.FromContext(ctx).V(4).Info("Garbage collecting pods that are terminating on nodes tainted with node.kubernetes.io/out-of-service", "numPods", len(victims))
	return p.collect(ctx, victims, nil, "out-of-service", allAtOnce)
}

// orphaned deletes the pods bound to nodes that no longer exist. A node missing from the
// cache is quarantined first; when the quarantine ends and the node is still missing from
// the cache, the API server must confirm that it is gone.
func (p *pass) orphaned(ctx context.Context, pods []*corev1.Pod, nodes []corev1.Node) error {
	known := make(map[string]bool, len(nodes))
	for i := range nodes {
		known[nodes[i].Name] = true
	}
	if p.r.quarantined == nil {
		p.r.quarantined = quarantine{}
	}
	for _, pod := range pods {
		if pod.Spec.NodeName != "" && !known[pod.Spec.NodeName] {
			p.r.quarantined.add(pod.Spec.NodeName, p.now.Add(p.r.Quarantine))
		}
	}
	logger := log.FromContext(ctx)
	var errs []error
	for _, name := range p.r.quarantined.popDue(p.now) {
		if known[name] {
			continue
		}
		gone, err := p.r.nodeGone(ctx, name)
		if err != nil {
			// The pods' next pass quarantines the node again.
			errs = append(errs, fmt.Errorf("getting node %s: %w", name, err))
			continue
		}
		if !gone {
			continue
		}
		victims, err := p.r.podsOn(ctx, name)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		for _, pod := range victims {
			logger.V(2).Info("Found orphaned Pod assigned to the Node, deleting", "pod", client.ObjectKeyFromObject(pod), "node", name)
		}
		errs = append(errs, p.collect(ctx, victims, &corev1.PodCondition{
			Type:    corev1.DisruptionTarget,
			Status:  corev1.ConditionTrue,
			Reason:  ReasonDeletionByPodGC,
			Message: "PodGC: node no longer exists",
		}, "orphaned", oneByOne))
	}
	return errors.Join(errs...)
}

// unscheduledTerminating deletes the terminating pods that no node was ever assigned: no
// kubelet will finish them.
func (p *pass) unscheduledTerminating(ctx context.Context) error {
	pods, err := p.r.podsOn(ctx, "")
	if err != nil {
		return err
	}
	var victims []*corev1.Pod
	for _, pod := range pods {
		if pod.DeletionTimestamp != nil {
			log.FromContext(ctx).V(2).Info("Found unscheduled terminating Pod not assigned to any Node, deleting", "pod", client.ObjectKeyFromObject(pod))
			victims = append(victims, pod)
		}
	}
	return p.collect(ctx, victims, nil, "unscheduled", oneByOne)
}

// collect force-deletes the pods not already deleted in this pass, limit at a time
// (allAtOnce: all of them).
func (p *pass) collect(ctx context.Context, pods []*corev1.Pod, cond *corev1.PodCondition, reason string, limit int) error {
	var todo []*corev1.Pod
	for _, pod := range pods {
		if !p.done[pod.UID] {
			p.done[pod.UID] = true
			todo = append(todo, pod)
		}
	}
	if limit == allAtOnce {
		limit = len(todo)
	}
	return parallel.Do(ctx, len(todo), limit, func(ctx context.Context, i int) error {
		pod := todo[i]
		err := p.r.markFailedAndDelete(ctx, pod, cond, p.now)
		recordForceDelete(pod.Namespace, reason, err)
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("force deleting %s pod %s: %w", reason, client.ObjectKeyFromObject(pod), err)
		}
		return nil
	})
}

// markFailedAndDelete is upstream's markFailedAndDeletePodWithCondition: a pod that has not
// finished is first patched to phase Failed (with cond, if given), so that whoever waits for
// it to finish (a Job, a finalizer) sees it fail even though no kubelet will report it; then
// the pod is deleted with grace period 0.
func (r *Reconciler) markFailedAndDelete(ctx context.Context, pod *corev1.Pod, cond *corev1.PodCondition, now time.Time) error {
	log.FromContext(ctx).Info("PodGC is force deleting Pod", "pod", client.ObjectKeyFromObject(pod))
	// pod belongs to the cache: the writes go through a fresh object.
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name}}
	if pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed {
		patch, err := statusPatch(pod.UID, pod.Status, failedStatus(pod, cond, now))
		if err != nil {
			return err
		}
		if err := r.Client.Status().Patch(ctx, target, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			return fmt.Errorf("marking failed: %w", err)
		}
	}
	return r.Client.Delete(ctx, target, client.GracePeriodSeconds(0), client.Preconditions{UID: &pod.UID})
}

// statusPatch is upstream's pod status patch: a strategic merge patch from the old status to
// the new one that also names the pod's UID, so that it cannot apply to a namesake.
func statusPatch(uid types.UID, oldStatus, newStatus corev1.PodStatus) ([]byte, error) {
	oldData, err := json.Marshal(corev1.Pod{Status: oldStatus})
	if err != nil {
		return nil, err
	}
	newData, err := json.Marshal(corev1.Pod{ObjectMeta: metav1.ObjectMeta{UID: uid}, Status: newStatus})
	if err != nil {
		return nil, err
	}
	return strategicpatch.CreateTwoWayMergePatch(oldData, newData, corev1.Pod{})
}

// allPods is every pod of the cache, read only: through Pods when set, else listed.
func (r *Reconciler) allPods(ctx context.Context) ([]*corev1.Pod, error) {
	if r.Pods != nil {
		return r.Pods(ctx)
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// cachedPods reads the pod informer's store itself. A List from the cache, even without deep
// copies, copies every Pod struct (about 1.2 KB) into the PodList's items: 24 MB of garbage per
// pass at 20,000 pods, every 20 seconds. The store hands out its own pointers, 24 bytes a pod.
func cachedPods(c cache.Cache) func(ctx context.Context) ([]*corev1.Pod, error) {
	return func(ctx context.Context) ([]*corev1.Pod, error) {
		inf, err := c.GetInformer(ctx, &corev1.Pod{})
		if err != nil {
			return nil, err
		}
		s, ok := inf.(interface{ GetStore() toolscache.Store })
		if !ok {
			return nil, fmt.Errorf("the pod informer (%T) has no store", inf)
		}
		return podsIn(s.GetStore()), nil
	}
}

// podsIn is the pods of a store, as the store's own pointers.
func podsIn(s toolscache.Store) []*corev1.Pod {
	objs := s.List()
	out := make([]*corev1.Pod, 0, len(objs))
	for _, o := range objs {
		if p, ok := o.(*corev1.Pod); ok {
			out = append(out, p)
		}
	}
	return out
}

// podsOn lists from the cache the pods bound to a node ("" for unscheduled pods).
func (r *Reconciler) podsOn(ctx context.Context, node string) ([]*corev1.Pod, error) {
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.MatchingFields{index.PodNodeName: node}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, fmt.Errorf("listing pods on node %q: %w", node, err)
	}
	out := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// nodeGone asks the API server, not the cache, whether a node exists.
func (r *Reconciler) nodeGone(ctx context.Context, name string) (bool, error) {
	err := r.APIReader.Get(ctx, types.NamespacedName{Name: name}, &corev1.Node{})
	if apierrors.IsNotFound(err) {
		return true, nil
	}
	return false, err
}

// SetupWithManager runs the collector as one request that a source queues once at start and
// that requeues itself every Period; the cache must index pods by index.PodNodeName.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.APIReader == nil {
		return fmt.Errorf("%s: Client and APIReader are required", ControllerName)
	}
	if r.Period <= 0 || r.Quarantine <= 0 {
		return fmt.Errorf("%s: Period and Quarantine must be positive", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.quarantined = quarantine{}
	start := source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
		q.Add(gcRequest)
		return nil
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		WatchesRawSource(start).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName), MaxConcurrentReconciles: 1}).
		Complete(r)
}
