package replicaset

import (
	"sort"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/kcm/kcm/internal/pod"
)

// BurstReplicas caps the pods created or deleted in one sync, as upstream.
const BurstReplicas = 500

// podsToDelete picks the n pods to delete first (see pod.DeleteFirst; withCost honours the
// pod-deletion-cost annotation). related are the pods of the owner's siblings (ReplicaSets
// of the same Deployment): a pod sharing its node with more of them goes first, to spread
// what remains.
func podsToDelete(pods, related []*corev1.Pod, n int, withCost bool, now time.Time) []*corev1.Pod {
	if n >= len(pods) {
		return pods
	}
	onNode := map[string]int{}
	for _, p := range related {
		if pod.IsActive(p) {
			onNode[p.Spec.NodeName]++
		}
	}
	ranked := append([]*corev1.Pod(nil), pods...)
	sort.SliceStable(ranked, func(i, j int) bool {
		a, b := ranked[i], ranked[j]
		return pod.DeleteFirst(a, b, withCost, onNode[a.Spec.NodeName], onNode[b.Spec.NodeName], now)
	})
	return ranked[:n]
}

// calculateStatus is the status rs should have given its active and terminating pods and the
// outcome of managing replicas (manageErr), at now.
func calculateStatus(rs *appsv1.ReplicaSet, active, terminating []*corev1.Pod, manageErr error, withTerminating bool, now time.Time) appsv1.ReplicaSetStatus {
	status := *rs.Status.DeepCopy()
	templateLabels := labels.SelectorFromSet(rs.Spec.Template.Labels)
	var fullyLabeled, ready, available int32
	for _, p := range active {
		if templateLabels.Matches(labels.Set(p.Labels)) {
			fullyLabeled++
		}
		if pod.IsReady(p) {
			ready++
			if pod.IsAvailable(p, rs.Spec.MinReadySeconds, now) {
				available++
			}
		}
	}
	status.Replicas = int32(len(active))
	status.FullyLabeledReplicas = fullyLabeled
	status.ReadyReplicas = ready
	status.AvailableReplicas = available
	status.TerminatingReplicas = nil
	if withTerminating {
		status.TerminatingReplicas = new(int32(len(terminating)))
	}

	failure := condition(status.Conditions, appsv1.ReplicaSetReplicaFailure)
	switch {
	case manageErr != nil && failure == nil:
		reason := "FailedDelete"
		if len(active) < int(replicas(rs)) {
			reason = "FailedCreate"
		}
		status.Conditions = append(status.Conditions, appsv1.ReplicaSetCondition{
			Type: appsv1.ReplicaSetReplicaFailure, Status: corev1.ConditionTrue,
			LastTransitionTime: metav1.NewTime(now), Reason: reason, Message: manageErr.Error(),
		})
	case manageErr == nil && failure != nil:
		status.Conditions = withoutCondition(status.Conditions, appsv1.ReplicaSetReplicaFailure)
	}
	return status
}

// replicas is spec.replicas, 1 when unset (the API server defaults it).
func replicas(rs *appsv1.ReplicaSet) int32 {
	if rs.Spec.Replicas == nil {
		return 1
	}
	return *rs.Spec.Replicas
}

func condition(conds []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) *appsv1.ReplicaSetCondition {
	for i := range conds {
		if conds[i].Type == t {
			return &conds[i]
		}
	}
	return nil
}

func withoutCondition(conds []appsv1.ReplicaSetCondition, t appsv1.ReplicaSetConditionType) []appsv1.ReplicaSetCondition {
	var out []appsv1.ReplicaSetCondition
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// nextAvailabilityCheck is when a ready pod of rs next becomes available, or nil.
func nextAvailabilityCheck(rs *appsv1.ReplicaSet, active []*corev1.Pod, now time.Time) *time.Duration {
	var soonest *time.Duration
	for _, p := range active {
		if d := pod.NextAvailabilityCheck(p, rs.Spec.MinReadySeconds, now); d != nil && (soonest == nil || *d < *soonest) {
			soonest = d
		}
	}
	return soonest
}
