package testenv

import (
	"context"
	"fmt"
	"strings"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/onsi/gomega/types"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Event is what a spec expects an Event to say. Events of core/v1 and of events.k8s.io are
// the same objects, read here through core/v1: an events.k8s.io Event's note is the Message,
// its deprecatedSource the Source.
type Event struct {
	Type, Reason string
	// Message is the message: a string it equals, or a Gomega matcher (nil: any).
	Message any
	// Source is the component the Event's source names (core/v1 recorders, and
	// events.k8s.io's deprecatedSource); ReportingController the events.k8s.io reporter.
	// Each is checked when set.
	Source, ReportingController string
}

// ExpectEvent waits for an Event about regarding (its kind, namespace, name, and UID when
// set: a spec may name an object by namespace and name only) saying what want says, read
// through c.
func ExpectEvent(ctx context.Context, c client.Client, regarding client.Object, want Event) {
	GinkgoHelper()
	gvk, err := apiutil.GVKForObject(regarding, c.Scheme())
	Expect(err).NotTo(HaveOccurred())
	fields := []types.GomegaMatcher{
		HaveField("InvolvedObject.Kind", gvk.Kind), HaveField("InvolvedObject.Name", regarding.GetName()),
		HaveField("InvolvedObject.Namespace", regarding.GetNamespace()),
		HaveField("Type", want.Type), HaveField("Reason", want.Reason),
	}
	switch m := want.Message.(type) {
	case nil:
	case types.GomegaMatcher:
		fields = append(fields, HaveField("Message", m))
	default:
		fields = append(fields, HaveField("Message", Equal(m)))
	}
	if regarding.GetUID() != "" {
		fields = append(fields, HaveField("InvolvedObject.UID", regarding.GetUID()))
	}
	if want.Source != "" {
		fields = append(fields, HaveField("Source.Component", want.Source))
	}
	if want.ReportingController != "" {
		fields = append(fields, HaveField("ReportingController", want.ReportingController))
	}
	// A cluster-scoped object's Events are in the default namespace.
	ns := regarding.GetNamespace()
	if ns == "" {
		ns = metav1.NamespaceDefault
	}
	Eventually(ctx, func(g Gomega) {
		list := &corev1.EventList{}
		g.Expect(c.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for _, e := range list.Items {
			if ok, _ := SatisfyAll(fields...).Match(e); ok {
				return
			}
		}
		g.Expect(false).To(BeTrue(), "no Event %s %s %s/%s: %v (source %q, reporter %q); the Events in %s:\n%s",
			want.Type, want.Reason, gvk.Kind, regarding.GetName(), want.Message, want.Source, want.ReportingController, ns, summary(list.Items))
	}).Should(Succeed())
}

// ExpectEvent is ExpectEvent through the environment's client.
func (e *Env) ExpectEvent(ctx context.Context, regarding client.Object, want Event) {
	GinkgoHelper()
	ExpectEvent(ctx, e.Client, regarding, want)
}

// summary renders Events one a line, for a failure message.
func summary(events []corev1.Event) string {
	var b strings.Builder
	for _, e := range events {
		o := e.InvolvedObject
		fmt.Fprintf(&b, "  %s %s/%s %s %s: %q (source %q, reporter %q)\n",
			o.Kind, o.Namespace, o.Name, e.Type, e.Reason, e.Message, e.Source.Component, e.ReportingController)
	}
	return b.String()
}
