package validatingadmissionpolicystatus

import (
	"encoding/json"
	"testing"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestNeedsCheck(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		generation, observed int64
		want                 bool
	}{
		{"never checked", 1, 0, true},
		{"spec changed since", 3, 2, true},
		{"generation checked", 2, 2, false},
		{"observed ahead", 1, 2, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &admissionregistrationv1.ValidatingAdmissionPolicy{
				ObjectMeta: metav1.ObjectMeta{Generation: tc.generation},
				Status:     admissionregistrationv1.ValidatingAdmissionPolicyStatus{ObservedGeneration: tc.observed},
			}
			if got := NeedsCheck(p); got != tc.want {
				t.Errorf("NeedsCheck = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestStatusApply(t *testing.T) {
	p := &admissionregistrationv1.ValidatingAdmissionPolicy{ObjectMeta: metav1.ObjectMeta{Name: "p", Generation: 4}}
	for _, tc := range []struct {
		name     string
		warnings []admissionregistrationv1.ExpressionWarning
		want     string
	}{
		{"no warnings: typeChecking present and empty", nil,
			`{"kind":"ValidatingAdmissionPolicy","apiVersion":"admissionregistration.k8s.io/v1","metadata":{"name":"p"},` +
				`"status":{"observedGeneration":4,"typeChecking":{}}}`},
		{"warnings in order", []admissionregistrationv1.ExpressionWarning{
			{FieldRef: "spec.validations[0].expression", Warning: "w0"},
			{FieldRef: "spec.validations[0].messageExpression", Warning: "w1"},
		},
			`{"kind":"ValidatingAdmissionPolicy","apiVersion":"admissionregistration.k8s.io/v1","metadata":{"name":"p"},` +
				`"status":{"observedGeneration":4,"typeChecking":{"expressionWarnings":[` +
				`{"fieldRef":"spec.validations[0].expression","warning":"w0"},` +
				`{"fieldRef":"spec.validations[0].messageExpression","warning":"w1"}]}}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := json.Marshal(StatusApply(p, tc.warnings))
			if err != nil {
				t.Fatal(err)
			}
			if string(b) != tc.want {
				t.Errorf("StatusApply =\n%s\nwant\n%s", b, tc.want)
			}
		})
	}
}
