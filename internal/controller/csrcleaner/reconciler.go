// Package csrcleaner is upstream's certificatesigningrequest-cleaner-controller: it deletes
// CertificateSigningRequests once upstream's retention for their state has passed.
package csrcleaner

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
const ControllerName = "certificatesigningrequest-cleaner-controller"

// Reconciler judges one request per sync. Upstream sweeps every request once an hour;
// kcm judges each when it changes and comes back at its deadline, so that a request goes no
// later than upstream's sweep would let it go.
type Reconciler struct {
	// Client reads requests from the cache and deletes them.
	Client client.Client
	Clock  clock.PassiveClock
}

// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests,verbs=delete

// Reconcile deletes the request when its retention has passed, and otherwise comes back
// when it will have.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if csr.DeletionTimestamp != nil {
		return reconcile.Result{}, nil
	}

	deadline, reason, ok := Deadline(csr)
	if !ok {
		return reconcile.Result{}, nil
	}
	now := r.Clock.Now()
	if !now.After(deadline) {
		// Just past the deadline, since the request goes only once now is after it.
		return reconcile.Result{RequeueAfter: deadline.Sub(now) + time.Second}, nil
	}

	log.FromContext(ctx).Info("Cleaning CSR", "csr", csr.Name, "reason", reason)
	if err := r.Client.Delete(ctx, csr); client.IgnoreNotFound(err) != nil {
		return reconcile.Result{}, fmt.Errorf("unable to delete CSR %q: %w", csr.Name, err)
	}
	return reconcile.Result{}, nil
}

// SetupWithManager watches requests with workers workers.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		For(&certificatesv1.CertificateSigningRequest{}).
		WithOptions(controller.Options{NewQueue: setup.Queue(ControllerName), MaxConcurrentReconciles: workers}).
		Complete(r)
}
