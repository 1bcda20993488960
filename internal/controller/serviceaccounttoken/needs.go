package serviceaccounttoken

import (
	"bytes"

	corev1 "k8s.io/api/core/v1"
)

// Missing is what a token Secret lacks.
type Missing struct {
	// CA: ca.crt differs from the root CA (never when there is no root CA).
	CA bool
	// Namespace: the namespace key is empty.
	Namespace bool
	// Token: the token key is empty; a token once written is never replaced.
	Token bool
}

// Any reports whether the Secret needs an update.
func (m Missing) Any() bool { return m.CA || m.Namespace || m.Token }

// Needs compares a token Secret with what upstream's tokens controller keeps in it.
func Needs(s *corev1.Secret, rootCA []byte) Missing {
	return Missing{
		CA:        len(rootCA) > 0 && !bytes.Equal(s.Data[corev1.ServiceAccountRootCAKey], rootCA),
		Namespace: len(s.Data[corev1.ServiceAccountNamespaceKey]) == 0,
		Token:     len(s.Data[corev1.ServiceAccountTokenKey]) == 0,
	}
}

// WithoutSecret returns refs without those naming secret.
func WithoutSecret(refs []corev1.ObjectReference, secret string) []corev1.ObjectReference {
	kept := make([]corev1.ObjectReference, 0, len(refs))
	for _, ref := range refs {
		if ref.Name != secret {
			kept = append(kept, ref)
		}
	}
	return kept
}
