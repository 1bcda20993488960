package index

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// SecretType indexes Secrets by type, so the legacy token cleaner lists only service
// account tokens.
const SecretType = "type"

// SecretTypeOf is the SecretType index function.
func SecretTypeOf(obj client.Object) []string {
	return []string{string(obj.(*corev1.Secret).Type)}
}

// TokenServiceAccount indexes service account token Secrets by the ServiceAccount their
// kubernetes.io/service-account.name annotation names; other Secrets are not indexed.
const TokenServiceAccount = "tokenServiceAccount"

// TokenServiceAccountOf is the TokenServiceAccount index function.
func TokenServiceAccountOf(obj client.Object) []string {
	s := obj.(*corev1.Secret)
	if s.Type != corev1.SecretTypeServiceAccountToken {
		return nil
	}
	if name := s.Annotations[corev1.ServiceAccountNameKey]; name != "" {
		return []string{name}
	}
	return nil
}
