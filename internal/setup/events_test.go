package setup

import (
	"context"
	"fmt"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/kubernetes/scheme"
)

// The recorder writes core/v1 Events as upstream's controllers do: source.component set,
// the note taken as a message when there are no arguments, and the correlator's spam
// filter holding one object's Events of one type to a burst of 25.
func TestRecorderWritesCoreEventsThroughTheCorrelator(t *testing.T) {
	cs := fake.NewClientset()
	b, rec := newRecorder(cs.CoreV1().Events(""), scheme.Scheme, "controllermanager")
	defer b.Shutdown()

	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web-0", UID: "u1"}}
	rec.Eventf(pod, nil, corev1.EventTypeWarning, "Odd", "", "100% full")
	rec.Eventf(pod, nil, corev1.EventTypeNormal, "Counted", "", "%d pods", 3)
	for i := range 40 {
		// Distinct reasons: neither deduplicated nor aggregated, only rate limited.
		rec.Eventf(pod, nil, corev1.EventTypeNormal, fmt.Sprintf("Churn%d", i), "", "churn")
	}

	// The witness: an Event about another object, recorded last. The sink writes Events one
	// at a time in the order they were recorded, so once it is written every Event about
	// web-0 has been written or dropped.
	witness := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "witness", Name: "last", UID: "u2"}}
	rec.Eventf(witness, nil, corev1.EventTypeNormal, "Last", "", "recorded last")
	g := NewWithT(t)
	list := func(ns string) func() ([]corev1.Event, error) {
		return func() ([]corev1.Event, error) {
			l, err := cs.CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return nil, err
			}
			return l.Items, nil
		}
	}
	g.Eventually(list("witness")).WithTimeout(10 * time.Second).WithPolling(20 * time.Millisecond).Should(HaveLen(1))
	// And none lands after it.
	g.Consistently(list("ns")).WithTimeout(200*time.Millisecond).WithPolling(20*time.Millisecond).Should(HaveLen(1+25),
		"Events about one object: 1 Warning and the spam filter's burst of 25 Normal")
	events, err := list("ns")()
	if err != nil {
		t.Fatal(err)
	}
	// One Warning, and the Normal ones up to the burst (the filter counts per type).
	byReason := map[string]corev1.Event{}
	for _, e := range events {
		byReason[e.Reason] = e
		if e.Source.Component != "controllermanager" || e.ReportingController != "controllermanager" {
			t.Errorf("Event %s reported by %q/%q, want controllermanager", e.Reason, e.Source.Component, e.ReportingController)
		}
		if e.InvolvedObject.Name != "web-0" || e.InvolvedObject.Kind != "Pod" {
			t.Errorf("Event %s regards %v", e.Reason, e.InvolvedObject)
		}
	}
	if got := byReason["Odd"].Message; got != "100% full" {
		t.Errorf("a note without arguments became %q", got)
	}
	if got := byReason["Counted"].Message; got != "3 pods" {
		t.Errorf("a formatted note became %q", got)
	}
}
