package validatingadmissionpolicystatus

import (
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apiserver/pkg/admission/plugin/policy/validating"
	"k8s.io/apiserver/pkg/cel/openapi/resolver"
	"k8s.io/client-go/discovery"
)

// Checker type-checks a policy's expressions; the Reconciler writes what it returns.
type Checker interface {
	Check(policy *admissionregistrationv1.ValidatingAdmissionPolicy) []admissionregistrationv1.ExpressionWarning
}

// NewTypeChecker is the API server's own type checker (k8s.io/apiserver's
// validating.TypeChecker), resolving the schemas of the matched kinds and of the paramKind.
//
// Upstream resolves built-in kinds from the OpenAPI definitions compiled into
// kube-controller-manager (k8s.io/kubernetes/pkg/generated/openapi) and falls back to the API
// server's OpenAPI v3 for the others (CRDs). kcm may not import k8s.io/kubernetes, so it
// asks the API server's OpenAPI v3 for every kind: the API server publishes the same generated
// definitions for its built-in kinds, so the warnings are the same. What differs: each
// schema costs requests to the API server (the OpenAPI v3 index and the group-version's
// document) where upstream reads built-in ones from memory, and a built-in kind the API server
// does not serve (its group disabled) is not checked, where upstream checks it anyway.
func NewTypeChecker(disco discovery.DiscoveryInterface, mapper meta.RESTMapper) Checker {
	return &validating.TypeChecker{
		SchemaResolver: &resolver.ClientDiscoveryResolver{Discovery: disco},
		RestMapper:     mapper,
	}
}
