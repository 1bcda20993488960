package attachdetach

import (
	"crypto/sha256"
	"encoding/hex"
	"reflect"

	corev1 "k8s.io/api/core/v1"
)

func names(ws []*wanted) []corev1.UniqueVolumeName {
	var out []corev1.UniqueVolumeName
	for _, w := range ws {
		out = append(out, w.UniqueName)
	}
	return out
}

// equal compares with nil and empty slices equal.
func equal(a, b any) bool {
	va, vb := reflect.ValueOf(a), reflect.ValueOf(b)
	if va.Kind() == reflect.Slice && vb.Kind() == reflect.Slice && va.Len() == 0 && vb.Len() == 0 {
		return true
	}
	return reflect.DeepEqual(a, b)
}

func sha256hex(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:])
}
