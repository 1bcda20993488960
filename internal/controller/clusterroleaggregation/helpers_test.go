package clusterroleaggregation_test

import (
	"context"
	"sync"

	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"
	rbacv1ac "k8s.io/client-go/applyconfigurations/rbac/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// recorder counts, per ClusterRole, the reads that begin a sync and the needless applies:
// those that write exactly the rules the sync read. A server-side apply that changes nothing
// leaves the resourceVersion alone, so only the request itself shows whether the controller
// wrote when nothing changed.
type recorder struct {
	client.Client
	mu       sync.Mutex
	gets     map[string]int
	read     map[string][]rbacv1.PolicyRule
	needless map[string]int
}

func (r *recorder) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Client.Get(ctx, key, obj, opts...)
	if role, ok := obj.(*rbacv1.ClusterRole); ok && err == nil {
		r.mu.Lock()
		r.gets[key.Name]++
		r.read[key.Name] = role.Rules
		r.mu.Unlock()
	}
	return err
}

func (r *recorder) Apply(ctx context.Context, obj runtime.ApplyConfiguration, opts ...client.ApplyOption) error {
	if a, ok := obj.(*rbacv1ac.ClusterRoleApplyConfiguration); ok && a.Name != nil {
		rules := []rbacv1.PolicyRule{}
		for _, pr := range a.Rules {
			rules = append(rules, rbacv1.PolicyRule{Verbs: pr.Verbs, APIGroups: pr.APIGroups, Resources: pr.Resources,
				ResourceNames: pr.ResourceNames, NonResourceURLs: pr.NonResourceURLs})
		}
		r.mu.Lock()
		if equality.Semantic.DeepEqual(rules, r.read[*a.Name]) {
			r.needless[*a.Name]++
		}
		r.mu.Unlock()
	}
	return r.Client.Apply(ctx, obj, opts...)
}

func (r *recorder) counts(name string) (gets, needless int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.gets[name], r.needless[name]
}
