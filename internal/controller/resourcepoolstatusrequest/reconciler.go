// Package resourcepoolstatusrequest is upstream's resourcepoolstatusrequest-controller: it
// answers each new ResourcePoolStatusRequest (resource.k8s.io/v1alpha3) once, writing in its
// status the state of the driver's device pools as the cache's ResourceSlices, allocated
// ResourceClaims and DeviceTaintRules show it (status.go, views.go), and deletes requests
// that have outlived their lifetime (expiry.go).
//
// As upstream, a request is answered once and never again: only requests without a status
// are synced, and slice or claim changes do not bring them back. A pool whose slices are
// still being published is retried a few times before the request is left pending.
package resourcepoolstatusrequest

import (
	"context"
	"fmt"
	"sync"
	"time"

	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/setup"
)

const (
	// ControllerName is upstream's controller name.
	ControllerName = "resourcepoolstatusrequest-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = ControllerName
	// maxRetries is how many times upstream retries a request before leaving it.
	maxRetries = 5
)

// Reconciler answers pending requests and deletes expired ones.
type Reconciler struct {
	// Client reads requests, slices, claims and rules from the cache and writes requests.
	Client client.Client
	// TaintRules counts devices DeviceTaintRules taint as unavailable (DRADeviceTaintRules).
	TaintRules bool
	Clock      clock.PassiveClock
	// CleanupInterval, CompletedTTL and PendingTTL default to upstream's.
	CleanupInterval, CompletedTTL, PendingTTL time.Duration

	// failures counts each request's failed syncs since its last success, for upstream's
	// maxRetries.
	mu       sync.Mutex
	failures map[string]int
}

// Requests, slices, claims and DeviceTaintRules are read from the shared cache (kcm's
// identity); the controller's own identity writes the requests' status and deletes expired
// requests.
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourcepoolstatusrequests/status,verbs=update
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourcepoolstatusrequests,verbs=delete

// Reconcile answers a request that has no status yet.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	err := r.sync(ctx, req.Name)
	return reconcile.Result{}, r.retry(ctx, req.Name, err)
}

func (r *Reconciler) sync(ctx context.Context, name string) error {
	logger := log.FromContext(ctx)
	start := r.Clock.Now()
	request := &resourcev1alpha3.ResourcePoolStatusRequest{}
	if err := r.Client.Get(ctx, client.ObjectKey{Name: name}, request); err != nil {
		// Gone: nothing to answer.
		return nil
	}
	if request.Status != nil {
		logger.V(4).Info("Request already processed, skipping")
		return nil
	}
	driver := request.Spec.Driver
	logger.V(2).Info("Processing ResourcePoolStatusRequest", "driver", driver)

	status := r.compute(ctx, request)
	if HasIncompletePool(&status) {
		// The driver is still publishing; a later try may see the whole pool.
		return fmt.Errorf("incomplete pools detected, requeueing")
	}

	updated := request.DeepCopy()
	updated.Status = &status
	err := r.Client.Status().Update(ctx, updated)
	requestsProcessed.WithLabelValues(driver).Inc()
	requestDuration.WithLabelValues(driver).Observe(r.Clock.Since(start).Seconds())
	if err != nil {
		requestErrors.WithLabelValues(driver).Inc()
		return fmt.Errorf("failed to update status for request %s: %w", name, err)
	}
	logger.V(2).Info("Successfully processed ResourcePoolStatusRequest", "poolCount", len(status.Pools))
	return nil
}

// compute lists the cache's slices, claims and (with TaintRules) DeviceTaintRules and
// computes the status from them; a failed list is the Failed status.
func (r *Reconciler) compute(ctx context.Context, request *resourcev1alpha3.ResourcePoolStatusRequest) resourcev1alpha3.ResourcePoolStatusRequestStatus {
	now := metav1.NewTime(r.Clock.Now())
	slices := &resourcev1.ResourceSliceList{}
	if err := r.Client.List(ctx, slices); err != nil {
		return Failed("Failed to list ResourceSlices: "+err.Error(), now)
	}
	var rules []resourcev1.DeviceTaintRule
	if r.TaintRules {
		list := &resourcev1.DeviceTaintRuleList{}
		if err := r.Client.List(ctx, list); err != nil {
			return Failed("Failed to list DeviceTaintRules: "+err.Error(), now)
		}
		rules = list.Items
	}
	claims := &resourcev1.ResourceClaimList{}
	if err := r.Client.List(ctx, claims); err != nil {
		return Failed("Failed to list ResourceClaims: "+err.Error(), now)
	}
	return Compute(request, Inputs{Slices: slices.Items, Claims: claims.Items, TaintRules: rules}, now)
}

// retry keeps upstream's retry budget: a request failing maxRetries times in a row is
// dropped (left pending until it changes) rather than retried forever.
func (r *Reconciler) retry(ctx context.Context, name string, err error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if err == nil {
		delete(r.failures, name)
		return nil
	}
	if r.failures[name] < maxRetries {
		r.failures[name]++
		return err
	}
	delete(r.failures, name)
	log.FromContext(ctx).Error(err, "Dropping request out of the queue after max retries", "retries", maxRetries)
	return nil
}

// cleanup deletes the requests that have outlived their lifetime, each only if it is still
// the request that was read.
func (r *Reconciler) cleanup(ctx context.Context) {
	logger := log.FromContext(ctx).WithName(ControllerName)
	requests := &resourcev1alpha3.ResourcePoolStatusRequestList{}
	if err := r.Client.List(ctx, requests); err != nil {
		logger.Error(err, "Failed to list ResourcePoolStatusRequests for cleanup")
		return
	}
	now := r.Clock.Now()
	deleted := 0
	for i := range requests.Items {
		request := &requests.Items[i]
		if !Expired(request, now, r.CompletedTTL, r.PendingTTL) {
			continue
		}
		if err := r.Client.Delete(ctx, request, client.Preconditions{UID: &request.UID}); err != nil {
			if !apierrors.IsNotFound(err) {
				logger.Error(err, "Failed to delete expired ResourcePoolStatusRequest", "request", request.Name)
			}
			continue
		}
		deleted++
		logger.V(2).Info("Deleted expired ResourcePoolStatusRequest", "request", request.Name)
	}
	if deleted > 0 {
		logger.Info("Cleanup completed", "deletedCount", deleted)
	}
}

// SetupWithManager registers the controller (pending requests, on creation and update) and
// the periodic cleanup.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if r.CleanupInterval == 0 {
		r.CleanupInterval = CleanupInterval
	}
	if r.CompletedTTL == 0 {
		r.CompletedTTL = CompletedTTL
	}
	if r.PendingTTL == 0 {
		r.PendingTTL = PendingTTL
	}
	r.failures = map[string]int{}
	pending := predicate.NewPredicateFuncs(func(obj client.Object) bool {
		request, ok := obj.(*resourcev1alpha3.ResourcePoolStatusRequest)
		return ok && request.Status == nil
	})
	if err := mgr.Add(manager.RunnableFunc(func(ctx context.Context) error {
		wait.UntilWithContext(ctx, r.cleanup, r.CleanupInterval)
		return nil
	})); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&resourcev1alpha3.ResourcePoolStatusRequest{}, builder.WithPredicates(pending, noDeletes)).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName), MaxConcurrentReconciles: workers}).
		Complete(r)
}

// noDeletes drops deletion events, which upstream does not handle.
var noDeletes = predicate.Funcs{DeleteFunc: func(event.DeleteEvent) bool { return false }}
