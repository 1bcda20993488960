// Package clusterroleaggregation is upstream's clusterrole-aggregation-controller: a
// ClusterRole with an aggregationRule holds the union of the rules of the ClusterRoles its
// selectors match, kept current as those change.
package clusterroleaggregation

import (
	"context"
	"fmt"

	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
)

// ControllerName is upstream's name for this controller, and its field manager and
// ServiceAccount.
const ControllerName = "clusterrole-aggregation-controller"

// Reconciler aggregates one ClusterRole per request.
type Reconciler struct {
	// Client reads ClusterRoles from the cache and applies the aggregated rules.
	Client client.Client
}

// The rules are written by server-side apply, as upstream's; escalate lets the controller
// write rules it does not hold itself.
// +kubebuilder:rbac:groups=rbac.authorization.k8s.io,resources=clusterroles,verbs=patch;escalate

// Reconcile sets an aggregated ClusterRole's rules to the union of the roles it selects.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	role := &rbacv1.ClusterRole{}
	if err := r.Client.Get(ctx, req.NamespacedName, role); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if role.AggregationRule == nil {
		return reconcile.Result{}, nil
	}

	all := &rbacv1.ClusterRoleList{}
	if err := r.Client.List(ctx, all); err != nil {
		return reconcile.Result{}, err
	}
	rules, err := Aggregate(role.Name, role.AggregationRule, all.Items)
	if err != nil {
		return reconcile.Result{}, err
	}
	if UpToDate(role.Rules, rules) {
		return reconcile.Result{}, nil
	}

	// As upstream: an apply of the rules alone, forced, under the controller's field manager.
	apply, err := patch.ServerSideApply(rbacv1ac.ClusterRole(role.Name).WithRules(applyRules(rules)...))
	if err != nil {
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, r.Client.Patch(ctx, &rbacv1.ClusterRole{ObjectMeta: metav1.ObjectMeta{Name: role.Name}}, apply,
		client.FieldOwner(ControllerName), client.ForceOwnership)
}

func applyRules(rules []rbacv1.PolicyRule) []*rbacv1ac.PolicyRuleApplyConfiguration {
	out := make([]*rbacv1ac.PolicyRuleApplyConfiguration, 0, len(rules))
	for _, pr := range rules {
		a := rbacv1ac.PolicyRule()
		a.Verbs = pr.Verbs
		a.APIGroups = pr.APIGroups
		a.Resources = pr.Resources
		a.ResourceNames = pr.ResourceNames
		a.NonResourceURLs = pr.NonResourceURLs
		out = append(out, a)
	}
	return out
}

// aggregatedRoles maps any ClusterRole event to every aggregated ClusterRole: as upstream,
// the set of roles is small and which aggregations a change touches is not worked out.
func (r *Reconciler) aggregatedRoles(ctx context.Context, _ client.Object) []reconcile.Request {
	all := &rbacv1.ClusterRoleList{}
	if err := r.Client.List(ctx, all); err != nil {
		return nil
	}
	var reqs []reconcile.Request
	for i := range all.Items {
		if all.Items[i].AggregationRule != nil {
			reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&all.Items[i])})
		}
	}
	return reqs
}

// SetupWithManager watches ClusterRoles with workers workers.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&rbacv1.ClusterRole{}, handler.EnqueueRequestsFromMapFunc(r.aggregatedRoles)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}
