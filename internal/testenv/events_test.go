package testenv_test

import (
	"context"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("ExpectEvent", func() {
	It("finds a core/v1 Event about an object by kind, name, UID, type, reason, message and source", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "events")
		p := env.CreatePod(ctx, testenv.NewPod(ns, "web", ""))
		Expect(env.Client.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: "web-"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name, UID: p.UID, APIVersion: "v1"},
			Type:           corev1.EventTypeWarning, Reason: "Failed", Message: "it broke: twice",
			Source: corev1.EventSource{Component: "some-controller"},
		})).To(Succeed())

		env.ExpectEvent(ctx, p, testenv.Event{Type: corev1.EventTypeWarning, Reason: "Failed", Message: "it broke: twice", Source: "some-controller"})
		env.ExpectEvent(ctx, p, testenv.Event{Type: corev1.EventTypeWarning, Reason: "Failed", Message: HavePrefix("it broke")})
		By("by namespace and name only")
		env.ExpectEvent(ctx, &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"}},
			testenv.Event{Type: corev1.EventTypeWarning, Reason: "Failed"})
	})

	It("finds an events.k8s.io Event by its note and reporting controller", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "events")
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "settings"}}
		Expect(env.Client.Create(ctx, cm)).To(Succeed())
		Expect(env.Client.Create(ctx, &eventsv1.Event{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, GenerateName: "settings-"},
			EventTime:  metav1.NewMicroTime(time.Now()), ReportingController: "controllermanager", ReportingInstance: "kcm-1",
			Action: "Sync", Regarding: corev1.ObjectReference{Kind: "ConfigMap", Namespace: ns, Name: cm.Name, UID: cm.UID},
			Type: corev1.EventTypeNormal, Reason: "Synced", Note: "all good",
		})).To(Succeed())
		env.ExpectEvent(ctx, cm, testenv.Event{Type: corev1.EventTypeNormal, Reason: "Synced", Message: "all good",
			ReportingController: "controllermanager"})
	})

	It("does not take another object's Event, nor one saying something else", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "events")
		p := env.CreatePod(ctx, testenv.NewPod(ns, "web", ""))
		Expect(env.Client.Create(ctx, &corev1.Event{
			ObjectMeta:     metav1.ObjectMeta{Namespace: ns, GenerateName: "web-"},
			InvolvedObject: corev1.ObjectReference{Kind: "Pod", Namespace: ns, Name: p.Name, UID: p.UID, APIVersion: "v1"},
			Type:           corev1.EventTypeNormal, Reason: "Started", Message: "ok",
			Source: corev1.EventSource{Component: "kubelet"},
		})).To(Succeed())
		env.ExpectEvent(ctx, p, testenv.Event{Type: corev1.EventTypeNormal, Reason: "Started", Message: "ok", Source: "kubelet"})

		short, cancel := context.WithTimeout(ctx, time.Second)
		defer cancel()
		for _, wrong := range []struct {
			regarding *corev1.Pod
			want      testenv.Event
		}{
			{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "other"}}, testenv.Event{Type: corev1.EventTypeNormal, Reason: "Started"}},
			{&corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web", UID: "not-its-uid"}}, testenv.Event{Type: corev1.EventTypeNormal, Reason: "Started"}},
			{p, testenv.Event{Type: corev1.EventTypeWarning, Reason: "Started"}},
			{p, testenv.Event{Type: corev1.EventTypeNormal, Reason: "Started", Message: "not ok"}},
			{p, testenv.Event{Type: corev1.EventTypeNormal, Reason: "Started", Source: "scheduler"}},
			{p, testenv.Event{Type: corev1.EventTypeNormal, Reason: "Started", ReportingController: "kubelet-2"}},
		} {
			failures := InterceptGomegaFailures(func() { env.ExpectEvent(short, wrong.regarding, wrong.want) })
			Expect(failures).NotTo(BeEmpty(), "%s %+v", wrong.regarding.Name, wrong.want)
		}
	})
})
