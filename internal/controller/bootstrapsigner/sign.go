package bootstrapsigner

import (
	"fmt"
	"maps"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
	bootstrapsecret "k8s.io/cluster-bootstrap/util/secrets"
)

// SigningTokens returns, by token ID, the secret of each bootstrap token that may sign
// cluster-info at now, as upstream's validateSecretForSigning: a Secret of the bootstrap
// token type named bootstrap-token-<token-id> whose token-id is that ID, with a
// token-secret, not expired, and with usage-bootstrap-signing "true". (Two Secrets cannot
// share an ID: the name carries it.)
func SigningTokens(secrets []corev1.Secret, now time.Time) map[string]string {
	tokens := map[string]string{}
	for i := range secrets {
		s := &secrets[i]
		if s.Type != bootstrapapi.SecretTypeBootstrapToken {
			continue
		}
		nameID, ok := bootstrapsecret.ParseName(s.Name)
		if !ok {
			continue
		}
		id := bootstrapsecret.GetData(s, bootstrapapi.BootstrapTokenIDKey)
		if id == "" || id != nameID {
			continue
		}
		secret := bootstrapsecret.GetData(s, bootstrapapi.BootstrapTokenSecretKey)
		if secret == "" {
			continue
		}
		if bootstrapsecret.HasExpired(s, now) {
			continue
		}
		if bootstrapsecret.GetData(s, bootstrapapi.BootstrapTokenUsageSigningKey) != "true" {
			continue
		}
		tokens[id] = secret
	}
	return tokens
}

// Signatures are the jws-kubeconfig-<token-id> entries cluster-info should hold: a detached
// JWS of kubeconfig per signing token.
func Signatures(kubeconfig string, tokens map[string]string) (map[string]string, error) {
	sigs := make(map[string]string, len(tokens))
	for id, secret := range tokens {
		sig, err := jws.ComputeDetachedSignature(kubeconfig, id, secret)
		if err != nil {
			return nil, fmt.Errorf("signing cluster-info with bootstrap token %s: %w", id, err)
		}
		sigs[bootstrapapi.JWSSignatureKeyPrefix+id] = sig
	}
	return sigs, nil
}

// SignedData is data with its signature entries replaced by sigs, and whether that differs
// from data: entries of tokens no longer signing go, as upstream's.
func SignedData(data, sigs map[string]string) (map[string]string, bool) {
	out := make(map[string]string, len(data)+len(sigs))
	for k, v := range data {
		if !strings.HasPrefix(k, bootstrapapi.JWSSignatureKeyPrefix) {
			out[k] = v
		}
	}
	maps.Copy(out, sigs)
	return out, !maps.Equal(out, data)
}
