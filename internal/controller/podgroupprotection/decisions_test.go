package podgroupprotection

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

func pod(uid types.UID, group string, phase corev1.PodPhase) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: uid}, Status: corev1.PodStatus{Phase: phase}}
	if group != "" {
		p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{PodGroupName: ptr.To(group)}
	}
	return p
}

func TestActivePodGroupOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		pod  *corev1.Pod
		want []string
	}{
		{"running pod of a group", pod("a", "g", corev1.PodRunning), []string{"g"}},
		{"pending pod of a group", pod("a", "g", corev1.PodPending), []string{"g"}},
		{"phase unknown yet", pod("a", "g", ""), []string{"g"}},
		{"succeeded pod", pod("a", "g", corev1.PodSucceeded), nil},
		{"failed pod", pod("a", "g", corev1.PodFailed), nil},
		{"pod of no group", pod("a", "", corev1.PodRunning), nil},
		{"scheduling group without a PodGroup name", func() *corev1.Pod {
			p := pod("a", "", corev1.PodRunning)
			p.Spec.SchedulingGroup = &corev1.PodSchedulingGroup{}
			return p
		}(), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := activePodGroupOf(tc.pod)
			if len(got) != len(tc.want) || len(got) == 1 && got[0] != tc.want[0] {
				t.Errorf("activePodGroupOf = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestIsDeletionCandidate(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name       string
		deleted    bool
		finalizers []string
		want       bool
	}{
		{"deleted with the finalizer", true, []string{"other", Finalizer}, true},
		{"deleted without it", true, []string{"other"}, false},
		{"live with it", false, []string{Finalizer}, false},
		{"live without it", false, nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			pg := &schedulingv1beta1.PodGroup{ObjectMeta: metav1.ObjectMeta{Finalizers: tc.finalizers}}
			if tc.deleted {
				pg.DeletionTimestamp = &now
			}
			if got := IsDeletionCandidate(pg); got != tc.want {
				t.Errorf("IsDeletionCandidate = %v, want %v", got, tc.want)
			}
		})
	}
}

func TestPodEventGroups(t *testing.T) {
	for _, tc := range []struct {
		name           string
		oldPod, newPod *corev1.Pod
		want           []string
	}{
		{"active pod created", nil, pod("a", "g", corev1.PodPending), nil},
		{"terminated pod created", nil, pod("a", "g", corev1.PodSucceeded), []string{"g"}},
		{"pod starts running", pod("a", "g", corev1.PodPending), pod("a", "g", corev1.PodRunning), nil},
		{"pod fails", pod("a", "g", corev1.PodRunning), pod("a", "g", corev1.PodFailed), []string{"g"}},
		{"terminated pod updated again", pod("a", "g", corev1.PodFailed), pod("a", "g", corev1.PodFailed), []string{"g"}},
		{"pod deleted", pod("a", "g", corev1.PodRunning), nil, []string{"g"}},
		{"pod replaced by one of another group", pod("a", "g", corev1.PodRunning), pod("b", "h", corev1.PodPending), []string{"g"}},
		{"replaced, the new one terminated", pod("a", "g", corev1.PodRunning), pod("b", "h", corev1.PodSucceeded), []string{"h", "g"}},
		{"pod of no group deleted", pod("a", "", corev1.PodRunning), nil, nil},
		{"pod of no group fails", pod("a", "", corev1.PodRunning), pod("a", "", corev1.PodFailed), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := PodEventGroups(tc.oldPod, tc.newPod)
			if len(got) != len(tc.want) {
				t.Fatalf("PodEventGroups = %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("PodEventGroups = %v, want %v", got, tc.want)
				}
			}
		})
	}
}
