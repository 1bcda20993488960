//go:build e2e && linux

package e2e_test

import (
	"fmt"
	"os"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ValidatingAdmissionPolicies (issue 19's validatingadmissionpolicy-status-controller, as its
// own ServiceAccount under kubeadm's identity): a policy whose expressions do not type-check
// against the kind it matches gets upstream's warnings in its status.
var _ = Describe("ValidatingAdmissionPolicy status", func() {
	It("names the expressions that do not type-check against the matched kind", func(ctx SpecContext) {
		policy := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "e2e-typecheck-"},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				MatchConstraints: &admissionregistrationv1.MatchResources{
					ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
						RuleWithOperations: admissionregistrationv1.RuleWithOperations{
							Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
							Rule: admissionregistrationv1.Rule{
								APIGroups: []string{"apps"}, APIVersions: []string{"v1"}, Resources: []string{"deployments"},
							},
						},
					}},
				},
				Validations: []admissionregistrationv1.Validation{
					{Expression: "object.spec.replicas <= 10", MessageExpression: "'too many replicas: ' + object.spec.replicas"},
					{Expression: "object.spec.replica == 3"},
				},
			},
		}
		Expect(cl.Create(ctx, policy)).To(Succeed())
		DeferCleanup(func(ctx SpecContext) { Expect(client.IgnoreNotFound(cl.Delete(ctx, policy))).To(Succeed()) })

		Eventually(ctx, func(g Gomega) {
			got := &admissionregistrationv1.ValidatingAdmissionPolicy{}
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(policy), got)).To(Succeed())
			g.Expect(got.Status.ObservedGeneration).To(Equal(got.Generation))
			g.Expect(got.Status.TypeChecking).NotTo(BeNil())
			g.Expect(got.Status.TypeChecking.ExpressionWarnings).To(HaveExactElements(
				And(HaveField("FieldRef", "spec.validations[0].messageExpression"),
					HaveField("Warning", And(ContainSubstring("apps/v1, Kind=Deployment"),
						ContainSubstring("found no matching overload for '_+_' applied to '(string, int)'")))),
				And(HaveField("FieldRef", "spec.validations[1].expression"),
					HaveField("Warning", ContainSubstring("undefined field 'replica'"))),
			))
		}).WithTimeout(time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
	})
})

// storageversion-garbage-collector-controller needs StorageVersionAPI (alpha, off) as
// upstream; the cluster's API server runs without it, as kubeadm's does.
var _ = Describe("storageversion-garbage-collector-controller", func() {
	const name = "storageversion-garbage-collector-controller"

	It("is left out under kubeadm's arguments, its feature gate off, as upstream says", func() {
		Expect(controllersSetUp(kcm.LogPath)).To(And(
			ContainElement("validatingadmissionpolicy-status-controller"), Not(ContainElement(name))))
		Expect(logMessages(kcm.LogPath, "Controller is disabled by a feature gate")).To(ContainElement(
			disabledByGates(name, "APIServerIdentity", "StorageVersionAPI")))
	})

	It("runs with the gate on in kcm alone and waits, without exiting, for an API server serving StorageVersions", func(ctx SpecContext) {
		// A kcm of its own running only this controller, without leader election, beside the
		// suite's (which keeps every other controller).
		p, err := local.StartProcess("kcm-storageversiongc", kcmBinary, local.KubeadmArgs(
			fmt.Sprintf("--secure-port=%d", freePort()), "--leader-elect=false",
			"--controllers="+name, "--feature-gates=StorageVersionAPI=true")...)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(func() { p.Stop(30 * time.Second) })

		Eventually(ctx, func() []string { return controllersSetUp(p.LogPath) }).WithTimeout(time.Minute).
			Should(Equal([]string{name}), "%s", p.State())
		// Its StorageVersion watch finds no such kind and tries again, as upstream's informer does.
		Eventually(ctx, func() []string { return logLines(p.LogPath, "internal.apiserver.k8s.io/v1alpha1") }).
			WithTimeout(time.Minute).Should(Not(BeEmpty()), "%s", p.State())
		Consistently(ctx, p.Exited).WithTimeout(15*time.Second).WithPolling(time.Second).Should(BeFalse(), "%s", p.State())
	})
})

// logLines returns the lines of the log at path containing s.
func logLines(path, s string) []string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	var lines []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, s) {
			lines = append(lines, l)
		}
	}
	return lines
}
