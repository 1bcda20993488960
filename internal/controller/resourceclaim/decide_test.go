package resourceclaim

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func pod(phase corev1.PodPhase, deleting bool, node string) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "uid-1"}, Spec: corev1.PodSpec{NodeName: node}, Status: corev1.PodStatus{Phase: phase}}
	if deleting {
		p.DeletionTimestamp = &metav1.Time{}
	}
	return p
}

func TestPodNeedsClaims(t *testing.T) {
	for _, tc := range []struct {
		name    string
		pod     *corev1.Pod
		deleted bool
		want    bool
		reason  string
	}{
		{"running", pod(corev1.PodRunning, false, "n"), false, true, "pod might run"},
		{"pending, unscheduled", pod(corev1.PodPending, false, ""), false, true, "pod might run"},
		{"removed", pod(corev1.PodRunning, false, "n"), true, false, "pod got removed"},
		{"succeeded", pod(corev1.PodSucceeded, false, "n"), false, false, "pod has terminated"},
		{"failed", pod(corev1.PodFailed, false, "n"), false, false, "pod has terminated"},
		{"deleted before scheduling", pod(corev1.PodPending, true, ""), false, false, "pod got deleted before scheduling"},
		{"deleting on a node: may still run", pod(corev1.PodRunning, true, "n"), false, true, "pod might run"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, reason := podNeedsClaims(tc.pod, tc.deleted)
			if got != tc.want || reason != tc.reason {
				t.Errorf("podNeedsClaims = %v, %q; want %v, %q", got, reason, tc.want, tc.reason)
			}
			if done := isPodDone(tc.pod); !tc.deleted && done == tc.want {
				t.Errorf("isPodDone = %v, want %v", done, !tc.want)
			}
		})
	}
}

func TestGenerateName(t *testing.T) {
	for _, tc := range []struct{ pod, claim, want string }{
		{"web", "gpu", "web-gpu-"},
		// 57 characters exactly: kept.
		{strings.Repeat("a", 50), "gpu12", strings.Repeat("a", 50) + "-gpu12-"},
		// 58: both cut in proportion, no final hyphen (50*57/58 = 49, 6*57/58 = 5).
		{strings.Repeat("a", 50), "gpu123", strings.Repeat("a", 49) + "-gpu12"},
		{strings.Repeat("p", 60), "gpu", strings.Repeat("p", 52) + "-gp"},
		{"x", strings.Repeat("c", 63), "-" + strings.Repeat("c", 54)},
	} {
		if got := generateName(tc.pod, tc.claim); got != tc.want {
			t.Errorf("generateName(%q, %q) = %q, want %q", tc.pod, tc.claim, got, tc.want)
		}
	}
}

func TestClaimFor(t *testing.T) {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "uid-1"}}
	tmpl := &resourceapi.ResourceClaimTemplate{Spec: resourceapi.ResourceClaimTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"l": "v"}, Annotations: map[string]string{"a": "v"}},
		Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{{
			Name: "r", Exactly: &resourceapi.ExactDeviceRequest{DeviceClassName: "c"}}}}},
	}}
	c := claimFor(p, "gpu", tmpl)
	if c.Namespace != "ns" || c.GenerateName != "web-gpu-" || c.Name != "" {
		t.Errorf("name: %q %q %q", c.Namespace, c.GenerateName, c.Name)
	}
	if c.Annotations[resourceapi.PodResourceClaimAnnotation] != "gpu" || c.Annotations["a"] != "v" || len(c.Annotations) != 2 {
		t.Errorf("annotations: %v", c.Annotations)
	}
	if _, ok := tmpl.Spec.Annotations[resourceapi.PodResourceClaimAnnotation]; ok {
		t.Error("the template's annotations were changed")
	}
	if c.Labels["l"] != "v" || len(c.Labels) != 1 {
		t.Errorf("labels: %v", c.Labels)
	}
	want := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "web", UID: "uid-1", Controller: ptr.To(true)}
	if len(c.OwnerReferences) != 1 || c.OwnerReferences[0].String() != want.String() {
		t.Errorf("owners: %v", c.OwnerReferences)
	}
	if c.Spec.Devices.Requests[0].Exactly.DeviceClassName != "c" {
		t.Errorf("spec: %v", c.Spec)
	}
	if !generatedFor(c, "uid-1", "gpu") || generatedFor(c, "uid-1", "other") || generatedFor(c, "uid-2", "gpu") {
		t.Error("generatedFor does not recognise the claim")
	}
	if group, kind := ownerLabels(c); group != "" || kind != "Pod" {
		t.Errorf("ownerLabels = %q, %q", group, kind)
	}
}

func TestKeepReservation(t *testing.T) {
	ref := resourceapi.ResourceClaimConsumerReference{Resource: "pods", Name: "p", UID: "uid-1"}
	replaced := pod(corev1.PodRunning, false, "n")
	replaced.UID = "uid-2"
	for _, tc := range []struct {
		name  string
		known podKnowledge
		pod   *corev1.Pod
		want  bool
	}{
		{"seen deleted", podSeenDeleted, nil, false},
		{"cached, running", podCached, pod(corev1.PodRunning, false, "n"), true},
		{"cached, pending", podCached, pod(corev1.PodPending, false, ""), true},
		{"cached, succeeded", podCached, pod(corev1.PodSucceeded, false, "n"), false},
		{"cached, deleted before scheduling", podCached, pod(corev1.PodPending, true, ""), false},
		{"cached, terminating on a node", podCached, pod(corev1.PodRunning, true, "n"), true},
		{"cached, replaced", podCached, replaced, false},
		{"live, absent", podLive, nil, false},
		{"live, replaced", podLive, replaced, false},
		{"live, present (being scheduled)", podLive, pod(corev1.PodPending, false, ""), true},
		{"live, succeeded: the cache judges it", podLive, pod(corev1.PodSucceeded, false, "n"), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := keepReservation(ref, tc.known, tc.pod); got != tc.want {
				t.Errorf("keepReservation = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestRelease(t *testing.T) {
	allocated := &resourceapi.AllocationResult{}
	reserved := []resourceapi.ResourceClaimConsumerReference{{Resource: "pods", Name: "a"}, {Resource: "pods", Name: "b"}}
	for _, tc := range []struct {
		name          string
		finalizers    []string
		remaining     []resourceapi.ResourceClaimConsumerReference
		wantAllocated bool
		wantFinalizer []string
	}{
		{"one consumer left: still allocated", []string{resourceapi.Finalizer}, reserved[1:], true, nil},
		{"none left: deallocated, finalizer removable", []string{"other", resourceapi.Finalizer}, nil, false, []string{"other"}},
		{"none left, no built-in finalizer: left allocated", []string{"other"}, nil, true, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Finalizers: tc.finalizers}}
			c.Status.Allocation = allocated
			c.Status.ReservedFor = reserved
			got := release(c, tc.remaining)
			if (got.Status.Allocation != nil) != tc.wantAllocated || len(got.Status.ReservedFor) != len(tc.remaining) {
				t.Errorf("release: allocated %v, reserved %v", got.Status.Allocation != nil, got.Status.ReservedFor)
			}
			if c.Status.Allocation == nil || len(c.Status.ReservedFor) != 2 {
				t.Error("release changed its input")
			}
			out := withoutFinalizer(got)
			switch {
			case tc.wantFinalizer == nil && out != nil:
				t.Errorf("withoutFinalizer = %v, want nil", out.Finalizers)
			case tc.wantFinalizer != nil && (out == nil || strings.Join(out.Finalizers, ",") != strings.Join(tc.wantFinalizer, ",")):
				t.Errorf("withoutFinalizer = %v, want %v", out, tc.wantFinalizer)
			}
		})
	}
}

func TestMergedStatuses(t *testing.T) {
	p := &corev1.Pod{Status: corev1.PodStatus{ResourceClaimStatuses: []corev1.PodResourceClaimStatus{
		{Name: "z", ResourceClaimName: ptr.To("z-claim")},
		{Name: "skipped"},
		{Name: "b", ResourceClaimName: ptr.To("old")},
	}}}
	got := mergedStatuses(p, map[string]string{"b": "new", "a": "a-claim"})
	var s []string
	for _, st := range got {
		s = append(s, st.Name+"="+*st.ResourceClaimName)
	}
	if want := "a=a-claim b=new z=z-claim"; strings.Join(s, " ") != want {
		t.Errorf("mergedStatuses = %v, want %s", s, want)
	}
}

func TestMetricLabels(t *testing.T) {
	admin := &resourceapi.ResourceClaim{Spec: resourceapi.ResourceClaimSpec{Devices: resourceapi.DeviceClaim{Requests: []resourceapi.DeviceRequest{
		{Name: "sub", FirstAvailable: []resourceapi.DeviceSubRequest{{Name: "s"}}},
		{Name: "admin", Exactly: &resourceapi.ExactDeviceRequest{AdminAccess: ptr.To(true)}},
	}}}}
	admin.OwnerReferences = []metav1.OwnerReference{{APIVersion: "scheduling.k8s.io/v1beta1", Kind: "PodGroup", Controller: ptr.To(true)}}
	if got := strings.Join(createLabels(admin, "success"), ","); got != "success,true,scheduling.k8s.io,PodGroup" {
		t.Errorf("createLabels = %s", got)
	}
	plain := &resourceapi.ResourceClaim{}
	if got := strings.Join(createLabels(plain, "failure"), ","); got != "failure,false,," {
		t.Errorf("createLabels = %s", got)
	}
	for _, tc := range []struct {
		annotations map[string]string
		want        string
	}{
		{nil, ""},
		{map[string]string{resourceapi.PodResourceClaimAnnotation: "gpu"}, "resource_claim_template"},
		{map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "true", resourceapi.PodResourceClaimAnnotation: "gpu"}, "extended_resource"},
		{map[string]string{resourceapi.ExtendedResourceClaimAnnotation: "false"}, ""},
	} {
		c := &resourceapi.ResourceClaim{ObjectMeta: metav1.ObjectMeta{Annotations: tc.annotations}}
		if got := sourceLabel(c); got != tc.want {
			t.Errorf("sourceLabel(%v) = %q, want %q", tc.annotations, got, tc.want)
		}
	}
}

func TestTerminal(t *testing.T) {
	plain := errors.New("conflict")
	if got := terminal(fmt.Errorf("pod x: %w", plain)); errors.Is(got, reconcile.TerminalError(nil)) {
		t.Errorf("a plain error became terminal: %v", got)
	}
	p := permanent{errors.New("claim gpu is a PodGroup claim")}
	got := terminal(fmt.Errorf("pod x, PodResourceClaim gpu: %w", p))
	if !errors.Is(got, reconcile.TerminalError(nil)) {
		t.Errorf("a permanent error is not terminal: %v", got)
	}
	if p.Error() != "claim gpu is a PodGroup claim" {
		t.Errorf("the Event's text changed: %q", p.Error())
	}
}
