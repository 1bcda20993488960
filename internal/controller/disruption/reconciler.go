// Package disruption is upstream's disruption-controller: for every PodDisruptionBudget it
// counts the selected pods that are healthy and the pods their controllers expect, and writes
// how many disruptions the eviction API may allow (status.disruptionsAllowed and the
// DisruptionAllowed condition). It also clears DisruptionTarget pod conditions that the
// eviction API added to pods that were then not deleted.
package disruption

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/pod"
)

// ControllerName is upstream's name for the controller and its client.
const ControllerName = "disruption-controller"

// EventSource is the source.component of its Events: upstream's disruption controller
// reports as "controllermanager".
const EventSource = "controllermanager"

// Reconciler keeps the status of one PodDisruptionBudget.
type Reconciler struct {
	// Client reads pods, budgets and workload controllers from the cache; /scale and
	// writes go to the API server.
	Client   client.Client
	Recorder recorder.EventRecorder
	// Discovery tells a resource without a scale subresource from a missing controller.
	Discovery ResourceLister
	Clock     clock.PassiveClock
}

// What disruption-controller's own client does (reads of the shared cache, of pods, budgets
// and workload controllers, and Events run as kcm's identity): the budget's status update
// and live gets of custom controllers' scale subresource.
//
// +kubebuilder:rbac:groups=policy,resources=poddisruptionbudgets/status,verbs=update
// +kubebuilder:rbac:groups=*,resources=*/scale,verbs=get

// Reconcile recomputes the budget's status from its pods. When that fails (a pod's
// controller has no scale, say) it falls safe: no disruption allowed, condition SyncFailed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pdb := &policyv1.PodDisruptionBudget{}
	if err := r.Client.Get(ctx, req.NamespacedName, pdb); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	result, err := r.sync(ctx, pdb)
	if err == nil || apierrors.IsConflict(err) {
		// A conflict is retried without failing safe: the budget changed under us.
		return result, err
	}
	log.FromContext(ctx).Error(err, "Failed to sync PodDisruptionBudget")
	// As upstream, a fail-safe that was written is not retried: the next pod or budget
	// event syncs again.
	if werr := r.writeStatus(ctx, pdb, failedStatus(pdb, err, r.Clock.Now())); werr != nil {
		return reconcile.Result{}, errors.Join(err, werr)
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) sync(ctx context.Context, pdb *policyv1.PodDisruptionBudget) (reconcile.Result, error) {
	pods, err := r.podsOf(ctx, pdb)
	if err != nil {
		r.Recorder.Eventf(pdb, nil, corev1.EventTypeWarning, "NoPods", "Sync", "Failed to get pods: %v", err)
		return reconcile.Result{}, err
	}
	if len(pods) == 0 {
		r.Recorder.Eventf(pdb, nil, corev1.EventTypeNormal, "NoPods", "Sync", "No matching pods found")
	}

	expected, desired, unmanaged, err := expectedCounts(ctx, pdb.Spec, pods, r.controllerScale)
	if err != nil {
		r.Recorder.Eventf(pdb, nil, corev1.EventTypeWarning, "CalculateExpectedPodCountFailed", "Sync",
			"Failed to calculate the number of expected pods: %v", err)
		return reconcile.Result{}, err
	}
	if len(unmanaged) > 0 {
		log.FromContext(ctx).V(4).Info("Found unmanaged pods associated with this PDB", "pods", unmanaged)
		r.Recorder.Eventf(pdb, nil, corev1.EventTypeWarning, "UnmanagedPods", "Sync",
			"Pods selected by this PodDisruptionBudget (selector: %v) were found to be unmanaged. "+
				"As a result, the status of the PDB cannot be calculated correctly, which may result in undefined behavior. "+
				"To account for these pods please set \".spec.minAvailable\" field of the PDB to an integer value.", pdb.Spec.Selector)
	}

	now := r.Clock.Now()
	disrupted, expired, recheck := prunedDisruptedPods(pods, pdb.Status.DisruptedPods, now)
	for _, p := range expired {
		log.FromContext(ctx).V(1).Info("Pod was expected to be deleted but it wasn't, updating PDB",
			"pod", pod.Key(p), "disruptionTime", pdb.Status.DisruptedPods[p.Name])
		r.Recorder.Eventf(p, pdb, corev1.EventTypeWarning, "NotDeleted", "Sync",
			"Pod was expected by PDB %s/%s to be deleted but it wasn't", pdb.Namespace, pdb.Name)
	}
	healthy := countHealthy(pods, disrupted, now)
	if err := r.writeStatus(ctx, pdb, newStatus(pdb, healthy, desired, expected, disrupted)); err != nil {
		return reconcile.Result{}, err
	}
	if recheck != nil {
		// The first entry of disruptedPods expires then; the pod counts as healthy again.
		return reconcile.Result{RequeueAfter: recheck.Sub(now)}, nil
	}
	return reconcile.Result{}, nil
}

// podsOf lists, from the cache, the pods of the budget's namespace its selector matches (an
// empty selector matches every pod, as in policy/v1).
func (r *Reconciler) podsOf(ctx context.Context, pdb *policyv1.PodDisruptionBudget) ([]*corev1.Pod, error) {
	sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
	if err != nil {
		return nil, err
	}
	list := &corev1.PodList{}
	if err := r.Client.List(ctx, list, client.InNamespace(pdb.Namespace), client.MatchingLabelsSelector{Selector: sel}); err != nil {
		return nil, err
	}
	pods := make([]*corev1.Pod, len(list.Items))
	for i := range list.Items {
		pods[i] = &list.Items[i]
	}
	return pods, nil
}

// writeStatus updates status when it differs.
func (r *Reconciler) writeStatus(ctx context.Context, pdb *policyv1.PodDisruptionBudget, status policyv1.PodDisruptionBudgetStatus) error {
	if equality.Semantic.DeepEqual(pdb.Status, status) {
		return nil
	}
	pdb.Status = status
	// Optimistic: the eviction API writes disruptedPods and disruptionsAllowed too, and a
	// status computed before an eviction must not overwrite the eviction's (a conflict
	// retries instead).
	if err := patch.Status(ctx, r.Client, pdb); err != nil {
		return fmt.Errorf("updating PodDisruptionBudget status: %w", err)
	}
	return nil
}

// budgetsOfPod lists the budgets of the pod's namespace whose selector matches it, by name.
func (r *Reconciler) budgetsOfPod(ctx context.Context, pod client.Object) []*policyv1.PodDisruptionBudget {
	list := &policyv1.PodDisruptionBudgetList{}
	if err := r.Client.List(ctx, list, client.InNamespace(pod.GetNamespace())); err != nil {
		log.FromContext(ctx).Error(err, "Listing PodDisruptionBudgets for a pod", "pod", pod.GetName())
		return nil
	}
	var out []*policyv1.PodDisruptionBudget
	for i := range list.Items {
		pdb := &list.Items[i]
		sel, err := metav1.LabelSelectorAsSelector(pdb.Spec.Selector)
		if err != nil || !sel.Matches(labels.Set(pod.GetLabels())) {
			continue
		}
		out = append(out, pdb)
	}
	slices.SortFunc(out, func(a, b *policyv1.PodDisruptionBudget) int { return strings.Compare(a.Name, b.Name) })
	return out
}

// podHandler queues, for a pod that appears, changes or goes, every budget selecting it
// (before and after a change of labels). Like upstream's pod handlers it warns on the pod,
// at each of those events, when more than one budget selects it: the eviction API then
// refuses to evict it. Upstream picks one of the budgets to sync and names it
// ("arbitrarily"); kcm syncs them all and names the first by name.
func (r *Reconciler) podHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], budgets []*policyv1.PodDisruptionBudget) {
		for _, pdb := range budgets {
			q.Add(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: pdb.Namespace, Name: pdb.Name}})
		}
	}
	observe := func(ctx context.Context, pod client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
		budgets := r.budgetsOfPod(ctx, pod)
		if len(budgets) > 1 {
			msg := fmt.Sprintf("Pod %q/%q matches multiple PodDisruptionBudgets.  Chose %q arbitrarily.", pod.GetNamespace(), pod.GetName(), budgets[0].Name)
			log.FromContext(ctx).Info(msg)
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, "MultiplePodDisruptionBudgets", "Sync", "%s", msg)
		}
		enqueue(q, budgets)
	}
	return handler.Funcs{
		CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			observe(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			// Budgets that selected the pod before a change of labels count it no more.
			enqueue(q, r.budgetsOfPod(ctx, e.ObjectOld))
			observe(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			observe(ctx, e.Object, q)
		},
		GenericFunc: func(ctx context.Context, e event.GenericEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			enqueue(q, r.budgetsOfPod(ctx, e.Object))
		},
	}
}

// SetupWithManager watches budgets (status updates included: the eviction API's entries in
// disruptedPods need a recheck) and pods, mapped to the budgets selecting them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil || r.Discovery == nil {
		return fmt.Errorf("%s: Client, Recorder and Discovery are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&policyv1.PodDisruptionBudget{}).
		Watches(&corev1.Pod{}, r.podHandler()).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
