package tokencleaner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
)

func TestExpiry(t *testing.T) {
	now := time.Date(2026, 11, 24, 10, 0, 0, 0, time.UTC)
	for _, tt := range []struct {
		name       string
		expiration *string
		expired    bool
		left       time.Duration
	}{
		{"no expiration: kept, never looked at again", nil, false, 0},
		{"empty expiration: as none", ptr(""), false, 0},
		{"later: back then", ptr(now.Add(90 * time.Second).Format(time.RFC3339)), false, 90 * time.Second},
		{"in another zone", ptr(now.Add(time.Hour).In(time.FixedZone("X", 3600)).Format(time.RFC3339)), false, time.Hour},
		{"now", ptr(now.Format(time.RFC3339)), true, 0},
		{"passed", ptr(now.Add(-time.Second).Format(time.RFC3339)), true, 0},
		{"unparseable: expired, as upstream", ptr("tomorrow"), true, 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{Type: bootstrapapi.SecretTypeBootstrapToken, Data: map[string][]byte{}}
			if tt.expiration != nil {
				s.Data[bootstrapapi.BootstrapTokenExpirationKey] = []byte(*tt.expiration)
			}
			expired, left := Expiry(s, now)
			if expired != tt.expired || left != tt.left {
				t.Errorf("got expired %v, left %v; want %v, %v", expired, left, tt.expired, tt.left)
			}
		})
	}
}

func ptr(s string) *string { return &s }
