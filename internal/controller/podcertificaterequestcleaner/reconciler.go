// Package podcertificaterequestcleaner is upstream's podcertificaterequest-cleaner-controller:
// PodCertificateRequests are deleted once they are older than a fixed threshold, by which
// every issuance flow is expected to have ended.
package podcertificaterequestcleaner

import (
	"context"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/setup"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "podcertificaterequest-cleaner-controller"

// DefaultThreshold is upstream's: a request is kept 15 minutes from its creation.
const DefaultThreshold = 15 * time.Minute

// Reconciler judges one request per sync. Upstream sweeps every 5 minutes; kcm judges each
// request when it changes and comes back at its deadline, so it deletes no later.
type Reconciler struct {
	// Client reads requests from the cache and deletes them.
	Client    client.Client
	Clock     clock.PassiveClock
	Threshold time.Duration
}

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=podcertificaterequests,verbs=delete

// Reconcile deletes the request once it is Threshold old, and otherwise comes back then.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pcr := &certificatesv1.PodCertificateRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, pcr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if pcr.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}

	if wait := Remaining(pcr.CreationTimestamp.Time, r.Threshold, r.Clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	// Pinned to the UID judged, as upstream: a request recreated under the name is not it.
	log.FromContext(ctx).V(2).Info("Deleting PodCertificateRequest past its threshold", "threshold", r.Threshold)
	if err := r.Client.Delete(ctx, pcr, client.Preconditions{UID: &pcr.UID}); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("unable to delete PodCertificateRequest %s: %w", req.NamespacedName, err)
	}
	return reconcile.Result{}, nil
}

// Remaining is how long a request created at created is still kept at now: upstream keeps
// it while now is before created+threshold, so at the deadline itself it goes.
func Remaining(created time.Time, threshold time.Duration, now time.Time) time.Duration {
	if deadline := created.Add(threshold); now.Before(deadline) {
		return deadline.Sub(now)
	}
	return 0
}

// SetupWithManager watches requests with one worker, as upstream.
func (r *Reconciler) SetupWithManager(mgr manager.Manager) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	if r.Threshold <= 0 {
		return fmt.Errorf("%s: invalid threshold %v", ControllerName, r.Threshold)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&certificatesv1.PodCertificateRequest{}).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName), MaxConcurrentReconciles: 1}).
		Complete(r)
}
