package replicaset

import (
	"context"
	"errors"
	"fmt"
	"sync"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/expectations"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/owned"
	"github.com/kcm/kcm/internal/ownership"
	"github.com/kcm/kcm/internal/parallel"
	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/pod"
	"github.com/kcm/kcm/internal/staleness"
	"github.com/kcm/kcm/internal/track"
)

// Reconciler keeps the pods of one ReplicaSet (or ReplicationController) in line.
type Reconciler struct {
	Kind Kind
	// DeletionCost: the pod-deletion-cost annotation ranks the pods to delete (upstream's
	// PodDeletionCost gate, beta and on in v1.37).
	DeletionCost bool
	Client       client.Client
	// APIReader reads around the cache: the owner's fresh state before adopting.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// Stale skips a sync while the cache has not caught up with our own writes for the
	// owner (StaleControllerConsistencyReplicaSet); nil: off.
	Stale *staleness.Guard

	expectations *expectations.Expectations
	// held: the keys whose last sync left its status change to the next (holdStatus).
	held sync.Map
}

// Reconcile observes the owner's pods, creates or deletes the difference and writes status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if res, skip := r.Stale.Skip(ctx, req.NamespacedName); skip {
		return res, nil
	}
	obj := r.Kind.New()
	if err := r.Client.Get(ctx, req.NamespacedName, obj); err != nil {
		if apierrors.IsNotFound(err) {
			r.expectations.Forget(req.NamespacedName)
			r.Stale.Clear(req.NamespacedName)
			r.held.Delete(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	rs := r.Kind.View(obj)
	// Read before listing pods: a sync that starts with stale expectations must not act.
	needsSync := r.expectations.Satisfied(req.NamespacedName)

	selector, err := metav1.LabelSelectorAsSelector(rs.Spec.Selector)
	if err != nil {
		r.Recorder.Eventf(obj, nil, corev1.EventTypeWarning, "InvalidSelector", "Sync", "Invalid selector: %v", err)
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("invalid selector: %w", err))
	}

	// Observe: the pods this owner controls, and the orphans it may adopt. Read-only, the
	// cache's own: the sync only reads them (Claim copies what it patches).
	pods, err := owned.Pods(ctx, r.Client, rs, client.UnsafeDisableDeepCopy)
	if err != nil {
		return reconcile.Result{}, err
	}
	var activeCandidates, terminating []*corev1.Pod
	for _, p := range pods {
		switch {
		case pod.IsActive(p):
			activeCandidates = append(activeCandidates, p)
		case pod.IsTerminating(p) && metav1.IsControlledBy(p, rs) && selector.Matches(labels.Set(p.Labels)):
			terminating = append(terminating, p)
		}
	}
	claimer := &ownership.Claimer{Client: r.Client, Fresh: r.APIReader, Owner: obj, OwnerGVK: r.Kind.GVK, Selector: selector}
	active, err := ownership.Claim(ctx, claimer, activeCandidates)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Act.
	var manageErr error
	if needsSync && rs.DeletionTimestamp == nil {
		manageErr = r.manageReplicas(ctx, obj, rs, active)
	}

	// Status.
	now := r.Clock.Now()
	status := calculateStatus(rs, active, terminating, manageErr, r.Kind.TerminatingReplicas, now)
	if err := r.updateStatus(ctx, obj, rs, status); err != nil {
		if apierrors.IsConflict(err) && manageErr == nil {
			// Another writer changed the owner since the cache's copy (the spec, a label):
			// recompute from the newer copy, which the cache is about to deliver.
			log.FromContext(ctx).V(4).Info("Status not written: the cache is behind the owner", "err", err)
			return reconcile.Result{RequeueAfter: staleness.Recheck}, nil
		}
		return reconcile.Result{}, errors.Join(manageErr, err)
	}
	if manageErr != nil {
		return reconcile.Result{}, manageErr
	}
	// A ready pod becomes available minReadySeconds later: come back then.
	if status.ReadyReplicas != status.AvailableReplicas {
		if next := nextAvailabilityCheck(rs, active, r.Clock.Now()); next != nil {
			return reconcile.Result{RequeueAfter: *next}, nil
		}
	}
	return reconcile.Result{}, nil
}

// manageReplicas creates or deletes the difference between spec.replicas and active pods,
// at most BurstReplicas at a time.
func (r *Reconciler) manageReplicas(ctx context.Context, obj client.Object, rs *appsv1.ReplicaSet, active []*corev1.Pod) error {
	key := types.NamespacedName{Namespace: rs.Namespace, Name: rs.Name}
	diff := len(active) - int(replicas(rs))
	logger := log.FromContext(ctx)
	switch {
	case diff < 0:
		n := min(-diff, BurstReplicas)
		logger.V(2).Info("Too few replicas", "need", replicas(rs), "creating", n)
		_, err := pod.CreateExpected(r.expectations, key, n, func(int) error {
			p := podFromTemplate(rs, r.Kind)
			err := pod.Create(ctx, r.Client, r.Recorder, obj, p)
			switch {
			case err == nil:
				r.Stale.WroteAt(client.ObjectKeyFromObject(obj), obj.GetUID(), podsResource, p.ResourceVersion)
			case pod.NamespaceTerminating(err):
				// The namespace is going away with everything in it; nothing to report.
				return nil
			}
			return err
		})
		return err
	case diff > 0:
		n := min(diff, BurstReplicas)
		related, err := r.relatedPods(ctx, rs)
		if err != nil {
			return err
		}
		now := r.Clock.Now()
		victims := podsToDelete(active, related, n, r.DeletionCost, now)
		if n < len(active) {
			for _, ratio := range deletionAgeRatios(active, victims, now) {
				sortingDeletionAgeRatio.Observe(ratio)
			}
		}
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = pod.Key(p)
		}
		r.expectations.ExpectDeletions(key, keys)
		logger.V(2).Info("Too many replicas", "need", replicas(rs), "deleting", n)
		// All at once, as upstream (at most BurstReplicas).
		return parallel.Do(ctx, len(victims), len(victims), func(ctx context.Context, i int) error {
			p := victims[i]
			err := pod.Delete(ctx, r.Client, r.Recorder, obj, p)
			if err != nil {
				// A deletion that failed will never be observed.
				r.expectations.DeletionObserved(key, pod.Key(p))
			}
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		})
	}
	return nil
}

// relatedPods are the pods of every object of this kind that shares the owner's controller
// (the ReplicaSets of one Deployment), used to spread deletions across nodes. Read-only.
func (r *Reconciler) relatedPods(ctx context.Context, rs *appsv1.ReplicaSet) ([]*corev1.Pod, error) {
	ref := metav1.GetControllerOfNoCopy(rs)
	if ref == nil {
		return nil, nil
	}
	siblings, err := r.Kind.SiblingUIDs(ctx, r.Client, rs.Namespace, ref.UID)
	if err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for _, uid := range siblings {
		list := &corev1.PodList{}
		if err := r.Client.List(ctx, list, client.InNamespace(rs.Namespace), client.MatchingFields{index.ControllerUID: string(uid)},
			client.UnsafeDisableDeepCopy); err != nil {
			return nil, err
		}
		for i := range list.Items {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// updateStatus updates status when it differs from what obj has, with observedGeneration.
func (r *Reconciler) updateStatus(ctx context.Context, obj client.Object, rs *appsv1.ReplicaSet, status appsv1.ReplicaSetStatus) error {
	status.ObservedGeneration = rs.Generation
	if equality.Semantic.DeepEqual(rs.Status, status) {
		r.held.Delete(client.ObjectKeyFromObject(obj))
		return nil
	}
	// A later sync of the key, queued already, writes the status this one would: leave the
	// write to it when nothing waits on the change (holdStatus). At most one sync in a row
	// holds: a key kept dirty by a stream of pod events still writes every other sync, so
	// no change waits longer than one more sync.
	key := client.ObjectKeyFromObject(obj)
	if _, heldLast := r.held.LoadAndDelete(key); !heldLast && holdStatus(rs.Status, status, track.Dirty(ctx)) {
		r.held.Store(key, struct{}{})
		return nil
	}
	r.Kind.SetStatus(obj, status)
	if err := patch.Status(ctx, r.Client, obj); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	r.Stale.WroteAt(client.ObjectKeyFromObject(obj), obj.GetUID(), replicaSetsResource, obj.GetResourceVersion())
	return nil
}

// holdStatus says whether a sync may leave its status change (old to new) unwritten because
// the key is dirty: queued again since the sync started (track.Dirty), so the next sync,
// which follows at once, computes the status afresh from the pods and writes it. Every path
// of that sync ends by writing its status or by being retried (the staleness guard requeues
// until the cache shows the owner's last write; an error backs off), so a held change is
// never left unwritten while the owner exists. Nothing another controller waits on is held:
// availableReplicas and readyReplicas pace the Deployment's rolling update, and
// observedGeneration and the conditions are what kubectl rollout status and the Deployment's
// own status read. Only replicas, fullyLabeledReplicas and terminatingReplicas, which a
// burst of pod creations or deletions moves once per pod, may wait for the next sync.
func holdStatus(old, new appsv1.ReplicaSetStatus, dirty bool) bool {
	if !dirty {
		return false
	}
	return old.ObservedGeneration == new.ObservedGeneration &&
		old.AvailableReplicas == new.AvailableReplicas &&
		old.ReadyReplicas == new.ReadyReplicas &&
		equality.Semantic.DeepEqual(old.Conditions, new.Conditions)
}

// podFromTemplate is the pod rs creates: its template, named after it, controlled by it.
func podFromTemplate(rs *appsv1.ReplicaSet, kind Kind) *corev1.Pod {
	t := rs.Spec.Template.DeepCopy()
	prefix := rs.Name + "-"
	if len(prefix) > 253 {
		prefix = rs.Name
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       rs.Namespace,
			GenerateName:    prefix,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      t.Finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(rs, kind.GVK)},
		},
		Spec: t.Spec,
	}
}

// SetupWithManager watches the owners and their pods. Pod events go through podHandler,
// which records observed creations and deletions before queueing the owner.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil || r.Kind.New == nil {
		return fmt.Errorf("%s: Kind, Client, APIReader and Recorder are required", r.Kind.ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.expectations = expectations.New(r.Clock)
	// What the per-object view (/debug/controllers/<controller>/objects/...) shows of a key.
	track.For(r.Kind.ControllerName).ExpectationsFrom(expectations.Views(r.expectations))
	track.For(r.Kind.ControllerName).StaleFrom(r.Stale.View)
	return ctrl.NewControllerManagedBy(mgr).
		Named(r.Kind.ControllerName).
		For(r.Kind.New()).
		Watches(&corev1.Pod{}, r.podHandler()).
		WithOptions(controller.Options{NewQueue: newQueue[r.Kind.ControllerName], MaxConcurrentReconciles: workers}).
		Complete(r)
}

// The StaleControllerConsistencyReplicaSet guard, counted in
// replicaset_controller_stale_sync_skips_total: a ReplicaSet's sync waits for the cache to
// show its own writes, the pods it created and its status (upstream has none for
// ReplicationControllers).
var (
	podsResource        = staleness.Pods
	replicaSetsResource = schema.GroupResource{Group: "apps", Resource: "replicasets"}
	staleGuard          = staleness.ForOwner("replicaset_controller", "ReplicaSet",
		staleness.Watched{Resource: podsResource, Object: &corev1.Pod{}},
		staleness.Watched{Resource: replicaSetsResource, Object: &appsv1.ReplicaSet{}})
)
