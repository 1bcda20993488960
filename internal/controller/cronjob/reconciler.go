package cronjob

import (
	"context"
	"errors"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/reference"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/track"
)

const (
	// ControllerName is the upstream controller name, also the Events' reporting controller.
	ControllerName = "cronjob-controller"
	// ClientName is the upstream client (service account) name.
	ClientName = "cronjob-controller"
)

// Reconciler runs the Jobs of one CronJob. It needs the Job ControllerUID index.
type Reconciler struct {
	Client client.Client
	// APIReader reads around the cache: the CronJob when the cache may lag behind its last
	// status write, and Jobs the cache does not show.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// Clock tells the time schedules are compared with; the real clock when nil.
	Clock clock.PassiveClock
}

// What cronjob-controller's own client does (reads of the shared cache run as kcm's
// identity): live gets of the CronJob, of Jobs the cache does not show yet and of Jobs about
// to be replaced, the status update, Jobs created (blocking owner reference) and deleted.
//
// +kubebuilder:rbac:groups=batch,resources=cronjobs,verbs=get
// +kubebuilder:rbac:groups=batch,resources=cronjobs/status,verbs=update
// +kubebuilder:rbac:groups=batch,resources=cronjobs/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;create;delete

// Reconcile brings status.active up to date with the CronJob's Jobs, deletes the history
// beyond the limits, starts the Job due now if any, writes status and comes back at the
// next schedule time.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cj := &batchv1.CronJob{}
	if err := r.Client.Get(ctx, req.NamespacedName, cj); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	jobs, err := r.jobsOf(ctx, cj)
	if err != nil {
		return reconcile.Result{}, err
	}
	// An unfinished Job that status.active does not list is most often one this controller
	// just created, its status write not in the cache yet: ask the API server.
	if len(accountJobs(cj.Status.DeepCopy(), jobs).Unexpected) > 0 {
		fresh := &batchv1.CronJob{}
		if err := r.APIReader.Get(ctx, req.NamespacedName, fresh); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
		if fresh.UID != cj.UID {
			// Deleted and created again: the new one's events are on their way.
			return reconcile.Result{}, nil
		}
		cj = fresh
	}
	orig, cj := cj, cj.DeepCopy()

	// Observe and account: history first, as upstream, then what the Jobs say.
	// A failed deletion does not hold up the schedule; it is retried with backoff.
	historyErr := r.deleteHistory(ctx, cj, jobs)
	acc := accountJobs(&cj.Status, jobs)
	r.record(cj, acc.Events...)
	for _, j := range acc.Unexpected {
		r.record(cj, about(j, warning("UnexpectedJob", "Sync", "Saw a job that the controller did not create or forgot: %s", j.Name)))
	}
	actErr := r.confirmMissing(ctx, cj, acc.Missing)

	// Compare and act: nothing starts for a CronJob being deleted.
	var p plan
	if cj.DeletionTimestamp == nil && actErr == nil {
		p = decide(cj, r.Clock.Now())
		r.record(cj, p.Events...)
		if p.Start {
			actErr = r.start(ctx, cj, p)
		}
	}
	actErr = errors.Join(historyErr, actErr)

	if err := r.patchStatus(ctx, orig, cj); err != nil {
		return reconcile.Result{}, errors.Join(actErr, err)
	}
	switch {
	case actErr != nil:
		return reconcile.Result{}, actErr
	case p.Terminal != nil:
		return reconcile.Result{}, reconcile.TerminalError(p.Terminal)
	}
	if p.RequeueAfter > 0 {
		log.FromContext(ctx).V(4).Info("Requeueing for the next schedule time", "after", p.RequeueAfter)
	}
	return reconcile.Result{RequeueAfter: p.RequeueAfter}, nil
}

// jobsOf lists, from the cache, the Jobs the CronJob controls.
func (r *Reconciler) jobsOf(ctx context.Context, cj *batchv1.CronJob) ([]*batchv1.Job, error) {
	list := &batchv1.JobList{}
	if err := r.Client.List(ctx, list, client.InNamespace(cj.Namespace), client.MatchingFields{index.ControllerUID: string(cj.UID)}); err != nil {
		return nil, fmt.Errorf("listing jobs: %w", err)
	}
	out := make([]*batchv1.Job, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

// deleteHistory deletes the finished Jobs beyond the history limits.
func (r *Reconciler) deleteHistory(ctx context.Context, cj *batchv1.CronJob, jobs []*batchv1.Job) error {
	var errs []error
	for _, j := range historyToDelete(&cj.Spec, jobs) {
		log.FromContext(ctx).V(4).Info("Deleting Job beyond the history limit", "job", j.Name)
		errs = append(errs, r.deleteJob(ctx, cj, j.Name, j.UID))
	}
	return errors.Join(errs...)
}

// confirmMissing asks the API server about the active Jobs the cache does not show: those
// really gone leave status.active (MissingJob).
func (r *Reconciler) confirmMissing(ctx context.Context, cj *batchv1.CronJob, missing []corev1.ObjectReference) error {
	for _, ref := range missing {
		j := &batchv1.Job{}
		err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, j)
		switch {
		case apierrors.IsNotFound(err), err == nil && j.UID != ref.UID:
			gone := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: ref.Namespace, Name: ref.Name, UID: ref.UID}}
			r.record(cj, about(gone, normal("MissingJob", "Sync", "Active job went missing: %v", ref.Name)))
			removeActive(&cj.Status, ref.UID)
		case err != nil:
			return fmt.Errorf("getting job %s: %w", ref.Name, err)
		}
		// Else the cache lags behind: the Job exists.
	}
	return nil
}

// start deletes the active Jobs when replacing them, creates the Job for the schedule time
// and lists it in status.active.
func (r *Reconciler) start(ctx context.Context, cj *batchv1.CronJob, p plan) error {
	logger := log.FromContext(ctx)
	if p.Replace {
		for _, ref := range append([]corev1.ObjectReference(nil), cj.Status.Active...) {
			logger.V(4).Info("Deleting Job that was still running at the next schedule time", "job", ref.Name)
			// Upstream reads each Job from the API server before deleting it, and a Job it
			// cannot read (gone since the cache showed it, or an error) stops the start.
			if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &batchv1.Job{}); err != nil {
				r.record(cj, warning("FailedGet", "Get", "Get job: %v", err))
				return err
			}
			if err := r.deleteJob(ctx, cj, ref.Name, ref.UID); err != nil {
				return fmt.Errorf("could not replace job %s/%s: %w", ref.Namespace, ref.Name, err)
			}
		}
	}
	job, err := jobFromTemplate(cj, p.ScheduledTime)
	if err != nil {
		return err
	}
	err = r.Client.Create(ctx, job)
	switch {
	case err == nil:
		recordCreation(job.CreationTimestamp.Time, p.ScheduledTime)
		logger.V(4).Info("Created Job", "job", job.Name)
		r.record(cj, about(job, normal("SuccessfulCreate", "Create", "Created job %v", job.Name)))
	case apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return err
	case apierrors.IsAlreadyExists(err):
		// Created before without the status write, or by someone else.
		existing := &batchv1.Job{}
		if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(job), existing); err != nil {
			return err
		}
		if !metav1.IsControlledBy(existing, cj) || activeIndex(&cj.Status, existing.UID) >= 0 {
			return nil
		}
		logger.Info("Job already exists", "job", job.Name)
		job = existing
	default:
		r.record(cj, warning("FailedCreate", "Create", "Error creating job: %v", err))
		return err
	}
	ref, err := reference.GetReference(r.Client.Scheme(), job)
	if err != nil {
		return fmt.Errorf("making a reference to job %s: %w", job.Name, err)
	}
	cj.Status.Active = append(cj.Status.Active, *ref)
	cj.Status.LastScheduleTime = &metav1.Time{Time: p.ScheduledTime}
	return nil
}

// deleteJob deletes one Job of the CronJob, its pods in the background, and takes it out of
// status.active. A Job already gone counts as deleted.
func (r *Reconciler) deleteJob(ctx context.Context, cj *batchv1.CronJob, name string, uid types.UID) error {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: cj.Namespace, Name: name, UID: uid}}
	err := r.Client.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground), client.Preconditions{UID: &uid})
	switch {
	case err == nil:
		r.record(cj, about(j, normal("SuccessfulDelete", "Delete", "Deleted job %v", name)))
	case apierrors.IsNotFound(err), apierrors.IsConflict(err):
		// Gone already, or the name now belongs to another Job: either way this one is gone.
	default:
		r.record(cj, about(j, warning("FailedDelete", "Delete", "Deleted job: %v", err)))
		return fmt.Errorf("deleting job %s: %w", name, err)
	}
	removeActive(&cj.Status, uid)
	return nil
}

// patchStatus writes cj's status when it differs from orig's, failing on a conflict so that
// status.active is never written from a stale copy.
func (r *Reconciler) patchStatus(ctx context.Context, orig, cj *batchv1.CronJob) error {
	if equality.Semantic.DeepEqual(orig.Status, cj.Status) {
		return nil
	}
	obj := orig.DeepCopy()
	obj.Status = cj.Status
	// Optimistic: status.active and lastScheduleTime cannot be recomputed from the Jobs; a
	// stale write would lose an active Job or fire a schedule twice.
	if err := patch.Status(ctx, r.Client, obj); err != nil {
		return fmt.Errorf("updating status: %w", err)
	}
	return nil
}

func (r *Reconciler) record(cj *batchv1.CronJob, events ...notice) {
	for _, e := range events {
		if e.Related != nil {
			r.Recorder.Eventf(cj, e.Related, e.Type, e.Reason, e.Action, "%s", e.Note)
		} else {
			r.Recorder.Eventf(cj, nil, e.Type, e.Reason, e.Action, "%s", e.Note)
		}
	}
}

// about relates an Event to a Job.
func about(j *batchv1.Job, e notice) notice {
	e.Related = j
	return e
}

// SetupWithManager watches CronJobs (a changed schedule waits for its next time, as
// upstream) and the Jobs they control.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Recorder == nil {
		return errors.New(ControllerName + ": Client, APIReader and Recorder are required")
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	// Built without For: the per-object views learn the kind of the keys here.
	track.For(ControllerName).ObjectsOf(batchv1.SchemeGroupVersion.WithKind("CronJob").GroupKind())
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&batchv1.CronJob{}, r.cronJobHandler()).
		Watches(&batchv1.Job{}, handler.EnqueueRequestForOwner(mgr.GetScheme(), mgr.GetRESTMapper(), &batchv1.CronJob{}, handler.OnlyControllerOwner())).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
