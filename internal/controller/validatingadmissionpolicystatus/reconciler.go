// Package validatingadmissionpolicystatus is upstream's
// validatingadmissionpolicy-status-controller: each ValidatingAdmissionPolicy's validation
// and message expressions are type-checked against the schemas of the kinds it matches (and
// of its paramKind), and the warnings are applied to status.typeChecking with
// status.observedGeneration, once per generation. The checks are the API server's own
// (k8s.io/apiserver's TypeChecker); the policy's behaviour does not depend on them.
package validatingadmissionpolicystatus

import (
	"context"
	"fmt"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
)

const (
	// ControllerName is the controller's name in --controllers.
	ControllerName = "validatingadmissionpolicy-status-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "validatingadmissionpolicy-status-controller"
	// FieldManager owns the status fields the controller applies, upstream's.
	FieldManager = "validatingadmissionpolicy-status"
)

// Reconciler writes one policy's type-checking status.
type Reconciler struct {
	// Client reads policies from the cache and applies their status.
	Client client.Client
	// Checker type-checks a policy (NewTypeChecker).
	Checker Checker
}

// Policies are read from the shared cache (kcm's identity); the controller's own identity
// applies their status.
// +kubebuilder:rbac:groups=admissionregistration.k8s.io,resources=validatingadmissionpolicies/status,verbs=patch

// Reconcile type-checks a policy whose generation has not been observed and applies the result.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	policy := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	if err := r.Client.Get(ctx, req.NamespacedName, policy); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !NeedsCheck(policy) {
		return reconcile.Result{}, nil
	}
	warnings := r.Checker.Check(policy)
	log.FromContext(ctx).V(4).Info("Type-checked ValidatingAdmissionPolicy", "generation", policy.Generation, "warnings", len(warnings))
	body, err := patch.ServerSideApply(StatusApply(policy, warnings))
	if err != nil {
		return reconcile.Result{}, err
	}
	// Applied and forced as upstream's, so that the fields stay this field manager's.
	err = r.Client.Status().Patch(ctx, policy, body, client.FieldOwner(FieldManager), client.ForceOwnership)
	return reconcile.Result{}, client.IgnoreNotFound(err)
}

// SetupWithManager registers the controller: every policy added or updated, as upstream
// (a status write that reset the observed generation is answered too).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Checker == nil {
		return fmt.Errorf("%s: Client and Checker are required", ControllerName)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&admissionregistrationv1.ValidatingAdmissionPolicy{}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
