package resourcepoolstatusrequest

import (
	"time"

	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
)

// Upstream's lifetimes of a request: answered ones go an hour after their answer, ones
// never answered a day after their creation; both are looked for every ten minutes.
const (
	CleanupInterval = 10 * time.Minute
	CompletedTTL    = time.Hour
	PendingTTL      = 24 * time.Hour
)

// Expired: the request has outlived its lifetime at now. An answered request's lifetime
// runs from its Complete or Failed condition (its creation when it has neither); a pending
// one's from its creation.
func Expired(req *resourcev1alpha3.ResourcePoolStatusRequest, now time.Time, completedTTL, pendingTTL time.Duration) bool {
	if req.Status == nil {
		return olderThan(req.CreationTimestamp.Time, now, pendingTTL)
	}
	for _, c := range req.Status.Conditions {
		if c.Type == resourcev1alpha3.ResourcePoolStatusRequestConditionComplete ||
			c.Type == resourcev1alpha3.ResourcePoolStatusRequestConditionFailed {
			return olderThan(c.LastTransitionTime.Time, now, completedTTL)
		}
	}
	return olderThan(req.CreationTimestamp.Time, now, completedTTL)
}

func olderThan(t, now time.Time, d time.Duration) bool {
	return !t.IsZero() && now.Sub(t) > d
}
