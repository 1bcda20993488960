package pvcprotection

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/manager"
)

var now = metav1.NewTime(time.Date(2026, 11, 22, 3, 0, 0, 0, time.UTC))

func claim(name string, owner *corev1.Pod) *corev1.PersistentVolumeClaim {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}}
	if owner != nil {
		pvc.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "Pod", Name: owner.Name, UID: owner.UID, Controller: new(true)}}
	}
	return pvc
}

type podOpt func(*corev1.Pod)

func scheduled(p *corev1.Pod) { p.Spec.NodeName = "node-1" }
func succeeded(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }
func terminating(p *corev1.Pod) {
	p.DeletionTimestamp = &now
	p.DeletionGracePeriodSeconds = new(int64(30))
}
func shutDown(p *corev1.Pod) {
	p.DeletionTimestamp = &now
	p.DeletionGracePeriodSeconds = new(int64(0))
}
func running(p *corev1.Pod) {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "app", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
}

func podWith(vol corev1.VolumeSource, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web", UID: "web-uid"},
		Spec: corev1.PodSpec{Volumes: []corev1.Volume{{Name: "data", VolumeSource: vol}}}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func direct(name string) corev1.VolumeSource {
	return corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: name}}
}

var ephemeralVol = corev1.VolumeSource{Ephemeral: &corev1.EphemeralVolumeSource{VolumeClaimTemplate: &corev1.PersistentVolumeClaimTemplate{}}}

func TestUsage(t *testing.T) {
	owner := podWith(ephemeralVol)
	cases := []struct {
		name                   string
		pod                    *corev1.Pod
		pvc                    *corev1.PersistentVolumeClaim
		forDeletion, forUnused bool
	}{
		{"scheduled pod naming the claim", podWith(direct("c"), scheduled), claim("c", nil), true, true},
		{"unscheduled pod naming the claim", podWith(direct("c")), claim("c", nil), false, true},
		{"pod naming another claim", podWith(direct("other"), scheduled), claim("c", nil), false, false},
		{"succeeded pod still holds the claim from deletion", podWith(direct("c"), scheduled, succeeded), claim("c", nil), true, false},
		{"terminating pod with a running container", podWith(direct("c"), scheduled, terminating, running), claim("c", nil), true, true},
		{"terminating pod whose containers stopped", podWith(direct("c"), scheduled, terminating), claim("c", nil), true, false},
		{"force-deleted pod naming the claim directly", podWith(direct("c"), scheduled, shutDown), claim("c", nil), true, false},
		{"ephemeral volume, claim owned by the pod", podWith(ephemeralVol, scheduled), claim("web-data", owner), true, true},
		{"ephemeral volume, same-named claim not owned", podWith(ephemeralVol, scheduled), claim("web-data", nil), false, false},
		{"ephemeral volume, pod shut down", podWith(ephemeralVol, scheduled, shutDown, running), claim("web-data", owner), false, true},
		{"ephemeral volume, unscheduled", podWith(ephemeralVol), claim("web-data", owner), false, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := UsedForDeletion(c.pod, c.pvc); got != c.forDeletion {
				t.Errorf("UsedForDeletion = %v, want %v", got, c.forDeletion)
			}
			if got := UsedForUnused(c.pod, c.pvc); got != c.forUnused {
				t.Errorf("UsedForUnused = %v, want %v", got, c.forUnused)
			}
		})
	}
}

func TestUnusedCondition(t *testing.T) {
	withCond := func(s corev1.ConditionStatus) *corev1.PersistentVolumeClaim {
		pvc := claim("c", nil)
		pvc.Status.Conditions = []corev1.PersistentVolumeClaimCondition{{Type: corev1.PersistentVolumeClaimUnused, Status: s}}
		return pvc
	}
	cases := []struct {
		name       string
		pvc        *corev1.PersistentVolumeClaim
		used       bool
		wantStatus corev1.ConditionStatus // "" = no change
		wantReason string
	}{
		{"no condition, used", claim("c", nil), true, corev1.ConditionFalse, ReasonPodUsingPVC},
		{"no condition, unused", claim("c", nil), false, corev1.ConditionTrue, ReasonNoPodsUsingPVC},
		{"unused, becomes used", withCond(corev1.ConditionTrue), true, corev1.ConditionFalse, ReasonPodUsingPVC},
		{"used, becomes unused", withCond(corev1.ConditionFalse), false, corev1.ConditionTrue, ReasonNoPodsUsingPVC},
		{"still used", withCond(corev1.ConditionFalse), true, "", ""},
		{"still unused", withCond(corev1.ConditionTrue), false, "", ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := UnusedCondition(c.pvc, c.used, now)
			if c.wantStatus == "" {
				if got != nil {
					t.Fatalf("got %+v, want no change", got)
				}
				return
			}
			if got == nil || got.Status != c.wantStatus || got.Reason != c.wantReason || !got.LastTransitionTime.Equal(&now) {
				t.Fatalf("got %+v, want status %s reason %s at %v", got, c.wantStatus, c.wantReason, now)
			}
		})
	}
}

// TestLiveListKeepsClaim: a pod the cache has not seen yet still holds a deleted claim,
// because the live list is asked before the finalizer goes.
func TestLiveListKeepsClaim(t *testing.T) {
	pvc := claim("c", nil)
	pvc.Finalizers = []string{Finalizer}
	pvc.DeletionTimestamp = &now
	cache := fake.NewClientBuilder().WithScheme(manager.Scheme()).WithObjects(pvc).
		WithIndex(&corev1.Pod{}, index.PodClaimName, index.PodClaimNameOf).Build()
	live := fake.NewClientBuilder().WithScheme(manager.Scheme()).WithObjects(podWith(direct("c"), scheduled)).Build()
	r := &Reconciler{Client: cache, APIReader: live, Clock: clocktesting.NewFakePassiveClock(now.Time)}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: "ns"}}
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	got := &corev1.PersistentVolumeClaim{}
	if err := cache.Get(context.Background(), client.ObjectKeyFromObject(pvc), got); err != nil {
		t.Fatalf("the claim went although a live pod uses it: %v", err)
	}

	// Without that pod the finalizer goes (and the fake client deletes the claim).
	r.APIReader = fake.NewClientBuilder().WithScheme(manager.Scheme()).Build()
	if _, err := r.Reconcile(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	if err := cache.Get(context.Background(), client.ObjectKeyFromObject(pvc), got); err == nil {
		t.Fatalf("the unused claim is still there with finalizers %v", got.Finalizers)
	}
}
