package validatingadmissionpolicystatus_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/validatingadmissionpolicystatus"
)

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
