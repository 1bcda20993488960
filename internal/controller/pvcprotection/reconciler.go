// Package pvcprotection is upstream's persistentvolumeclaim-protection-controller: it keeps
// the kubernetes.io/pvc-protection finalizer on live claims, removes it from a claim being
// deleted once no pod uses the claim, and keeps the Unused condition of bound claims
// (PersistentVolumeClaimUnusedSinceTime, beta and on by default in v1.37).
//
// As upstream, the cache is asked first; a claim is only released (or marked Unused) after a
// live list of the namespace's pods confirms it, since a pod that uses it may not have
// reached the cache yet. Also as upstream, the work is batched by namespace: a request names
// a namespace, and one reconcile settles every claim of it with at most one live list.
package pvcprotection

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/staleness"
)

const (
	// ControllerName is the controller's name in --controllers.
	ControllerName = "persistentvolumeclaim-protection-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "pvc-protection-controller"
)

// Reconciler settles the claims of one namespace. Requests carry only the namespace.
type Reconciler struct {
	// Client reads claims and pods from the cache and writes claims.
	Client client.Client
	// APIReader lists pods live, bypassing the cache.
	APIReader client.Reader
	// TrackUnused maintains the Unused condition (the PersistentVolumeClaimUnusedSinceTime gate).
	TrackUnused bool
	Clock       clock.PassiveClock

	// written is our last write of each claim. The cache delivers it later; a sync that
	// reads the version it replaced works from the stored copy: the stale Unused condition
	// would already say what the sync computes, and the write that is needed (e.g. Unused
	// again after the pod that used the claim failed) would be skipped for good, since our
	// own condition changes do not bring the claim back.
	written staleness.Writes[*corev1.PersistentVolumeClaim]
}

// Claims and pods are read from the shared cache (kcm's identity); the controller's own
// identity updates claims and their status and, as upstream, lists a namespace's pods live
// before releasing a claim.
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims/status,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=list

// Reconcile brings every claim of the namespace up to date: finalizer added when missing,
// removed from deleted claims no pod uses, Unused condition set on bound claims.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claims := &corev1.PersistentVolumeClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(req.Namespace)); err != nil {
		return reconcile.Result{}, err
	}
	live := &livePods{reader: r.APIReader, namespace: req.Namespace}
	var errs []error
	for i := range claims.Items {
		if err := r.syncClaim(ctx, &claims.Items[i], live); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, fmt.Errorf("claim %s: %w", claims.Items[i].Name, err))
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

func (r *Reconciler) syncClaim(ctx context.Context, cached *corev1.PersistentVolumeClaim, live *livePods) error {
	logger := log.FromContext(ctx, "PVC", cached.Name)
	pvc := r.written.Current(cached)
	if r.TrackUnused && TracksUnused(pvc) {
		used, err := r.isUsed(ctx, pvc, live, UsedForUnused, findUnused(pvc) != nil && findUnused(pvc).Status == corev1.ConditionTrue)
		if err != nil {
			return err
		}
		if c := UnusedCondition(pvc, used, metav1.NewTime(r.Clock.Now())); c != nil {
			updated := pvc.DeepCopy()
			setCondition(updated, *c)
			if err := r.update(ctx, updated, true); err != nil {
				return fmt.Errorf("updating the Unused condition: %w", err)
			}
			logger.V(3).Info("Updated Unused condition in PVC status", "status", c.Status)
			pvc = updated
		}
	}

	if IsDeletionCandidate(pvc) {
		used, err := r.isUsed(ctx, pvc, live, UsedForDeletion, false)
		if err != nil {
			return err
		}
		if used {
			logger.V(2).Info("Keeping PVC because it is being used")
			return nil
		}
		updated := pvc.DeepCopy()
		controllerutil.RemoveFinalizer(updated, Finalizer)
		if err := r.update(ctx, updated, false); err != nil {
			return fmt.Errorf("removing the protection finalizer: %w", err)
		}
		// The claim goes away: nothing to remember of it.
		r.written.Forget(client.ObjectKeyFromObject(updated))
		logger.V(3).Info("Removed protection finalizer from PVC")
		return nil
	}

	if NeedsFinalizer(pvc) {
		updated := pvc.DeepCopy()
		controllerutil.AddFinalizer(updated, Finalizer)
		if err := r.update(ctx, updated, false); err != nil {
			return fmt.Errorf("adding the protection finalizer: %w", err)
		}
		logger.V(3).Info("Added protection finalizer to PVC")
	}
	return nil
}

// update writes the claim (its status subresource, or the object), from the version it
// was read at, and remembers the write.
func (r *Reconciler) update(ctx context.Context, pvc *corev1.PersistentVolumeClaim, status bool) error {
	replaced := pvc.ResourceVersion
	var err error
	if status {
		err = r.Client.Status().Update(ctx, pvc)
	} else {
		err = r.Client.Update(ctx, pvc)
	}
	if err != nil {
		r.written.Forget(client.ObjectKeyFromObject(pvc))
		return err
	}
	r.written.Wrote(replaced, pvc)
	return nil
}

// isUsed asks the cache, then, when no cached pod uses the claim, the live list: a pod may
// use the claim without being in the cache yet. When the cache's "unused" would change
// nothing (skipLive), the live list is not worth its cost.
func (r *Reconciler) isUsed(ctx context.Context, pvc *corev1.PersistentVolumeClaim, live *livePods, uses usage, skipLive bool) (bool, error) {
	cached := &corev1.PodList{}
	if err := r.Client.List(ctx, cached, client.InNamespace(pvc.Namespace), client.MatchingFields{index.PodClaimName: pvc.Name}); err != nil {
		return false, err
	}
	for i := range cached.Items {
		if uses(&cached.Items[i], pvc) {
			return true, nil
		}
	}
	if skipLive {
		return false, nil
	}
	pods, err := live.get(ctx)
	if err != nil {
		return false, err
	}
	for i := range pods {
		if uses(&pods[i], pvc) {
			return true, nil
		}
	}
	log.FromContext(ctx).V(2).Info("PVC is unused", "PVC", pvc.Name)
	return false, nil
}

// livePods is one reconcile's live list of the namespace's pods, taken at most once and
// only when needed. It is taken after the claims were read from the cache, so it sees every
// pod that was scheduled before those claims were deleted.
type livePods struct {
	reader    client.Reader
	namespace string
	pods      []corev1.Pod
	listed    bool
}

func (l *livePods) get(ctx context.Context) ([]corev1.Pod, error) {
	if l.listed {
		return l.pods, nil
	}
	list := &corev1.PodList{}
	if err := l.reader.List(ctx, list, client.InNamespace(l.namespace)); err != nil {
		return nil, fmt.Errorf("live list of pods failed: %w", err)
	}
	l.pods, l.listed = list.Items, true
	return l.pods, nil
}

// SetupWithManager registers the controller: claim events that need work and pod events
// that may change a claim's usage enqueue the namespace.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil {
		return fmt.Errorf("%s: Client and APIReader are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(namespaceOf),
			builder.WithPredicates(predicate.NewPredicateFuncs(r.claimNeedsWork))).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(namespaceOf),
			builder.WithPredicates(podUsageChanged{})).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

func namespaceOf(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace()}}}
}

// claimNeedsWork is upstream's filter of claim events: a claim without the finalizer, one
// waiting for it to go, or (tracking Unused) one without the condition yet.
func (r *Reconciler) claimNeedsWork(obj client.Object) bool {
	pvc, ok := obj.(*corev1.PersistentVolumeClaim)
	if !ok {
		return false
	}
	return NeedsFinalizer(pvc) || IsDeletionCandidate(pvc) || r.TrackUnused && findUnused(pvc) == nil
}

// podUsageChanged passes events of pods that name a claim, and of those only the updates
// that can change whether the pod uses it (upstream enqueues on every pod event).
type podUsageChanged struct{ predicate.Funcs }

func (podUsageChanged) Create(e event.CreateEvent) bool { return namesClaims(e.Object) }
func (podUsageChanged) Delete(e event.DeleteEvent) bool { return namesClaims(e.Object) }
func (podUsageChanged) Generic(event.GenericEvent) bool { return false }
func (podUsageChanged) Update(e event.UpdateEvent) bool {
	oldPod, ok1 := e.ObjectOld.(*corev1.Pod)
	newPod, ok2 := e.ObjectNew.(*corev1.Pod)
	if !ok1 || !ok2 || !namesClaims(newPod) && !namesClaims(oldPod) {
		return false
	}
	return factsOf(oldPod) != factsOf(newPod)
}

func namesClaims(obj client.Object) bool {
	p, ok := obj.(*corev1.Pod)
	return ok && len(index.PodClaimNameOf(p)) > 0
}
