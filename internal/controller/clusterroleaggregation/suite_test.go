package clusterroleaggregation_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"

	"github.com/kcm/kcm/internal/controller/clusterroleaggregation"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	rec *recorder
)

func TestClusterRoleAggregation(t *testing.T) {
	testenv.RunSuite(t, "clusterrole-aggregation-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{clusterroleaggregation.ControllerName}, nil,
		setup.OverrideFor(clusterroleaggregation.ControllerName, func(r *clusterroleaggregation.Reconciler) {
			rec = &recorder{Client: r.Client, gets: map[string]int{}, read: map[string][]rbacv1.PolicyRule{}, needless: map[string]int{}}
			r.Client = rec
		}))).To(Succeed())
})
