package validatingadmissionpolicystatus_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/validatingadmissionpolicystatus"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestValidatingAdmissionPolicyStatusController(t *testing.T) {
	testenv.RunSuite(t, "validatingadmissionpolicy-status-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManager([]string{validatingadmissionpolicystatus.ControllerName})).To(Succeed())
})

// policy is a ValidatingAdmissionPolicy matching creates and updates of group/version/resource,
// with one validation per expression.
func policy(name, group, version, resource string, expressions ...string) *admissionregistrationv1.ValidatingAdmissionPolicy {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{GenerateName: name + "-"},
		Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
			MatchConstraints: &admissionregistrationv1.MatchResources{
				ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
						Rule: admissionregistrationv1.Rule{
							APIGroups: []string{group}, APIVersions: []string{version}, Resources: []string{resource},
						},
					},
				}},
			},
		},
	}
	for _, e := range expressions {
		p.Spec.Validations = append(p.Spec.Validations, admissionregistrationv1.Validation{Expression: e})
	}
	return p
}

// checked waits for the status of the policy's current generation and returns the policy.
func checked(ctx context.Context, p *admissionregistrationv1.ValidatingAdmissionPolicy) *admissionregistrationv1.ValidatingAdmissionPolicy {
	GinkgoHelper()
	got := &admissionregistrationv1.ValidatingAdmissionPolicy{}
	Eventually(func(g Gomega) {
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(p), got)).To(Succeed())
		g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
	}).Should(Succeed())
	return got
}

var _ = Describe("validatingadmissionpolicy-status-controller", func() {
	It("writes the warnings of expressions that do not type-check against the matched kind", func(ctx SpecContext) {
		p := policy("bad", "apps", "v1", "deployments",
			"object.spec.replicas > 1",
			"object.foo == 'bar'",
			"object.spec.replicas == 'three'")
		Expect(env.Client.Create(ctx, p)).To(Succeed())

		got := checked(ctx, p)
		Expect(got.Status.TypeChecking).NotTo(BeNil())
		warnings := got.Status.TypeChecking.ExpressionWarnings
		Expect(warnings).To(HaveLen(2), "the first expression is well typed: %v", warnings)
		Expect(warnings[0].FieldRef).To(Equal("spec.validations[1].expression"))
		Expect(warnings[0].Warning).To(And(
			ContainSubstring("apps/v1, Kind=Deployment"),
			ContainSubstring("undefined field 'foo'")))
		Expect(warnings[1].FieldRef).To(Equal("spec.validations[2].expression"))
		Expect(warnings[1].Warning).To(And(
			ContainSubstring("apps/v1, Kind=Deployment"),
			ContainSubstring("found no matching overload for '_==_' applied to '(int, string)'")))
		Expect(got.ManagedFields).To(ContainElement(And(
			HaveField("Manager", validatingadmissionpolicystatus.FieldManager),
			HaveField("Subresource", "status"))))
	})

	It("writes empty warnings for a well-typed policy and checks each new generation", func(ctx SpecContext) {
		p := policy("good", "apps", "v1", "deployments", "object.spec.replicas > 1")
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		got := checked(ctx, p)
		Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(1))
		Expect(got.Status.TypeChecking).NotTo(BeNil(), "typeChecking is written, empty, as upstream")
		Expect(got.Status.TypeChecking.ExpressionWarnings).To(BeEmpty())

		By("an update of the spec")
		got.Spec.Validations[0].Expression = "object.spec.replicas > 'one'"
		Expect(env.Client.Update(ctx, got)).To(Succeed())
		got = checked(ctx, got)
		Expect(got.Status.ObservedGeneration).To(BeEquivalentTo(2))
		Expect(got.Status.TypeChecking.ExpressionWarnings).To(ConsistOf(And(
			HaveField("FieldRef", "spec.validations[0].expression"),
			HaveField("Warning", ContainSubstring("found no matching overload for '_>_' applied to '(int, string)'")))))
	})

	It("checks a policy matching a custom resource against its CRD's schema", func(ctx SpecContext) {
		installGadgetCRD(ctx)
		p := policy("crd", gadgetGroup, "v1", "gadgets",
			"object.spec.size > 1",
			"object.spec.size == 'big'",
			"object.spec.colour == 'red'")
		Expect(env.Client.Create(ctx, p)).To(Succeed())
		got := checked(ctx, p)
		Expect(got.Status.TypeChecking).NotTo(BeNil())
		Expect(got.Status.TypeChecking.ExpressionWarnings).To(HaveExactElements(
			And(HaveField("FieldRef", "spec.validations[1].expression"),
				HaveField("Warning", And(
					ContainSubstring(gadgetGroup+"/v1, Kind=Gadget"),
					ContainSubstring("found no matching overload for '_==_' applied to '(int, string)'")))),
			And(HaveField("FieldRef", "spec.validations[2].expression"),
				HaveField("Warning", ContainSubstring("undefined field 'colour'"))),
		))
	})
})

// Custom resources: a cluster-scoped Gadget of group vap.kcm.test whose spec.size is an integer.
const gadgetGroup = "vap.kcm.test"

// installGadgetCRD creates the Gadget CRD, after the manager started (its REST mapper has not
// seen the group), and waits until the API server publishes its schema in OpenAPI v3: the
// publication lags the CRD, and a policy checked before it is checked against no schema, as
// upstream's would be.
func installGadgetCRD(ctx context.Context) {
	GinkgoHelper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "gadgets." + gadgetGroup},
		"spec": map[string]any{
			"group": gadgetGroup,
			"scope": "Cluster",
			"names": map[string]any{"plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object",
					"properties": map[string]any{
						"spec": map[string]any{
							"type":       "object",
							"properties": map[string]any{"size": map[string]any{"type": "integer"}},
						},
					},
				}},
			}},
		},
	}}
	Expect(env.Client.Create(ctx, crd)).To(Succeed())
	disco, err := discovery.NewDiscoveryClientForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	schemas := &resolver.ClientDiscoveryResolver{Discovery: disco}
	Eventually(func() error {
		_, err := schemas.ResolveSchema(schema.GroupVersionKind{Group: gadgetGroup, Version: "v1", Kind: "Gadget"})
		return err
	}).Should(Succeed())
}
