package testenv

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/metrics"
)

// ReconcileErrors reads controller-runtime's reconcile error count of the named controller
// from the manager running in this process: the witness that a sync failed.
func ReconcileErrors(controller string) func() float64 {
	return func() float64 {
		families, err := metrics.Registry.Gather()
		if err != nil {
			return 0
		}
		for _, f := range families {
			if f.GetName() != "controller_runtime_reconcile_errors_total" {
				continue
			}
			for _, m := range f.GetMetric() {
				for _, l := range m.GetLabel() {
					if l.GetName() == "controller" && l.GetValue() == controller {
						return m.GetCounter().GetValue()
					}
				}
			}
		}
		return 0
	}
}

// DenyCreates makes the API server refuse every create of resource (core group) in the
// namespace, by a ValidatingAdmissionPolicy, until the returned function lifts it: how a
// spec makes a controller's writes fail. probe creates one such object; the policy is in
// force once the probe is refused.
func (e *Env) DenyCreates(ctx context.Context, ns, resource string, probe func() error) (lift func()) {
	GinkgoHelper()
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + resource + "-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{resource}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "false", Message: "denied by the test", Reason: ptr.To(metav1.StatusReasonForbidden)}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: policy.Name},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	Expect(e.Client.Create(ctx, policy)).To(Succeed())
	Expect(e.Client.Create(ctx, binding)).To(Succeed())
	Eventually(probe).Should(MatchError(ContainSubstring("denied by the test")), "the API server enforces the policy")
	return func() {
		GinkgoHelper()
		Expect(client.IgnoreNotFound(e.Client.Delete(ctx, binding))).To(Succeed())
		Expect(client.IgnoreNotFound(e.Client.Delete(ctx, policy))).To(Succeed())
	}
}
