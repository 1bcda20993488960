package bootstrapsigner

import (
	"maps"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/cluster-bootstrap/token/jws"
)

// token is a bootstrap token Secret as kubeadm writes it, adjusted by edit.
func token(id, secret string, edit func(*corev1.Secret)) corev1.Secret {
	s := corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: bootstrapapi.BootstrapTokenSecretPrefix + id},
		Type:       bootstrapapi.SecretTypeBootstrapToken,
		Data: map[string][]byte{
			bootstrapapi.BootstrapTokenIDKey:           []byte(id),
			bootstrapapi.BootstrapTokenSecretKey:       []byte(secret),
			bootstrapapi.BootstrapTokenUsageSigningKey: []byte("true"),
		},
	}
	if edit != nil {
		edit(&s)
	}
	return s
}

func TestSigningTokens(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	expiring := func(at time.Time) func(*corev1.Secret) {
		return func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(at.Format(time.RFC3339))
		}
	}
	for _, tt := range []struct {
		name   string
		secret corev1.Secret
		signs  bool
	}{
		{"valid", token("abcdef", "0123456789abcdef", nil), true},
		{"expiring later", token("abcdef", "0123456789abcdef", expiring(now.Add(time.Second))), true},
		{"expired", token("abcdef", "0123456789abcdef", expiring(now.Add(-time.Second))), false},
		{"expiring now", token("abcdef", "0123456789abcdef", expiring(now)), false},
		{"not for signing", token("abcdef", "0123456789abcdef", func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenUsageSigningKey] = []byte("false")
		}), false},
		{"no signing usage", token("abcdef", "0123456789abcdef", func(s *corev1.Secret) {
			delete(s.Data, bootstrapapi.BootstrapTokenUsageSigningKey)
		}), false},
		{"signing usage not exactly true", token("abcdef", "0123456789abcdef", func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenUsageSigningKey] = []byte("yes")
		}), false},
		{"other type", token("abcdef", "0123456789abcdef", func(s *corev1.Secret) { s.Type = corev1.SecretTypeOpaque }), false},
		{"name not of a token", token("abcdef", "0123456789abcdef", func(s *corev1.Secret) { s.Name = "abcdef" }), false},
		{"ID not the name's", token("abcdef", "0123456789abcdef", func(s *corev1.Secret) {
			s.Data[bootstrapapi.BootstrapTokenIDKey] = []byte("ghijkl")
		}), false},
		{"no ID", token("abcdef", "0123456789abcdef", func(s *corev1.Secret) { delete(s.Data, bootstrapapi.BootstrapTokenIDKey) }), false},
		{"no secret", token("abcdef", "", nil), false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got := SigningTokens([]corev1.Secret{tt.secret}, now)
			want := map[string]string{}
			if tt.signs {
				want["abcdef"] = "0123456789abcdef"
			}
			if !maps.Equal(got, want) {
				t.Errorf("got %v, want %v", got, want)
			}
		})
	}
}

func TestSignatures(t *testing.T) {
	kubeconfig := "apiVersion: v1\nkind: Config\n"
	sigs, err := Signatures(kubeconfig, map[string]string{"abcdef": "0123456789abcdef", "ghijkl": "fedcba9876543210"})
	if err != nil {
		t.Fatal(err)
	}
	if len(sigs) != 2 {
		t.Fatalf("got %d signatures, want 2: %v", len(sigs), sigs)
	}
	if !jws.DetachedTokenIsValid(sigs["jws-kubeconfig-abcdef"], kubeconfig, "abcdef", "0123456789abcdef") {
		t.Error("abcdef's signature does not verify with its token")
	}
	if jws.DetachedTokenIsValid(sigs["jws-kubeconfig-abcdef"], kubeconfig, "ghijkl", "fedcba9876543210") {
		t.Error("abcdef's signature verifies with another token")
	}
	if !jws.DetachedTokenIsValid(sigs["jws-kubeconfig-ghijkl"], kubeconfig, "ghijkl", "fedcba9876543210") {
		t.Error("ghijkl's signature does not verify with its token")
	}
}

func TestSignedData(t *testing.T) {
	const kc = "kubeconfig"
	for _, tt := range []struct {
		name    string
		data    map[string]string
		sigs    map[string]string
		want    map[string]string
		changed bool
	}{
		{"first signature", map[string]string{kc: "k"}, map[string]string{"jws-kubeconfig-a": "s"},
			map[string]string{kc: "k", "jws-kubeconfig-a": "s"}, true},
		{"unchanged", map[string]string{kc: "k", "jws-kubeconfig-a": "s"}, map[string]string{"jws-kubeconfig-a": "s"},
			map[string]string{kc: "k", "jws-kubeconfig-a": "s"}, false},
		{"re-signed", map[string]string{kc: "k", "jws-kubeconfig-a": "old"}, map[string]string{"jws-kubeconfig-a": "s"},
			map[string]string{kc: "k", "jws-kubeconfig-a": "s"}, true},
		{"token gone", map[string]string{kc: "k", "jws-kubeconfig-a": "s", "jws-kubeconfig-b": "t"}, map[string]string{"jws-kubeconfig-a": "s"},
			map[string]string{kc: "k", "jws-kubeconfig-a": "s"}, true},
		{"no token, none there", map[string]string{kc: "k", "other": "kept"}, map[string]string{},
			map[string]string{kc: "k", "other": "kept"}, false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			got, changed := SignedData(tt.data, tt.sigs)
			if !maps.Equal(got, tt.want) || changed != tt.changed {
				t.Errorf("got %v (changed %v), want %v (changed %v)", got, changed, tt.want, tt.changed)
			}
		})
	}
}
