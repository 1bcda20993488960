package validatingadmissionpolicystatus_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

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
