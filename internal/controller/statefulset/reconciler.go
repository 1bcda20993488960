package statefulset

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"
	"k8s.io/utils/lru"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/history"
	"github.com/kcm/kcm/internal/owned"
	"github.com/kcm/kcm/internal/ownership"
	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/pod"
	"github.com/kcm/kcm/internal/slowstart"
	"github.com/kcm/kcm/internal/staleness"
	"github.com/kcm/kcm/internal/track"
)

// ControllerName is upstream's controller and client name.
const ControllerName = "statefulset-controller"

// Reconciler keeps the pods of one StatefulSet in line.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache: the set's fresh state before adopting.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// SemanticRevisionComparison is the StatefulSetSemanticRevisionComparison gate: the
	// newest revision is kept when it differs from the template only in serialization or
	// API-server defaults (compared byte for byte otherwise).
	SemanticRevisionComparison bool
	// MaxUnavailable honours spec.updateStrategy.rollingUpdate.maxUnavailable (upstream's
	// MaxUnavailableStatefulSet gate, on by default in v1.37); off, a RollingUpdate replaces
	// one pod at a time.
	MaxUnavailable bool
	// Stale skips a sync while the cache has not caught up with our own writes for the set
	// (StaleControllerConsistencyStatefulSet); nil: off.
	Stale *staleness.Guard

	// revisionEqualities remembers the revisions matchesLatest found equal.
	revisionEqualities *lru.Cache
}

// What statefulset-controller's own client does (reads of the shared cache run as kcm's
// identity): a live get of the set before adopting, the status update, ControllerRevisions
// created (blocking owner reference), renumbered by update and deleted, pods created, their
// identity updated, adopted or released by patch, and deleted, PVCs created and their owner
// references (a pod's, blocking) updated.
//
// +kubebuilder:rbac:groups=apps,resources=statefulsets,verbs=get
// +kubebuilder:rbac:groups=apps,resources=statefulsets/status,verbs=update
// +kubebuilder:rbac:groups=apps,resources=statefulsets/finalizers,verbs=update
// +kubebuilder:rbac:groups=apps,resources=controllerrevisions,verbs=create;update;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=create;update;patch;delete
// +kubebuilder:rbac:groups="",resources=pods/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=create;update

// Reconcile observes the set's pods and revisions, creates, repairs and deletes pods as the
// plan says, and writes status.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	if res, skip := r.Stale.Skip(ctx, req.NamespacedName); skip {
		return res, nil
	}
	set := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, req.NamespacedName, set); err != nil {
		if apierrors.IsNotFound(err) {
			r.Stale.Clear(req.NamespacedName)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	selector, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || selector.Empty() {
		if err == nil {
			err = errors.New("empty selector")
		}
		r.Recorder.Eventf(set, nil, corev1.EventTypeWarning, "InvalidSelector", "Sync", "Invalid selector: %v", err)
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("invalid selector: %w", err))
	}
	claimer := &ownership.Claimer{Client: r.Client, Fresh: r.APIReader, Owner: set, OwnerGVK: setGVK, Selector: selector}

	// Observe: revisions (adopting orphans), then pods.
	revs, err := r.revisions(ctx, claimer, set, selector)
	if err != nil {
		return reconcile.Result{}, err
	}
	pods, err := r.pods(ctx, claimer, set)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Revisions: the one the template makes now, and the one pods are rolled from.
	collisionCount := ptr.Deref(set.Status.CollisionCount, 0)
	current, update, err := r.syncRevisions(ctx, set, revs, &collisionCount)
	if err != nil {
		return reconcile.Result{}, err
	}

	now := r.Clock.Now()
	status := computeStatus(set, pods, current.Name, update.Name, now)
	var actErr error
	if set.DeletionTimestamp == nil {
		var updated int
		updated, actErr = r.act(ctx, set, current, update, pods, now)
		status.CurrentReplicas -= int32(updated)
	}
	status.ObservedGeneration = set.Generation
	status.CurrentRevision = current.Name
	status.UpdateRevision = update.Name
	status.CollisionCount = &collisionCount
	status.Conditions = set.Status.Conditions
	completeUpdate(set, &status)
	if r.MaxUnavailable {
		recordMaxUnavailable(set)
	}
	if err := r.patchStatus(ctx, set, status); err != nil {
		if apierrors.IsConflict(err) && actErr == nil {
			// Another writer changed the set since the cache's copy (the spec, a label):
			// recompute from the newer copy, which the cache is about to deliver.
			log.FromContext(ctx).V(4).Info("Status not written: the cache is behind the StatefulSet", "err", err)
			return reconcile.Result{RequeueAfter: staleness.Recheck}, nil
		}
		return reconcile.Result{}, errors.Join(actErr, err)
	}

	// Keep revisionHistoryLimit old revisions.
	history.Sort(revs)
	var truncErr error
	for _, rev := range truncatable(set, revs, pods, current.Name, update.Name) {
		if err := r.Client.Delete(ctx, rev, client.Preconditions{UID: &rev.UID}); client.IgnoreNotFound(err) != nil {
			truncErr = fmt.Errorf("deleting ControllerRevision %s: %w", rev.Name, err)
			break
		}
	}
	if err := errors.Join(actErr, truncErr); err != nil {
		return reconcile.Result{}, err
	}
	// A ready pod becomes available minReadySeconds later: come back then.
	if set.Spec.MinReadySeconds > 0 && status.ReadyReplicas != status.AvailableReplicas {
		next := time.Duration(set.Spec.MinReadySeconds) * time.Second
		for _, p := range pods {
			if d := pod.NextAvailabilityCheck(p, set.Spec.MinReadySeconds, now); d != nil && *d < next {
				next = *d
			}
		}
		return reconcile.Result{RequeueAfter: next}, nil
	}
	return reconcile.Result{}, nil
}

// revisions lists the set's ControllerRevisions and adopts the orphans its selector matches.
func (r *Reconciler) revisions(ctx context.Context, claimer *ownership.Claimer, set *appsv1.StatefulSet, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	revs, err := history.List(ctx, r.Client, set, selector)
	if err != nil {
		return nil, err
	}
	var owned, orphans []*appsv1.ControllerRevision
	for _, rev := range revs {
		if metav1.GetControllerOfNoCopy(rev) == nil {
			orphans = append(orphans, rev)
		} else {
			owned = append(owned, rev)
		}
	}
	if len(orphans) == 0 {
		return owned, nil
	}
	adopted, err := ownership.Claim(ctx, claimer, orphans)
	if err != nil {
		return nil, fmt.Errorf("adopting ControllerRevisions: %w", err)
	}
	return append(owned, adopted...), nil
}

// pods returns the set's pods: those it controls and the orphans named as its ordinals that
// match its selector, which it adopts.
func (r *Reconciler) pods(ctx context.Context, claimer *ownership.Claimer, set *appsv1.StatefulSet) ([]*corev1.Pod, error) {
	all, err := owned.Pods(ctx, r.Client, set)
	if err != nil {
		return nil, fmt.Errorf("listing pods: %w", err)
	}
	var candidates []*corev1.Pod
	for _, p := range all {
		if isMember(set, p) {
			candidates = append(candidates, p)
		}
	}
	return ownership.Claim(ctx, claimer, candidates)
}

// syncRevisions finds or creates the update revision (the current template) and finds the
// current revision (status.currentRevision, or the update revision when there is none), as
// upstream: an equal older revision is reused with the next revision number (a rollback),
// and the newest revision is kept when it restores the same template (matchesLatest).
func (r *Reconciler) syncRevisions(ctx context.Context, set *appsv1.StatefulSet, revs []*appsv1.ControllerRevision, collisionCount *int32) (current, update *appsv1.ControllerRevision, err error) {
	history.Sort(revs)
	update, err = newRevision(set, history.Next(revs), collisionCount)
	if err != nil {
		return nil, nil, err
	}
	equal := history.FindEqual(revs, update)
	switch {
	case len(equal) > 0 && history.Equal(revs[len(revs)-1], equal[len(equal)-1]):
		update = revs[len(revs)-1]
	case len(equal) > 0:
		update, err = history.SetRevision(ctx, r.Client, equal[len(equal)-1], update.Revision)
	case len(revs) > 0 && r.SemanticRevisionComparison && matchesLatest(set, update, revs[len(revs)-1], r.revisionEqualities):
		update = revs[len(revs)-1]
	default:
		update, err = history.Create(ctx, r.Client, set, update, collisionCount)
	}
	if err != nil {
		return nil, nil, err
	}
	for _, rev := range revs {
		if rev.Name == set.Status.CurrentRevision {
			current = rev
			break
		}
	}
	if current == nil {
		current = update
	}
	return current, update, nil
}

// act carries out the plan; it returns how many pods it deleted for the rolling update.
func (r *Reconciler) act(ctx context.Context, set *appsv1.StatefulSet, current, update *appsv1.ControllerRevision, pods []*corev1.Pod, now time.Time) (int, error) {
	currentSet, err := applyRevision(set, current)
	if err != nil {
		return 0, err
	}
	updateSet, err := applyRevision(set, update)
	if err != nil {
		return 0, err
	}
	templates := map[string]*appsv1.StatefulSet{current.Name: currentSet, update.Name: updateSet}
	stages := plan(planInput{set: set, currentRevision: current.Name, updateRevision: update.Name, pods: pods, now: now,
		oneAtATime: !r.MaxUnavailable})
	monotonic := set.Spec.PodManagementPolicy != appsv1.ParallelPodManagement

	var mu sync.Mutex
	updated := 0
	do := func(s step) error {
		switch s.kind {
		case stepCreate:
			return r.createPod(ctx, set, templates[s.revision], s.ordinal, s.revision)
		case stepDelete:
			if err := r.deletePod(ctx, set, s.pod); err != nil {
				return err
			}
			if s.reason == reasonUpdate {
				mu.Lock()
				updated++
				mu.Unlock()
			}
			log.FromContext(ctx).V(2).Info("Deleted Pod of StatefulSet", "pod", s.pod.Name, "reason", string(s.reason))
			return nil
		case stepRelabel:
			return r.relabel(ctx, set, s.pod)
		case stepClaims:
			return r.syncClaims(ctx, set, s.pod, s.createClaims)
		case stepReportUnavailable:
			recordUnavailable(set, s.unavailable)
		}
		return nil
	}
	for _, stage := range stages {
		if len(stage) == 0 {
			continue
		}
		if monotonic {
			for _, s := range stage {
				if err := do(s); err != nil {
					return updated, err
				}
			}
			continue
		}
		// Parallel sets create and delete in slow-start batches, as upstream.
		if _, err := slowstart.Run(len(stage), func(i int) error { return do(stage[i]) }); err != nil {
			return updated, err
		}
	}
	return updated, nil
}

// createPod creates the ordinal's claims, then its pod from the revision's template.
func (r *Reconciler) createPod(ctx context.Context, set, revSet *appsv1.StatefulSet, ordinal int, revision string) error {
	p := newPod(set, revSet, ordinal, revision)
	if err := r.createClaims(ctx, set, p); err != nil {
		r.podEvent(set, p, "Create", err)
		return err
	}
	err := r.Client.Create(ctx, p)
	if apierrors.IsAlreadyExists(err) {
		// The cache has not seen it yet; the next sync will.
		return err
	}
	if err == nil {
		r.wrote(set, podsResource, p.ResourceVersion)
		// Claims of the new pod get the set's ownerReference when the policy asks for it.
		if err := r.syncClaims(ctx, set, p, false); err != nil {
			r.podEvent(set, p, "Update", err)
			return err
		}
	}
	r.podEvent(set, p, "Create", err)
	if err != nil {
		return fmt.Errorf("creating Pod %s: %w", p.Name, err)
	}
	return nil
}

// deletePod deletes the pod it was given, not a newer one of the same name.
func (r *Reconciler) deletePod(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod) error {
	err := r.Client.Delete(ctx, p, client.Preconditions{UID: &p.UID})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		r.podEvent(set, p, "Delete", err)
		return fmt.Errorf("deleting Pod %s: %w", p.Name, err)
	}
	r.podEvent(set, p, "Delete", nil)
	return nil
}

// relabel restores the pod-name and pod-index labels with an update of the pod, as
// upstream's UpdateStatefulPod: on a conflict it retries on the cache's newer copy.
func (r *Reconciler) relabel(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod) error {
	current := p
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		updated := current.DeepCopy()
		if updated.Labels == nil {
			updated.Labels = map[string]string{}
		}
		updated.Labels[appsv1.StatefulSetPodNameLabel] = p.Name
		updated.Labels[appsv1.PodIndexLabel] = strconv.Itoa(ordinalOf(p))
		err := r.Client.Update(ctx, updated)
		if err == nil {
			r.wrote(set, podsResource, updated.ResourceVersion)
		}
		if apierrors.IsConflict(err) {
			fresh := &corev1.Pod{}
			if getErr := r.Client.Get(ctx, client.ObjectKeyFromObject(p), fresh); getErr == nil {
				current = fresh
			}
		}
		return err
	})
	r.podEvent(set, p, "Update", err)
	if err != nil {
		return fmt.Errorf("updating identity of Pod %s: %w", p.Name, err)
	}
	return nil
}

// createClaims creates the pod's missing claims; a claim being deleted is an error (the pod
// must wait for it to go).
func (r *Reconciler) createClaims(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod) error {
	var errs []error
	for _, c := range newClaims(set, ordinalOf(p)) {
		existing := &corev1.PersistentVolumeClaim{}
		err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), existing)
		switch {
		case apierrors.IsNotFound(err):
			err := r.Client.Create(ctx, c)
			if err == nil {
				r.wrote(set, claimsResource, c.ResourceVersion)
			}
			if err != nil && !apierrors.IsAlreadyExists(err) {
				errs = append(errs, fmt.Errorf("creating PVC %s: %w", c.Name, err))
			}
			if err == nil || !apierrors.IsAlreadyExists(err) {
				r.claimEvent(set, p, c, err)
			}
		case err != nil:
			errs = append(errs, fmt.Errorf("reading PVC %s: %w", c.Name, err))
		case existing.DeletionTimestamp != nil:
			errs = append(errs, fmt.Errorf("PVC %s is being deleted", c.Name))
		}
	}
	return errors.Join(errs...)
}

// syncClaims creates a pending pod's missing claims (when create is set) and gives the pod's
// claims the ownerReferences the retention policy asks for.
func (r *Reconciler) syncClaims(ctx context.Context, set *appsv1.StatefulSet, p *corev1.Pod, create bool) error {
	if len(set.Spec.VolumeClaimTemplates) == 0 {
		return nil
	}
	if create {
		if err := r.createClaims(ctx, set, p); err != nil {
			return err
		}
	}
	for _, c := range newClaims(set, ordinalOf(p)) {
		claim := &corev1.PersistentVolumeClaim{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(c), claim); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("reading PVC %s: %w", c.Name, err)
		}
		refs, ok := claimOwnerRefs(set, p, claim)
		if !ok || equality.Semantic.DeepEqual(nilIfEmpty(refs), nilIfEmpty(claim.OwnerReferences)) {
			continue
		}
		updated := claim.DeepCopy()
		updated.OwnerReferences = refs
		if err := r.Client.Update(ctx, updated); err != nil {
			return fmt.Errorf("updating ownerReferences of PVC %s: %w", claim.Name, err)
		}
		r.wrote(set, claimsResource, updated.ResourceVersion)
	}
	return nil
}

func nilIfEmpty(refs []metav1.OwnerReference) []metav1.OwnerReference {
	if len(refs) == 0 {
		return nil
	}
	return refs
}

// wrote records a write for the set, when the guard is on.
func (r *Reconciler) wrote(set *appsv1.StatefulSet, gr schema.GroupResource, rv string) {
	r.Stale.WroteAt(types.NamespacedName{Namespace: set.Namespace, Name: set.Name}, set.UID, gr, rv)
}

// podEvent records upstream's Events: "SuccessfulCreate" with "Create Pod web-0 in
// StatefulSet web successful", or "FailedCreate" with the error.
func (r *Reconciler) podEvent(set *appsv1.StatefulSet, p *corev1.Pod, verb string, err error) {
	if err == nil {
		r.Recorder.Eventf(set, p, corev1.EventTypeNormal, "Successful"+verb, verb,
			"%s Pod %s in StatefulSet %s successful", verb, p.Name, set.Name)
		return
	}
	r.Recorder.Eventf(set, p, corev1.EventTypeWarning, "Failed"+verb, verb,
		"%s Pod %s in StatefulSet %s failed error: %s", verb, p.Name, set.Name, err)
}

func (r *Reconciler) claimEvent(set *appsv1.StatefulSet, p *corev1.Pod, c *corev1.PersistentVolumeClaim, err error) {
	if err == nil {
		r.Recorder.Eventf(set, c, corev1.EventTypeNormal, "SuccessfulCreate", "Create",
			"Create Claim %s Pod %s in StatefulSet %s success", c.Name, p.Name, set.Name)
		return
	}
	r.Recorder.Eventf(set, c, corev1.EventTypeWarning, "FailedCreate", "Create",
		"Create Claim %s for Pod %s in StatefulSet %s failed error: %s", c.Name, p.Name, set.Name, err)
}

// patchStatus writes status when it changed.
func (r *Reconciler) patchStatus(ctx context.Context, set *appsv1.StatefulSet, status appsv1.StatefulSetStatus) error {
	if equality.Semantic.DeepEqual(set.Status, status) {
		return nil
	}
	updated := set.DeepCopy()
	updated.Status = status
	if err := patch.Status(ctx, r.Client, updated); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	r.wrote(updated, statefulSetsResource, updated.ResourceVersion)
	return nil
}

// SetupWithManager registers the controller: StatefulSets, the pods and revisions they
// control, and orphan pods that may be theirs.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.revisionEqualities = newRevisionEqualities()
	// What the per-object view (/debug/controllers/<controller>/objects/...) shows of a key.
	track.For(ControllerName).StaleFrom(r.Stale.View)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&appsv1.StatefulSet{}).
		Owns(&corev1.Pod{}).
		Owns(&appsv1.ControllerRevision{}).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(r.setsForOrphan)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// setsForOrphan maps an orphan pod to the sets whose ordinal it is named as and whose
// selector it matches.
func (r *Reconciler) setsForOrphan(ctx context.Context, obj client.Object) []reconcile.Request {
	p, ok := obj.(*corev1.Pod)
	if !ok || metav1.GetControllerOfNoCopy(p) != nil {
		return nil
	}
	parent, o := parentAndOrdinal(p.Name)
	if o < 0 {
		return nil
	}
	set := &appsv1.StatefulSet{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: parent}, set); err != nil {
		return nil
	}
	sel, err := metav1.LabelSelectorAsSelector(set.Spec.Selector)
	if err != nil || !sel.Matches(labels.Set(p.Labels)) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: set.Namespace, Name: set.Name}}}
}

// The StaleControllerConsistencyStatefulSet guard, counted in
// statefulset_controller_stale_sync_skips_total: a StatefulSet's sync waits for the cache to
// show its own writes, the pods and claims it created or updated, and its status.
var (
	podsResource         = staleness.Pods
	claimsResource       = schema.GroupResource{Resource: "persistentvolumeclaims"}
	statefulSetsResource = schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	staleGuard           = staleness.ForOwner("statefulset_controller", "StatefulSet",
		staleness.Watched{Resource: podsResource, Object: &corev1.Pod{}},
		staleness.Watched{Resource: claimsResource, Object: &corev1.PersistentVolumeClaim{}},
		staleness.Watched{Resource: statefulSetsResource, Object: &appsv1.StatefulSet{}})
)
