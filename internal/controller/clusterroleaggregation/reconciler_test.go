package clusterroleaggregation_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/clusterroleaggregation"
	"github.com/kcm/kcm/internal/testenv"
)

const aggregateToEdit = "rbac.authorization.k8s.io/aggregate-to-edit"

func rulesOf(ctx context.Context, name string) func() []rbacv1.PolicyRule {
	return func() []rbacv1.PolicyRule {
		r := &rbacv1.ClusterRole{}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, r); err != nil {
			return nil
		}
		return r.Rules
	}
}

func widgets(group string) rbacv1.PolicyRule {
	return rbacv1.PolicyRule{Verbs: []string{"get"}, APIGroups: []string{group}, Resources: []string{"widgets"}}
}

var _ = Describe("clusterrole-aggregation-controller", func() {
	It("gives edit the rules of the API server's system:aggregate-to-edit", func(ctx SpecContext) {
		src := &rbacv1.ClusterRole{}
		Expect(env.Client.Get(ctx, client.ObjectKey{Name: "system:aggregate-to-edit"}, src)).To(Succeed())
		Expect(src.Rules).NotTo(BeEmpty())
		Eventually(rulesOf(ctx, "edit")).Should(ContainElements(src.Rules))
	})

	It("adds a labelled ClusterRole's rules to edit (and through edit to admin) and removes them with the label", func(ctx SpecContext) {
		failures := testenv.ReconcileErrors(clusterroleaggregation.ControllerName)()
		rule := widgets(rand.String(8) + ".example.com")
		r := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: "widgets-" + rand.String(6), Labels: map[string]string{aggregateToEdit: "true"}},
			Rules:      []rbacv1.PolicyRule{rule},
		}
		Expect(env.Client.Create(ctx, r)).To(Succeed())
		DeferCleanup(func(ctx context.Context) { Expect(client.IgnoreNotFound(env.Client.Delete(ctx, r))).To(Succeed()) })
		Eventually(rulesOf(ctx, "edit")).Should(ContainElement(rule))
		Eventually(rulesOf(ctx, "admin")).Should(ContainElement(rule))

		patch := client.MergeFrom(r.DeepCopy())
		delete(r.Labels, aggregateToEdit)
		Expect(env.Client.Patch(ctx, r, patch)).To(Succeed())
		Eventually(rulesOf(ctx, "edit")).ShouldNot(ContainElement(rule))
		Eventually(rulesOf(ctx, "admin")).ShouldNot(ContainElement(rule))
		// Each of those applies succeeded, and was taken as a success: an apply whose answer
		// the client cannot decode (protobuf, kcm's default content type) counts an error
		// and a retry per write.
		Consistently(testenv.ReconcileErrors(clusterroleaggregation.ControllerName), "1s").Should(Equal(failures))
	})

	It("keeps its order: selectors in turn, the matching roles by name, a rule once", func(ctx SpecContext) {
		label := "test.kcm.io/" + rand.String(6)
		x, y, z := widgets("x.example.com"), widgets("y.example.com"), widgets("z.example.com")
		agg := &rbacv1.ClusterRole{
			ObjectMeta:      metav1.ObjectMeta{Name: "agg-" + rand.String(6)},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}},
		}
		Expect(env.Client.Create(ctx, agg)).To(Succeed())
		for name, rules := range map[string][]rbacv1.PolicyRule{"b": {z, x}, "a": {y, z}} {
			Expect(env.Client.Create(ctx, &rbacv1.ClusterRole{
				ObjectMeta: metav1.ObjectMeta{Name: agg.Name + "-" + name, Labels: map[string]string{label: "true"}},
				Rules:      rules,
			})).To(Succeed())
		}
		Eventually(rulesOf(ctx, agg.Name)).Should(Equal([]rbacv1.PolicyRule{y, z, x}))
	})

	It("writes nothing when nothing changed", func(ctx SpecContext) {
		label := "test.kcm.io/" + rand.String(6)
		a, b := widgets("a.example.com"), widgets("b.example.com")
		agg := &rbacv1.ClusterRole{
			ObjectMeta:      metav1.ObjectMeta{Name: "agg-" + rand.String(6)},
			AggregationRule: &rbacv1.AggregationRule{ClusterRoleSelectors: []metav1.LabelSelector{{MatchLabels: map[string]string{label: "true"}}}},
		}
		Expect(env.Client.Create(ctx, agg)).To(Succeed())
		src := &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: agg.Name + "-a", Labels: map[string]string{label: "true"}},
			Rules:      []rbacv1.PolicyRule{a},
		}
		Expect(env.Client.Create(ctx, src)).To(Succeed())
		Eventually(rulesOf(ctx, agg.Name)).Should(Equal([]rbacv1.PolicyRule{a}))
		gets, _ := rec.counts(agg.Name)

		// A change that leaves the aggregation as it is: the role is synced again (its read
		// is the witness) ...
		patch := client.MergeFrom(src.DeepCopy())
		src.Annotations = map[string]string{"touched": "yes"}
		Expect(env.Client.Patch(ctx, src, patch)).To(Succeed())
		Eventually(func() int { n, _ := rec.counts(agg.Name); return n }).Should(BeNumerically(">", gets))

		// ... and the next change is synced after that sync has ended (a role is never synced
		// twice at once): by then no sync has written the rules it read.
		Expect(env.Client.Create(ctx, &rbacv1.ClusterRole{
			ObjectMeta: metav1.ObjectMeta{Name: agg.Name + "-b", Labels: map[string]string{label: "true"}},
			Rules:      []rbacv1.PolicyRule{b},
		})).To(Succeed())
		Eventually(rulesOf(ctx, agg.Name)).Should(Equal([]rbacv1.PolicyRule{a, b}))
		_, needless := rec.counts(agg.Name)
		Expect(needless).To(BeZero())
	})
})
