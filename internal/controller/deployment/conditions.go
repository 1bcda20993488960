package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Condition reasons, as upstream (pkg/controller/deployment/util).
const (
	// Progressing.
	reasonReplicaSetUpdated = "ReplicaSetUpdated"
	reasonFailedRSCreate    = "ReplicaSetCreateError"
	reasonNewReplicaSet     = "NewReplicaSetCreated"
	reasonFoundNewRS        = "FoundNewReplicaSet"
	reasonNewRSAvailable    = "NewReplicaSetAvailable"
	reasonTimedOut          = "ProgressDeadlineExceeded"
	reasonPaused            = "DeploymentPaused"
	reasonResumed           = "DeploymentResumed"
	// Available.
	reasonMinimumReplicasAvailable   = "MinimumReplicasAvailable"
	reasonMinimumReplicasUnavailable = "MinimumReplicasUnavailable"
)

// newCondition is a condition that changed at now.
func newCondition(t appsv1.DeploymentConditionType, status corev1.ConditionStatus, reason, message string, now metav1.Time) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type: t, Status: status, Reason: reason, Message: message,
		LastUpdateTime: now, LastTransitionTime: now,
	}
}

// getCondition returns a copy of the condition of type t, or nil.
func getCondition(status appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) *appsv1.DeploymentCondition {
	for _, c := range status.Conditions {
		if c.Type == t {
			return &c
		}
	}
	return nil
}

// setCondition puts c in status, unless a condition of its type with the same status and
// reason is there already; a condition whose status does not change keeps its
// lastTransitionTime. The condition goes last, as upstream.
func setCondition(status *appsv1.DeploymentStatus, c appsv1.DeploymentCondition) {
	cur := getCondition(*status, c.Type)
	if cur != nil && cur.Status == c.Status && cur.Reason == c.Reason {
		return
	}
	if cur != nil && cur.Status == c.Status {
		c.LastTransitionTime = cur.LastTransitionTime
	}
	status.Conditions = append(withoutCondition(status.Conditions, c.Type), c)
}

// removeCondition drops the condition of type t.
func removeCondition(status *appsv1.DeploymentStatus, t appsv1.DeploymentConditionType) {
	status.Conditions = withoutCondition(status.Conditions, t)
}

func withoutCondition(conds []appsv1.DeploymentCondition, t appsv1.DeploymentConditionType) []appsv1.DeploymentCondition {
	var out []appsv1.DeploymentCondition
	for _, c := range conds {
		if c.Type != t {
			out = append(out, c)
		}
	}
	return out
}

// fromReplicaSetCondition promotes a ReplicaSet's condition (ReplicaFailure) to the Deployment.
func fromReplicaSetCondition(c appsv1.ReplicaSetCondition) appsv1.DeploymentCondition {
	return appsv1.DeploymentCondition{
		Type: appsv1.DeploymentConditionType(c.Type), Status: c.Status,
		LastTransitionTime: c.LastTransitionTime, LastUpdateTime: c.LastTransitionTime,
		Reason: c.Reason, Message: c.Message,
	}
}

// replicaFailure is the ReplicaFailure condition to copy to the Deployment: the new
// ReplicaSet's first, else the first one found among all ReplicaSets.
func replicaFailure(allRSs []*appsv1.ReplicaSet, newRS *appsv1.ReplicaSet) *appsv1.DeploymentCondition {
	for _, rs := range append([]*appsv1.ReplicaSet{newRS}, allRSs...) {
		if rs == nil {
			continue
		}
		for _, c := range rs.Status.Conditions {
			if c.Type == appsv1.ReplicaSetReplicaFailure {
				dc := fromReplicaSetCondition(c)
				return &dc
			}
		}
	}
	return nil
}
