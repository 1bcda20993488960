package deployment

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
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
	"github.com/kcm/kcm/internal/owned"
	"github.com/kcm/kcm/internal/ownership"
	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/track"
)

// ControllerName is upstream's name, also the reporting controller of its Events.
const ControllerName = "deployment-controller"

var deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")

// Reconciler rolls out Deployments through their ReplicaSets.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache: the Deployment's fresh state before adopting.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// TerminatingReplicas reports status.terminatingReplicas (upstream's
	// DeploymentReplicaSetTerminatingReplicas gate, beta and on in v1.37).
	TerminatingReplicas bool

	// held: the keys whose last sync left its status change to the next (holdStatus).
	held sync.Map
}

// What deployment-controller's own client does (reads of the shared cache, pods' included,
// run as kcm's identity): a live get of the Deployment before adopting, its update when a
// rollback is done, the status update, ReplicaSets created with a blocking owner reference,
// updated (scale, annotations), adopted or released by patch, and deleted.
//
// +kubebuilder:rbac:groups=apps,resources=deployments,verbs=get;update
// +kubebuilder:rbac:groups=apps,resources=deployments/status,verbs=update
// +kubebuilder:rbac:groups=apps,resources=deployments/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=create;update;patch;delete

// Reconcile syncs one Deployment.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cached := &appsv1.Deployment{}
	if err := r.Client.Get(ctx, req.NamespacedName, cached); err != nil {
		if apierrors.IsNotFound(err) {
			r.held.Delete(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	s := &syncer{Reconciler: r, d: cached.DeepCopy(), written: cached, now: r.Clock.Now()}
	after, err := s.sync(ctx)
	// What the sync changed in status and annotations is written even when it failed
	// part way (a collision count, a failed creation), unless it failed on a stale cache.
	// A sync that succeeded, whose key is queued again, may leave its change to the next
	// sync, which follows at once (holdStatus); at most one sync in a row holds, so a key
	// kept dirty by a stream of ReplicaSet events still writes every other sync.
	_, heldLast := r.held.LoadAndDelete(req.NamespacedName)
	if err == nil && !heldLast && holdStatus(s.written, s.d, r.TerminatingReplicas, track.Dirty(ctx)) {
		r.held.Store(req.NamespacedName, struct{}{})
	} else if err == nil || !apierrors.IsConflict(err) {
		if werr := s.writeStatus(ctx); werr != nil {
			err = errors.Join(err, werr)
		}
	}
	switch {
	case err == nil:
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		// Everything in the namespace is going away.
		return reconcile.Result{}, nil
	case apierrors.IsConflict(err):
		// The cache was behind: the newer Deployment or ReplicaSet is on its way, and its
		// event brings the Deployment back. Nothing was decided on the stale state.
		log.FromContext(ctx).V(4).Info("Sync based on a stale cache, waiting for the newer version", "err", err)
		return reconcile.Result{}, nil
	default:
		return reconcile.Result{}, err
	}
	return reconcile.Result{RequeueAfter: after}, nil
}

// syncer is one sync of one Deployment.
type syncer struct {
	*Reconciler
	// d is the Deployment being synced; the sync changes its status and annotations.
	d *appsv1.Deployment
	// written is d as last read or written: what writeStatus diffs against.
	written *appsv1.Deployment
	now     time.Time
}

// sync is upstream's syncDeployment. It returns when the Deployment needs another look
// for its progress deadline (0: never).
func (s *syncer) sync(ctx context.Context) (time.Duration, error) {
	d := s.d
	if reflect.DeepEqual(d.Spec.Selector, &metav1.LabelSelector{}) {
		s.Recorder.Eventf(d, nil, corev1.EventTypeWarning, "SelectingAll", "Sync",
			"This deployment is selecting all pods. A non-empty selector is required.")
		d.Status.ObservedGeneration = max(d.Status.ObservedGeneration, d.Generation)
		return 0, nil
	}

	// Observe: the ReplicaSets the Deployment controls, after adopting and releasing.
	rsList, err := s.claimReplicaSets(ctx)
	if err != nil {
		return 0, err
	}

	if d.DeletionTimestamp != nil {
		return 0, s.syncStatusOnly(ctx, rsList)
	}

	// Pausing and resuming reset the progress clock. As upstream, the condition is written
	// at once: a resumed rollout replaces it within the same sync.
	if c := pausedCondition(d, metav1.NewTime(s.now)); c != nil {
		setCondition(&d.Status, *c)
		if err := s.writeStatus(ctx); err != nil {
			return 0, err
		}
	}
	if d.Spec.Paused {
		return 0, s.scaleAndSyncStatus(ctx, rsList)
	}
	if rollbackTo(d) != nil {
		// Not re-entrant: nothing else happens until the rollback request is cleared.
		return 0, s.rollback(ctx, rsList)
	}
	scaling, err := s.isScalingEvent(ctx, rsList)
	if err != nil {
		return 0, err
	}
	if scaling {
		return 0, s.scaleAndSyncStatus(ctx, rsList)
	}

	switch d.Spec.Strategy.Type {
	case appsv1.RecreateDeploymentStrategyType:
		pods, err := s.podsByReplicaSet(ctx, rsList)
		if err != nil {
			return 0, err
		}
		return s.rolloutRecreate(ctx, rsList, pods)
	case appsv1.RollingUpdateDeploymentStrategyType:
		return s.rolloutRolling(ctx, rsList)
	}
	return 0, reconcile.TerminalError(fmt.Errorf("unexpected deployment strategy type: %s", d.Spec.Strategy.Type))
}

// claimReplicaSets returns the ReplicaSets the Deployment controls: those it owns that
// still match its selector, and the orphans matching it, which it adopts.
func (s *syncer) claimReplicaSets(ctx context.Context) ([]*appsv1.ReplicaSet, error) {
	d := s.d
	selector, err := metav1.LabelSelectorAsSelector(d.Spec.Selector)
	if err != nil {
		return nil, reconcile.TerminalError(fmt.Errorf("deployment %s/%s has invalid label selector: %w", d.Namespace, d.Name, err))
	}
	// Read-only, the cache's own: every change to a ReplicaSet is made on a copy.
	controlled, orphans, err := owned.List[*appsv1.ReplicaSet](ctx, s.Client, d, func() client.ObjectList { return &appsv1.ReplicaSetList{} },
		client.UnsafeDisableDeepCopy)
	if err != nil {
		return nil, err
	}
	claimer := &ownership.Claimer{Client: s.Client, Fresh: s.APIReader, Owner: d, OwnerGVK: deploymentGVK, Selector: selector}
	return ownership.Claim(ctx, claimer, append(controlled, orphans...))
}

// podsByReplicaSet lists, from the cache, the pods of each ReplicaSet (terminating and
// finished ones included), by ReplicaSet UID. Read-only, the cache's own.
func (s *syncer) podsByReplicaSet(ctx context.Context, rsList []*appsv1.ReplicaSet) (map[types.UID][]*corev1.Pod, error) {
	out := make(map[types.UID][]*corev1.Pod, len(rsList))
	for _, rs := range rsList {
		list := &corev1.PodList{}
		if err := s.Client.List(ctx, list, client.InNamespace(rs.Namespace), client.MatchingFields{index.ControllerUID: string(rs.UID)},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		pods := make([]*corev1.Pod, len(list.Items))
		for i := range list.Items {
			pods[i] = &list.Items[i]
		}
		out[rs.UID] = pods
	}
	return out, nil
}

// writeStatus writes d's status and annotations when they differ from what was last read
// or written, through the status subresource, failing on a conflict with a newer write.
func (s *syncer) writeStatus(ctx context.Context) error {
	if !s.TerminatingReplicas {
		s.d.Status.TerminatingReplicas = nil
	}
	// Between writes a sync changes only status and annotations (a rollback's template is
	// written by clearRollbackTo, which resets written). Compared field by field rather than
	// through a merge patch: serialising both Deployments twice per sync was a visible share
	// of the controller's CPU at scale (issue 24).
	if equality.Semantic.DeepEqual(s.written.Status, s.d.Status) &&
		equality.Semantic.DeepEqual(s.written.Annotations, s.d.Annotations) {
		return nil
	}
	// Optimistic: conditions keep their transition times and the progress deadline counts
	// from them; written over a newer status they would be lost (upstream's UpdateStatus).
	if err := patch.Status(ctx, s.Client, s.d); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	s.written = s.d.DeepCopy()
	return nil
}

// holdStatus says whether a sync may leave its change of the Deployment (written, as last
// read or written, to d) unwritten because the key is dirty: queued again since the sync
// started (track.Dirty), so the next sync, which follows at once, recomputes the status from
// the ReplicaSets and writes it. Reconcile writes at the end of every sync that does not fail
// on a conflict, and a conflict's newer version brings the key back, so a held change is
// never left unwritten while the Deployment exists. What anyone waits on is never held:
// observedGeneration (kubectl rollout status, the e2e framework), annotations (the revision,
// a rollback's request), collisionCount (the next ReplicaSet's name depends on it), a
// condition's status or reason (kubectl rollout status, the progress deadline's outcome), and
// availableReplicas (the HPA's and PodDisruptionBudget's readers, and deploymentComplete).
// What a rolling update moves once per pod may wait one sync: replicas, updatedReplicas,
// readyReplicas, unavailableReplicas, terminatingReplicas, and a condition's message and
// times (the next sync compares against the status last written, so it still sees the
// progress and sets lastUpdateTime; the deadline counts from the time written).
func holdStatus(written, d *appsv1.Deployment, terminatingReplicas, dirty bool) bool {
	if !dirty {
		return false
	}
	old, now := written.Status, d.Status
	if !terminatingReplicas {
		now.TerminatingReplicas = nil
	}
	if old.ObservedGeneration != now.ObservedGeneration || old.AvailableReplicas != now.AvailableReplicas ||
		!equality.Semantic.DeepEqual(old.CollisionCount, now.CollisionCount) ||
		!equality.Semantic.DeepEqual(written.Annotations, d.Annotations) ||
		len(old.Conditions) != len(now.Conditions) {
		return false
	}
	for i, c := range now.Conditions {
		o := old.Conditions[i]
		if o.Type != c.Type || o.Status != c.Status || o.Reason != c.Reason {
			return false
		}
	}
	return true
}

// SetupWithManager watches Deployments, their ReplicaSets (orphans too, for adoption), and
// the deletion of their pods (a Recreate rollout waits for the old ones to be gone).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&appsv1.Deployment{}).
		Watches(&appsv1.ReplicaSet{}, &replicaSetHandler{client: r.Client}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.recreateDeploymentOfPod),
			builder.WithPredicates(predicate.Funcs{
				CreateFunc:  func(event.CreateEvent) bool { return false },
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
