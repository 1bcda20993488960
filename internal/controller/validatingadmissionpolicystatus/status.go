package validatingadmissionpolicystatus

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	admissionregistrationv1apply "k8s.io/client-go/applyconfigurations/admissionregistration/v1"
)

// NeedsCheck reports whether the policy's spec changed since its status was written: upstream
// checks a generation once, whatever else changes.
func NeedsCheck(policy *admissionregistrationv1.ValidatingAdmissionPolicy) bool {
	return policy.Generation > policy.Status.ObservedGeneration
}

// StatusApply is the status upstream applies for the policy's generation: the observed
// generation and the type-checking warnings, typeChecking present (empty) when there are none.
func StatusApply(policy *admissionregistrationv1.ValidatingAdmissionPolicy, warnings []admissionregistrationv1.ExpressionWarning) *admissionregistrationv1apply.ValidatingAdmissionPolicyApplyConfiguration {
	applied := make([]*admissionregistrationv1apply.ExpressionWarningApplyConfiguration, 0, len(warnings))
	for _, w := range warnings {
		applied = append(applied, admissionregistrationv1apply.ExpressionWarning().WithFieldRef(w.FieldRef).WithWarning(w.Warning))
	}
	return admissionregistrationv1apply.ValidatingAdmissionPolicy(policy.Name).
		WithStatus(admissionregistrationv1apply.ValidatingAdmissionPolicyStatus().
			WithObservedGeneration(policy.Generation).
			WithTypeChecking(admissionregistrationv1apply.TypeChecking().WithExpressionWarnings(applied...)))
}
