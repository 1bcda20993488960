package job

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
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

// Reconciler runs the pods of one Job and keeps its status.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache: the Job's fresh state before adopting pods.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// PodFailureBackoff is the delay before a failed pod is replaced, doubled for each
	// further consecutive failure up to MaxPodFailureBackoff. Zero means upstream's 10s
	// and 10m.
	PodFailureBackoff    time.Duration
	MaxPodFailureBackoff time.Duration
	// BatchPeriod delays the sync after a pod event or a status-only Job update, so that
	// bursts coalesce. Zero means upstream's 1s.
	BatchPeriod time.Duration
	// ClearStartTimeOnSuspend: suspending a Job clears its startTime (upstream's
	// MutableSchedulingDirectivesForSuspendedJobs gate, beta and on in v1.37).
	ClearStartTimeOnSuspend bool
	// Stale skips a sync while the cache has not caught up with our own writes for the Job
	// (StaleControllerConsistencyJob): a sync from a Job older than our last status write
	// would count from stale counters; nil: off.
	Stale *staleness.Guard

	expectations *expectations.Expectations
	finalizers   *finalizerExpectations
	backoff      *backoffStore
}

// What job-controller's own client does (reads of the shared cache run as kcm's identity):
// a live get of the Job before adopting, the status update, pods created with a blocking
// owner reference, pods' ownership and tracking finalizer patched, and pods deleted.
//
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get
// +kubebuilder:rbac:groups=batch,resources=jobs/status,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=create;delete;patch

// Reconcile observes the Job's pods, decides whether it succeeded or failed, creates or
// deletes pods, and records finished pods in status before it releases their finalizers.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (_ reconcile.Result, rErr error) {
	start := r.Clock.Now()
	key := req.NamespacedName
	logger := log.FromContext(ctx)
	if res, skip := r.Stale.Skip(ctx, key); skip {
		return res, nil
	}
	job := &batchv1.Job{}
	if err := r.Client.Get(ctx, key, job); err != nil {
		if apierrors.IsNotFound(err) {
			r.forget(key)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if managedByOther(job) {
		logger.V(2).Info("Skipping a Job managed by another controller", "managedBy", *job.Spec.ManagedBy)
		return reconcile.Result{}, nil
	}
	if isFinished(job) {
		r.backoff.forget(key)
		return reconcile.Result{}, nil
	}
	if m := job.Spec.CompletionMode; m != nil && *m != batchv1.NonIndexedCompletion && *m != batchv1.IndexedCompletion {
		r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "UnknownCompletionMode", "Sync", "Skipped Job sync because completion mode is unknown")
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("unknown completion mode %q", *m))
	}
	// Upstream's sync metrics cover the syncs that got this far, labelled with what the
	// sync did to the pods.
	action := actionReconciling
	defer func() { recordSync(job, action, r.Clock.Since(start), rErr) }()

	// Read before listing pods: a sync that starts with stale expectations must not act.
	satisfied := r.expectations.Satisfied(key)
	pods, err := r.podsForJob(ctx, job)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Compare.
	orig := job.DeepCopy()
	now := r.Clock.Now()
	s := newSyncState(job, pods, r.finalizers.expected(key), r.backoff.get(key), now)
	requeue := max(s.evaluate(now), 0)

	// Act.
	active := int32(len(s.active))
	var manageErr error
	var event *jobEvent
	if s.finished != nil {
		// Failed or met the success policy: no pod runs any more. Their finalizers stay
		// until the tracking below counts them.
		deleted, deletedReady, err := r.deletePods(ctx, job, s.active, false)
		if deleted != active || !satisfied {
			// Pods remain, or the cache may not show all of them yet.
			s.finished = nil
		}
		active -= deleted
		s.terminating += deleted
		s.ready -= deletedReady
		manageErr = err
	} else {
		managed := false
		if satisfied && job.DeletionTimestamp == nil {
			var wait time.Duration
			active, wait, action, manageErr = r.manageJob(ctx, s, now)
			requeue = shortest(requeue, wait)
			managed = true
		}
		if isComplete(job, s.succeeded, active) {
			s.finished = newCondition(batchv1.JobSuccessCriteriaMet, corev1.ConditionTrue, batchv1.JobReasonCompletionsReached, msgCompletionsReached, now)
		} else if managed {
			if reason, msg := applySuspension(job, now, r.ClearStartTimeOnSuspend); reason != "" {
				event = &jobEvent{corev1.EventTypeNormal, reason, msg}
			}
		}
	}
	job.Status.Active = active
	job.Status.Ready = ptr.To(s.ready)
	job.Status.Terminating = ptr.To(s.terminating)

	// Status.
	if err := r.trackStatus(ctx, s, orig, now); err != nil {
		return reconcile.Result{}, errors.Join(manageErr, fmt.Errorf("tracking status: %w", err))
	}
	if event != nil {
		r.Recorder.Eventf(job, nil, event.eventType, event.reason, event.reason, event.message)
	}
	if manageErr != nil {
		return reconcile.Result{}, manageErr
	}
	return reconcile.Result{RequeueAfter: requeue}, nil
}

type jobEvent struct{ eventType, reason, message string }

// shortest is the sooner of two requeue delays, 0 meaning none.
func shortest(a, b time.Duration) time.Duration {
	switch {
	case a <= 0:
		return max(b, 0)
	case b <= 0:
		return a
	}
	return min(a, b)
}

func (r *Reconciler) forget(key types.NamespacedName) {
	r.expectations.Forget(key)
	r.finalizers.forget(key)
	r.backoff.forget(key)
	r.Stale.Clear(key)
}

// podsForJob lists, from the cache, the pods the Job controls and the orphans of its
// namespace, adopts the orphans its selector matches (adding the tracking finalizer),
// releases its pods that stopped matching, and returns what it controls.
func (r *Reconciler) podsForJob(ctx context.Context, job *batchv1.Job) ([]*corev1.Pod, error) {
	selector, err := metav1.LabelSelectorAsSelector(job.Spec.Selector)
	if err != nil {
		r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "InvalidSelector", "Sync", "Invalid selector: %v", err)
		return nil, reconcile.TerminalError(fmt.Errorf("invalid selector: %w", err))
	}
	controlled, orphanPods, err := owned.List[*corev1.Pod](ctx, r.Client, job, func() client.ObjectList { return &corev1.PodList{} })
	if err != nil {
		return nil, err
	}
	orphans := sets.New[types.UID]()
	for _, p := range orphanPods {
		orphans.Insert(p.UID)
	}
	claimer := &ownership.Claimer{Client: r.Client, Fresh: r.APIReader, Owner: job, OwnerGVK: jobGVK, Selector: selector}
	pods, err := ownership.Claim(ctx, claimer, append(controlled, orphanPods...))
	if err != nil {
		return nil, err
	}
	// An adopted pod is tracked like the Job's own: it gets the finalizer.
	for _, p := range pods {
		if !orphans.Has(p.UID) || hasTrackingFinalizer(p) {
			continue
		}
		patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": []string{batchv1.JobTrackingFinalizer},
			"uid":        p.UID,
		}})
		if err := r.Client.Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
			return nil, fmt.Errorf("adding the tracking finalizer to adopted pod %s: %w", p.Name, err)
		}
	}
	return pods, nil
}

// manageJob creates or deletes pods towards the wanted number of active ones and returns
// the resulting number, and how long to wait when the pod failure backoff holds creations
// back. A suspended Job loses all its active pods. At most MaxPodCreateDeletePerSync pods
// are created or deleted, never both in one sync. The action says which it did.
func (r *Reconciler) manageJob(ctx context.Context, s *syncState, now time.Time) (int32, time.Duration, string, error) {
	job := s.job
	key := client.ObjectKeyFromObject(job)
	active := int32(len(s.active))
	want := desiredActive(job, s.succeeded, active)
	if isSuspended(job) {
		want = 0
	}
	victims := activePodsForRemoval(job, s.active, int(max(active-want, 0)))
	if len(victims) > 0 {
		victims = victims[:min(len(victims), MaxPodCreateDeletePerSync)]
		log.FromContext(ctx).V(4).Info("Too many pods running", "deleting", len(victims), "want", want)
		keys := make([]string, len(victims))
		for i, p := range victims {
			keys[i] = pod.Key(p)
		}
		r.expectations.ExpectDeletions(key, keys)
		deleted, deletedReady, err := r.deletePods(ctx, job, victims, true)
		s.terminating += deleted
		s.ready -= deletedReady
		return active - deleted, 0, actionPodsDeleted, err
	}
	if isSuspended(job) {
		// Upstream labels every sync of a suspended Job a deletion, even with no pod left.
		return active, 0, actionPodsDeleted, nil
	}

	diff := want - active
	if onlyReplaceFailedPods(job) {
		diff -= s.terminating
	}
	if diff <= 0 {
		return active, 0, actionTracking, nil
	}
	if !hasBackoffLimitPerIndex(job) {
		if wait := remainingBackoff(s.newBackoff.failuresAfterLastSuccess, s.newBackoff.lastFailure, now, r.PodFailureBackoff, r.MaxPodFailureBackoff); wait > 0 {
			return active, max(wait, r.BatchPeriod), actionPodsCreated, nil
		}
	}
	diff = min(diff, MaxPodCreateDeletePerSync)
	var indexes []int
	if isIndexed(job) {
		indexes = firstPendingIndexes(s, int(diff), int(ptr.Deref(job.Spec.Completions, 0)))
		if hasBackoffLimitPerIndex(job) {
			var wait time.Duration
			if indexes, wait = r.creatableIndexes(indexes, s.delayedDeletion, now); wait > 0 {
				return active, max(wait, r.BatchPeriod), actionPodsCreated, nil
			}
		}
		diff = int32(len(indexes))
		if diff == 0 {
			return active, 0, actionTracking, nil
		}
	}
	log.FromContext(ctx).V(4).Info("Too few pods running", "creating", diff, "want", want)
	var failedCreates atomic.Int32
	created, err := pod.CreateExpected(r.expectations, key, int(diff), func(i int) error {
		ix, replaced := unknownCompletionIndex, (*corev1.Pod)(nil)
		if indexes != nil {
			ix, replaced = indexes[i], s.delayedDeletion[indexes[i]]
		}
		p := podForJob(job, ix, replaced)
		err := pod.Create(ctx, r.Client, r.Recorder, job, p)
		switch {
		case err == nil:
			r.Stale.WroteAt(client.ObjectKeyFromObject(job), job.UID, podsResource, p.ResourceVersion)
		case pod.NamespaceTerminating(err):
			// Everything in the namespace is going away: not a failure to count.
		default:
			failedCreates.Add(1)
		}
		return err
	})
	recordPodCreations(job, s.failed, s.terminating, created, int(failedCreates.Load()))
	if pod.NamespaceTerminating(err) {
		err = nil
	}
	return active + int32(created), 0, actionPodsCreated, err
}

// creatableIndexes keeps the indexes whose own backoff (backoffLimitPerIndex) has passed;
// when none has, it returns the shortest wait instead.
func (r *Reconciler) creatableIndexes(indexes []int, delayed map[int]*corev1.Pod, now time.Time) ([]int, time.Duration) {
	var ready []int
	var wait time.Duration
	for _, ix := range indexes {
		d := time.Duration(0)
		if last := delayed[ix]; last != nil {
			t := finishTime(last)
			d = remainingBackoff(absoluteFailureCount(last)+1, &t, now, r.PodFailureBackoff, r.MaxPodFailureBackoff)
		}
		if d == 0 {
			ready = append(ready, ix)
		} else if wait == 0 || d < wait {
			wait = d
		}
	}
	if len(ready) > 0 {
		return ready, 0
	}
	return nil, wait
}

// deletePods deletes pods in parallel and returns how many are gone (a pod already gone
// counts) and how many of those were ready. With releaseFinalizer (suspension, scaling
// down) each pod first loses its tracking finalizer: it is neither a success nor a
// failure. Otherwise (the Job finishes) the finalizer stays so that tracking counts the
// pod. With releaseFinalizer the deletions are expected (see manageJob).
func (r *Reconciler) deletePods(ctx context.Context, job *batchv1.Job, pods []*corev1.Pod, releaseFinalizer bool) (int32, int32, error) {
	key := client.ObjectKeyFromObject(job)
	var deleted, deletedReady atomic.Int32
	// All at once, as upstream (at most MaxPodCreateDeletePerSync).
	err := parallel.Do(ctx, len(pods), len(pods), func(ctx context.Context, i int) error {
		p := pods[i]
		err := r.deletePod(ctx, job, p, releaseFinalizer)
		if err != nil && releaseFinalizer {
			r.expectations.DeletionObserved(key, pod.Key(p))
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return err
		}
		deleted.Add(1)
		if err == nil && pod.IsReady(p) {
			deletedReady.Add(1)
		}
		return nil
	})
	return deleted.Load(), deletedReady.Load(), err
}

func (r *Reconciler) deletePod(ctx context.Context, job *batchv1.Job, p *corev1.Pod, releaseFinalizer bool) error {
	if releaseFinalizer && hasTrackingFinalizer(p) {
		if err := r.removeFinalizer(ctx, p); err != nil {
			return fmt.Errorf("removing tracking finalizer: %w", err)
		}
	}
	return pod.Delete(ctx, r.Client, r.Recorder, job, p)
}

// removeFinalizer drops the tracking finalizer from a pod, leaving any other finalizer.
func (r *Reconciler) removeFinalizer(ctx context.Context, p *corev1.Pod) error {
	return removeTrackingFinalizer(ctx, r.Client, p)
}

func removeTrackingFinalizer(ctx context.Context, c client.Client, p *corev1.Pod) error {
	patch, _ := json.Marshal(map[string]any{"metadata": map[string]any{
		"$deleteFromPrimitiveList/finalizers": []string{batchv1.JobTrackingFinalizer},
	}})
	target := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: p.Namespace, Name: p.Name}}
	return c.Patch(ctx, target, client.RawPatch(types.StrategicMergePatchType, patch))
}

// trackStatus counts finished pods in two steps around the removal of their finalizers
// (see planTracking), then adds the terminal condition once nothing is left to count or
// to terminate, and records the Job's outcome.
func (r *Reconciler) trackStatus(ctx context.Context, s *syncState, orig *batchv1.Job, now time.Time) error {
	key := client.ObjectKeyFromObject(s.job)
	plan := s.planTracking(now)
	if err := r.writeStatus(ctx, s.job, orig); err != nil {
		return fmt.Errorf("adding uncounted pods to status: %w", err)
	}
	// The failed pods now listed as uncounted were handled by the pod failure policy.
	for action, n := range plan.policyActions {
		podFailuresByPolicy.WithLabelValues(action).Add(float64(n))
	}
	r.backoff.set(key, s.newBackoff)

	removed, rmErr := r.removeFinalizers(ctx, key, plan.removeFinalizer)
	for _, uid := range removed {
		plan.withFinalizer.Delete(uid)
	}
	countRemovedFinalizers(&s.job.Status, plan.withFinalizer)
	if rmErr != nil {
		// Record the partial progress; the rest is retried.
		return errors.Join(rmErr, r.writeStatus(ctx, s.job, orig))
	}
	finished := !plan.reachedMax && s.finish(now)
	if err := r.writeStatus(ctx, s.job, orig); err != nil {
		return fmt.Errorf("removing uncounted pods from status: %w", err)
	}
	if finished {
		r.recordFinished(s.job, s.finished)
		recordJobFinished(s.job, s.finished)
	}
	return nil
}

// removeFinalizers removes the tracking finalizer from the pods in parallel and returns
// the UIDs of those that no longer have it (or are gone).
func (r *Reconciler) removeFinalizers(ctx context.Context, key types.NamespacedName, pods []*corev1.Pod) ([]types.UID, error) {
	if len(pods) == 0 {
		return nil, nil
	}
	uids := make([]types.UID, len(pods))
	for i, p := range pods {
		uids[i] = p.UID
	}
	r.finalizers.expect(key, uids...)
	var (
		mu      sync.Mutex
		removed []types.UID
	)
	// All at once, as upstream (at most the pods one status write records).
	err := parallel.Do(ctx, len(pods), len(pods), func(ctx context.Context, i int) error {
		p := pods[i]
		err := r.removeFinalizer(ctx, p)
		if err != nil {
			// No update will show this removal.
			r.finalizers.observed(key, p.UID)
		}
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("removing tracking finalizer from %s: %w", p.Name, err)
		}
		mu.Lock()
		removed = append(removed, p.UID)
		mu.Unlock()
		return nil
	})
	return removed, err
}

// writeStatus updates the Job's status when it differs from orig, guarded by orig's
// resourceVersion: counters computed from a stale Job must not be written. On success
// job holds what the API server stored and orig becomes a copy of it. An update of the
// status subresource, as upstream's UpdateStatus: job-controller's role grants update, not
// patch, on jobs/status.
func (r *Reconciler) writeStatus(ctx context.Context, job, orig *batchv1.Job) error {
	if equality.Semantic.DeepEqual(orig.Status, job.Status) {
		return nil
	}
	// Optimistic: the counters add to what orig holds; written over a newer status they
	// would count pods twice or lose them.
	stored := job.DeepCopy()
	stored.ResourceVersion = orig.ResourceVersion
	if err := patch.Status(ctx, r.Client, stored); err != nil {
		return err
	}
	r.Stale.WroteAt(client.ObjectKeyFromObject(job), stored.UID, jobsResource, stored.ResourceVersion)
	recordPodsFinished(stored, &orig.Status)
	*job = *stored
	*orig = *stored.DeepCopy()
	return nil
}

// recordFinished reports the terminal condition as upstream does.
func (r *Reconciler) recordFinished(job *batchv1.Job, c *batchv1.JobCondition) {
	if c.Type == batchv1.JobComplete {
		if job.Spec.Completions != nil && job.Status.Succeeded > *job.Spec.Completions {
			r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, "TooManySucceededPods", "Complete", "Too many succeeded pods running after completion count reached")
		}
		r.Recorder.Eventf(job, nil, corev1.EventTypeNormal, "Completed", "Complete", "Job completed")
		return
	}
	r.Recorder.Eventf(job, nil, corev1.EventTypeWarning, c.Reason, "Fail", "%s", c.Message)
}

// SetupWithManager watches Jobs and their pods, and runs the companion controller that
// releases the finalizers of pods no Job tracks any more (orphanReconciler).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, APIReader and Recorder are required", ControllerName)
	}
	r.init()
	// What the per-object view (/debug/controllers/<controller>/objects/...) shows of a key.
	track.For(ControllerName).ExpectationsFrom(expectations.Views(r.expectations))
	track.For(ControllerName).StaleFrom(r.Stale.View)
	track.For(ControllerName).ObjectsOf(batchv1.SchemeGroupVersion.WithKind("Job").GroupKind()) // built without For
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&batchv1.Job{}, &jobHandler{r: r}).
		Watches(&corev1.Pod{}, trackedPodHandler{r.podHandler()}).
		WithOptions(controller.Options{
			NewQueue:                newQueue,
			MaxConcurrentReconciles: workers,
			RateLimiter:             workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](apiBackoff, maxAPIBackoff),
		}).
		Complete(r)
	if err != nil {
		return err
	}
	return (&orphanReconciler{client: r.Client}).setupWithManager(mgr, workers)
}

// init applies the production defaults to unset settings and creates the in-memory state.
func (r *Reconciler) init() {
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.PodFailureBackoff <= 0 {
		r.PodFailureBackoff = DefaultPodFailureBackoff
	}
	if r.MaxPodFailureBackoff <= 0 {
		r.MaxPodFailureBackoff = DefaultMaxPodFailureBackoff
	}
	if r.BatchPeriod <= 0 {
		r.BatchPeriod = DefaultBatchPeriod
	}
	r.expectations = expectations.New(r.Clock)
	r.finalizers = newFinalizerExpectations()
	r.backoff = newBackoffStore()
}

// The StaleControllerConsistencyJob guard, counted in job_controller_stale_sync_skips_total: a
// Job's sync waits for the cache to show its own writes, the pods it created and its status.
var (
	podsResource = staleness.Pods
	jobsResource = schema.GroupResource{Group: "batch", Resource: "jobs"}
	staleGuard   = staleness.ForOwner("job_controller", "Job",
		staleness.Watched{Resource: podsResource, Object: &corev1.Pod{}},
		staleness.Watched{Resource: jobsResource, Object: &batchv1.Job{}})
)
