package rootcapublisher

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDesired(t *testing.T) {
	const ca = "-----BEGIN CERTIFICATE-----\nabc\n-----END CERTIFICATE-----\n"
	described := map[string]string{DescriptionAnnotation: Description}
	tests := []struct {
		name        string
		data        map[string]string
		annotations map[string]string
		wantChange  bool
	}{
		{name: "up to date", data: map[string]string{CAKey: ca}, annotations: described},
		{name: "any description is accepted", data: map[string]string{CAKey: ca}, annotations: map[string]string{DescriptionAnnotation: "ours"}},
		{name: "empty", wantChange: true},
		{name: "other CA", data: map[string]string{CAKey: "other"}, annotations: described, wantChange: true},
		{name: "extra key", data: map[string]string{CAKey: ca, "x": "y"}, annotations: described, wantChange: true},
		{name: "no description", data: map[string]string{CAKey: ca}, wantChange: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cm := &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: ConfigMapName, Namespace: "ns", Annotations: tt.annotations, Labels: map[string]string{"keep": "me"}},
				Data:       tt.data,
			}
			before := cm.DeepCopy()
			got, changed := Desired(cm, []byte(ca))
			if changed != tt.wantChange {
				t.Fatalf("changed = %v, want %v", changed, tt.wantChange)
			}
			if got.Data[CAKey] != ca || len(got.Data) != 1 {
				t.Errorf("data = %v, want only %s", got.Data, CAKey)
			}
			if got.Annotations[DescriptionAnnotation] == "" || got.Labels["keep"] != "me" {
				t.Errorf("metadata not kept: %v %v", got.Annotations, got.Labels)
			}
			if before.String() != cm.String() {
				t.Errorf("Desired modified its input")
			}
		})
	}
}
