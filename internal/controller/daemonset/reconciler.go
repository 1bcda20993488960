// Package daemonset is upstream's daemonset-controller: it runs one pod of a DaemonSet on
// every node the pod template fits (node selector, required node affinity, taints against
// tolerations), pins each pod to its node for the scheduler, replaces failed pods with a
// backoff, rolls out template changes (RollingUpdate with maxUnavailable/maxSurge, or
// OnDelete) through ControllerRevisions, and reports the counts in status.
package daemonset

import (
	"context"
	"errors"
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/util/flowcontrol"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/expectations"
	"github.com/kcm/kcm/internal/owned"
	"github.com/kcm/kcm/internal/ownership"
	"github.com/kcm/kcm/internal/parallel"
	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/pod"
	"github.com/kcm/kcm/internal/staleness"
	"github.com/kcm/kcm/internal/track"
)

const (
	// ControllerName is upstream's controller name, used for Events.
	ControllerName = "daemonset-controller"
	// BurstReplicas caps the pods created or deleted in one sync, as upstream.
	BurstReplicas = 250
	// Failed pods on a node are replaced after 1s, doubling up to 15m, as upstream.
	failedPodsBackoffInitial = time.Second
	failedPodsBackoffMax     = 15 * time.Minute
	backoffGCInterval        = time.Minute
)

// Reconciler keeps the pods of one DaemonSet in line with the nodes.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache: the owner's fresh state before adopting.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// FailedPodsBackoff delays replacing failed pods per DaemonSet and node; upstream's
	// 1s..15m when nil.
	FailedPodsBackoff *flowcontrol.Backoff
	// Stale skips a sync while the cache has not caught up with our own writes for the
	// DaemonSet (StaleControllerConsistencyDaemonSet); nil: off.
	Stale *staleness.Guard
	// ComparisonOperators lets Gt and Lt tolerations tolerate taints (upstream's
	// TaintTolerationComparisonOperators gate, alpha and off in v1.37).
	ComparisonOperators bool

	creations *expectations.Expectations
	deletions *expectations.Expectations
}

// What daemon-set-controller's own client does (reads of the shared cache, nodes' and pods'
// included, run as kcm's identity): a live get of the DaemonSet before adopting, the status
// update, ControllerRevisions created (blocking owner reference), renumbered by update,
// adopted or released by patch, and deleted, pods created, relabelled, adopted or released
// by patch, and deleted.
//
// +kubebuilder:rbac:groups=apps,resources=daemonsets,verbs=get
// +kubebuilder:rbac:groups=apps,resources=daemonsets/status,verbs=update
// +kubebuilder:rbac:groups=apps,resources=daemonsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=create;patch;delete

// Reconcile is upstream's syncDaemonSet: revisions, then the core loop (a pod per eligible
// node, none elsewhere), then the rolling update, history cleanup and status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if res, skip := r.Stale.Skip(ctx, req.NamespacedName); skip {
		return res, nil
	}
	ds := &appsv1.DaemonSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, ds); err != nil {
		if apierrors.IsNotFound(err) {
			r.creations.Forget(req.NamespacedName)
			r.deletions.Forget(req.NamespacedName)
			r.Stale.Clear(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(ds.Spec.Selector)
	if err != nil {
		r.Recorder.Eventf(ds, nil, corev1.EventTypeWarning, "InvalidSelector", "Sync", "Invalid selector: %v", err)
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("invalid selector: %w", err))
	}
	if selector.Empty() {
		r.Recorder.Eventf(ds, nil, corev1.EventTypeWarning, "SelectingAll", "Sync", "This daemon set is selecting all pods. A non-empty selector is required.")
		return reconcile.Result{}, nil
	}
	// Read before listing pods: a sync that starts with stale expectations must not act.
	satisfied := r.satisfied(req.NamespacedName)

	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return reconcile.Result{}, err
	}
	cur, old, err := r.constructHistory(ctx, ds, selector)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("constructing history: %w", err)
	}
	hash := revisionHash(cur)
	pods, err := r.claimPods(ctx, ds, selector)
	if err != nil {
		return reconcile.Result{}, err
	}
	nodePods := byNode(pods)

	var result reconcile.Result
	var syncErr error
	if satisfied && ds.DeletionTimestamp == nil {
		result, syncErr = r.manage(ctx, ds, nodes.Items, nodePods, hash)
		if syncErr == nil && r.satisfied(req.NamespacedName) && ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType {
			// Read the pods again, as upstream: what manage created may be observed already
			// and must count against the budget.
			if pods, syncErr = r.claimPods(ctx, ds, selector); syncErr == nil {
				nodePods = byNode(pods)
				syncErr = r.rollingUpdate(ctx, ds, nodes.Items, nodePods, hash)
			}
		}
		if syncErr == nil {
			syncErr = r.cleanupHistory(ctx, ds, old, liveHashes(pods))
		}
	}

	now := r.Clock.Now()
	status := calculateStatus(ds, nodes.Items, nodePods, hash, now, r.ComparisonOperators)
	if err := r.updateStatus(ctx, ds, status); err != nil {
		if apierrors.IsConflict(err) && syncErr == nil {
			// Another writer changed the DaemonSet since the cache's copy (the spec, a
			// label): recompute from the newer copy, which the cache is about to deliver.
			log.FromContext(ctx).V(4).Info("Status not written: the cache is behind the DaemonSet", "err", err)
			return reconcile.Result{RequeueAfter: staleness.Recheck}, nil
		}
		return reconcile.Result{}, errors.Join(syncErr, err)
	}
	if syncErr != nil {
		return reconcile.Result{}, syncErr
	}
	// A ready pod becomes available minReadySeconds later: come back then.
	if ds.Spec.MinReadySeconds > 0 && status.NumberReady != status.NumberAvailable {
		after := time.Duration(ds.Spec.MinReadySeconds) * time.Second
		if result.RequeueAfter == 0 || after < result.RequeueAfter {
			result.RequeueAfter = after
		}
	}
	return result, nil
}

func (r *Reconciler) satisfied(key types.NamespacedName) bool {
	return r.creations.Satisfied(key) && r.deletions.Satisfied(key)
}

// claimPods lists, from the cache, the pods the DaemonSet controls and the orphans of its
// namespace, and claims them. Terminal pods already being deleted are left out, as upstream.
func (r *Reconciler) claimPods(ctx context.Context, ds *appsv1.DaemonSet, selector labels.Selector) ([]*corev1.Pod, error) {
	all, err := owned.Pods(ctx, r.Client, ds)
	if err != nil {
		return nil, err
	}
	var candidates []*corev1.Pod
	for _, p := range all {
		if p.DeletionTimestamp != nil && pod.IsTerminal(p) {
			continue
		}
		candidates = append(candidates, p)
	}
	claimer := &ownership.Claimer{Client: r.Client, Fresh: r.APIReader, Owner: ds, OwnerGVK: dsGVK, Selector: selector}
	return ownership.Claim(ctx, claimer, candidates)
}

// byNode groups pods by the node they target; pods targeting none are left out.
func byNode(pods []*corev1.Pod) map[string][]*corev1.Pod {
	out := map[string][]*corev1.Pod{}
	for _, p := range pods {
		if n := targetNode(p); n != "" {
			out[n] = append(out[n], p)
		}
	}
	return out
}

func liveHashes(pods []*corev1.Pod) map[string]bool {
	out := map[string]bool{}
	for _, p := range pods {
		if h := p.Labels[appsv1.DefaultDaemonSetUniqueLabelKey]; h != "" {
			out[h] = true
		}
	}
	return out
}

// allowsSurge is upstream's AllowsSurge: maxSurge scaled to one node, rounded up, is positive.
func allowsSurge(ds *appsv1.DaemonSet) bool {
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ds.Spec.UpdateStrategy.Type != appsv1.RollingUpdateDaemonSetStrategyType || ru == nil || ru.MaxSurge == nil {
		return false
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 1, true)
	return err == nil && v > 0
}

// manage is upstream's manage: a pod on every eligible node without one, failed pods
// deleted once their node's backoff allows, succeeded pods deleted at once, excess pods and pods on nodes they no longer
// fit deleted, unscheduled pods for vanished nodes deleted.
func (r *Reconciler) manage(ctx context.Context, ds *appsv1.DaemonSet, nodes []corev1.Node, nodePods map[string][]*corev1.Pod, hash string) (reconcile.Result, error) {
	generation := templateGeneration(ds)
	surge := allowsSurge(ds)
	var result reconcile.Result
	var create []string
	var remove []*corev1.Pod
	known := map[string]bool{}
	for i := range nodes {
		node := &nodes[i]
		known[node.Name] = true
		plan := planNode(nodePods[node.Name], nodeEligibility(node, ds, r.ComparisonOperators), surge, hash, generation)
		if plan.create {
			create = append(create, node.Name)
		}
		remove = append(remove, plan.remove...)
		for _, p := range plan.failed {
			key := fmt.Sprintf("%s/%d/%s", ds.UID, ds.Status.ObservedGeneration, node.Name)
			now := r.FailedPodsBackoff.Clock.Now()
			if r.FailedPodsBackoff.IsInBackOffSinceUpdate(key, now) {
				delay := r.FailedPodsBackoff.Get(key)
				log.FromContext(ctx).V(4).Info("Deleting failed pod on node has been limited by backoff", "pod", pod.Key(p), "node", node.Name, "delay", delay)
				if result.RequeueAfter == 0 || delay < result.RequeueAfter {
					result.RequeueAfter = delay
				}
				continue
			}
			r.FailedPodsBackoff.Next(key, now)
			r.Recorder.Eventf(ds, p, corev1.EventTypeWarning, "FailedDaemonPod", "Delete",
				"Found failed daemon pod %s/%s on node %s, will try to kill it", p.Namespace, p.Name, node.Name)
			remove = append(remove, p)
		}
		for _, p := range plan.succeeded {
			r.Recorder.Eventf(ds, p, corev1.EventTypeNormal, "SucceededDaemonPod", "Delete",
				"Found succeeded daemon pod %s/%s on node %s, will try to delete it", p.Namespace, p.Name, node.Name)
			remove = append(remove, p)
		}
	}
	for node, pods := range nodePods {
		if known[node] {
			continue
		}
		for _, p := range pods {
			if p.Spec.NodeName == "" && p.DeletionTimestamp == nil {
				remove = append(remove, p)
			}
		}
	}
	if err := r.syncNodes(ctx, ds, remove, create, hash); err != nil {
		return reconcile.Result{}, err
	}
	return result, nil
}

// rollingUpdate applies one step of the RollingUpdate strategy (see rollingUpdate in rollout.go).
func (r *Reconciler) rollingUpdate(ctx context.Context, ds *appsv1.DaemonSet, nodes []corev1.Node, nodePods map[string][]*corev1.Pod, hash string) error {
	byName := map[string]*corev1.Node{}
	desired := 0
	for i := range nodes {
		byName[nodes[i].Name] = &nodes[i]
		if nodeEligibility(&nodes[i], ds, r.ComparisonOperators).shouldRun {
			desired++
		}
	}
	maxSurge, maxUnavailable := rollingBudget(ds, desired)
	onNodes := map[string][]*corev1.Pod{}
	for n, pods := range nodePods {
		if byName[n] != nil {
			onNodes[n] = pods
		}
	}
	remove, create := rollingUpdate(rolloutInput{
		nodePods: onNodes,
		eligible: func(n string) eligibility {
			return nodeEligibility(byName[n], ds, r.ComparisonOperators)
		},
		hash:           hash,
		generation:     templateGeneration(ds),
		minReadySecs:   ds.Spec.MinReadySeconds,
		now:            r.Clock.Now(),
		maxSurge:       maxSurge,
		maxUnavailable: maxUnavailable,
		desired:        desired,
	})
	return r.syncNodes(ctx, ds, remove, create, hash)
}

// syncNodes deletes pods and creates pods for nodes, at most BurstReplicas of each, creations
// in slow-start batches, all recorded in the expectations first.
func (r *Reconciler) syncNodes(ctx context.Context, ds *appsv1.DaemonSet, remove []*corev1.Pod, create []string, hash string) error {
	key := types.NamespacedName{Namespace: ds.Namespace, Name: ds.Name}
	if len(create) > BurstReplicas {
		create = create[:BurstReplicas]
	}
	if len(remove) > BurstReplicas {
		remove = remove[:BurstReplicas]
	}
	if len(create) == 0 && len(remove) == 0 {
		return nil
	}
	log.FromContext(ctx).V(2).Info("Syncing nodes", "creating", len(create), "deleting", len(remove))
	keys := make([]string, len(remove))
	for i, p := range remove {
		keys[i] = pod.Key(p)
	}
	r.deletions.ExpectDeletions(key, keys)

	var errs []error
	_, err := pod.CreateExpected(r.creations, key, len(create), func(i int) error {
		p := newPod(ds, create[i], hash)
		err := pod.Create(ctx, r.Client, r.Recorder, ds, p)
		switch {
		case err == nil:
			r.Stale.WroteAt(client.ObjectKeyFromObject(ds), ds.UID, podsResource, p.ResourceVersion)
		case pod.NamespaceTerminating(err):
			return nil
		case apierrors.IsTimeout(err):
			// The pod may still be created: its creation is then observed; if not, the
			// expectation expires, as upstream.
			return nil
		}
		return err
	})
	if err != nil {
		errs = append(errs, err)
	}

	// All deletions at once, as upstream (at most BurstReplicas).
	errs = append(errs, parallel.Do(ctx, len(remove), len(remove), func(ctx context.Context, i int) error {
		p := remove[i]
		err := pod.Delete(ctx, r.Client, r.Recorder, ds, p)
		if err != nil {
			// A deletion that failed will never be observed.
			r.deletions.DeletionObserved(key, pod.Key(p))
		}
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}))
	return errors.Join(errs...)
}

// calculateStatus is upstream's updateDaemonSetStatus: counts over the nodes, judging each
// node by its oldest pod (comparisonOperators: the TaintTolerationComparisonOperators gate).
func calculateStatus(ds *appsv1.DaemonSet, nodes []corev1.Node, nodePods map[string][]*corev1.Pod, hash string, now time.Time, comparisonOperators bool) appsv1.DaemonSetStatus {
	s := appsv1.DaemonSetStatus{
		ObservedGeneration: ds.Generation,
		CollisionCount:     ds.Status.CollisionCount,
		Conditions:         ds.Status.Conditions,
	}
	generation := templateGeneration(ds)
	for i := range nodes {
		e := nodeEligibility(&nodes[i], ds, comparisonOperators)
		pods := nodePods[nodes[i].Name]
		scheduled := len(pods) > 0
		if !e.shouldRun {
			if scheduled {
				s.NumberMisscheduled++
			}
			continue
		}
		s.DesiredNumberScheduled++
		if !scheduled {
			continue
		}
		s.CurrentNumberScheduled++
		sorted := append([]*corev1.Pod(nil), pods...)
		sortOldestFirst(sorted)
		p := sorted[0]
		if pod.IsReady(p) {
			s.NumberReady++
			if pod.IsAvailable(p, ds.Spec.MinReadySeconds, now) {
				s.NumberAvailable++
			}
		}
		if isUpdated(p, hash, generation) {
			s.UpdatedNumberScheduled++
		}
	}
	s.NumberUnavailable = s.DesiredNumberScheduled - s.NumberAvailable
	return s
}

// updateStatus updates status when it differs from the DaemonSet's.
func (r *Reconciler) updateStatus(ctx context.Context, ds *appsv1.DaemonSet, status appsv1.DaemonSetStatus) error {
	orig := &appsv1.DaemonSet{}
	if err := r.Client.Get(ctx, client.ObjectKeyFromObject(ds), orig); err != nil {
		return client.IgnoreNotFound(err)
	}
	if equality.Semantic.DeepEqual(orig.Status, status) {
		return nil
	}
	updated := orig.DeepCopy()
	updated.Status = status
	if err := patch.Status(ctx, r.Client, updated); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	r.Stale.WroteAt(client.ObjectKeyFromObject(updated), updated.UID, daemonSetsResource, updated.ResourceVersion)
	return nil
}

// init fills in the defaults and the expectations.
func (r *Reconciler) init() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.FailedPodsBackoff == nil {
		r.FailedPodsBackoff = flowcontrol.NewBackOff(failedPodsBackoffInitial, failedPodsBackoffMax)
	}
	r.creations = expectations.New(r.Clock)
	r.deletions = expectations.New(r.Clock)
}

// SetupWithManager watches DaemonSets, their pods (by controller reference), their
// revisions, and nodes (mapped to the DaemonSets whose eligibility they change).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	r.init()
	// What the per-object view (/debug/controllers/<controller>/objects/...) shows of a key.
	track.For(ControllerName).ExpectationsFrom(expectations.Views(r.creations, r.deletions))
	track.For(ControllerName).StaleFrom(r.Stale.View)
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		t := time.NewTicker(backoffGCInterval)
		defer t.Stop()
		for {
			select {
			case <-ctx.Done():
				return nil
			case <-t.C:
				r.FailedPodsBackoff.GC()
			}
		}
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&appsv1.DaemonSet{}).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&corev1.Pod{}, r.podHandler()).
		Watches(&corev1.Node{}, &nodeHandler{r: r}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// The StaleControllerConsistencyDaemonSet guard, counted in
// daemonset_controller_stale_sync_skips_total: a DaemonSet's sync waits for the cache to show
// its own writes, the pods it created and its status.
var (
	podsResource       = staleness.Pods
	daemonSetsResource = schema.GroupResource{Group: "apps", Resource: "daemonsets"}
	staleGuard         = staleness.ForOwner("daemonset_controller", "DaemonSet",
		staleness.Watched{Resource: podsResource, Object: &corev1.Pod{}},
		staleness.Watched{Resource: daemonSetsResource, Object: &appsv1.DaemonSet{}})
)
