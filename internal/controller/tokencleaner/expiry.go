package tokencleaner

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	bootstrapsecret "k8s.io/cluster-bootstrap/util/secrets"
)

// Expiry judges a bootstrap token Secret at now, as upstream's: expired when its expiration
// has passed or cannot be parsed; otherwise left is how long until it expires (0: never).
func Expiry(secret *corev1.Secret, now time.Time) (expired bool, left time.Duration) {
	left, expired = bootstrapsecret.GetExpiration(secret, now)
	return expired, left
}
