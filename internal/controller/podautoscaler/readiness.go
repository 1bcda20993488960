package podautoscaler

import (
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kcm/kcm/internal/pod"
)

// podGroups sorts the pods a metric was asked for by how their samples may
// be used, as upstream's groupPods.
type podGroups struct {
	// ready counts the pods whose samples are used as they are.
	ready int
	// unready pods' samples are dropped; on a scale-up they count as using
	// nothing.
	unready sets.Set[string]
	// missing pods have no sample; they count as using the target (scale
	// down) or nothing (scale up).
	missing sets.Set[string]
	// ignored pods (being deleted, or failed) do not count at all.
	ignored sets.Set[string]
}

// groupPods sorts pods against the samples in metrics. Only for CPU is a
// running pod's readiness weighed: its usage is not trusted while it starts
// (cpuInitializationPeriod after its start) unless it is ready and a full
// sample window has passed since it turned ready; after that, an unready pod
// still counts unready only if it has never been ready (its last transition
// within delayOfInitialReadinessStatus of its start).
func groupPods(pods []corev1.Pod, metrics PodMetricsInfo, resource corev1.ResourceName, cpuInitializationPeriod, delayOfInitialReadinessStatus time.Duration, now time.Time) podGroups {
	g := podGroups{unready: sets.New[string](), missing: sets.New[string](), ignored: sets.New[string]()}
	for i := range pods {
		p := &pods[i]
		if p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodFailed {
			g.ignored.Insert(p.Name)
			continue
		}
		if p.Status.Phase == corev1.PodPending {
			g.unready.Insert(p.Name)
			continue
		}
		sample, found := metrics[p.Name]
		if !found {
			g.missing.Insert(p.Name)
			continue
		}
		if resource == corev1.ResourceCPU && cpuUnready(p, sample, cpuInitializationPeriod, delayOfInitialReadinessStatus, now) {
			g.unready.Insert(p.Name)
			continue
		}
		g.ready++
	}
	return g
}

// cpuUnready says whether a running pod's CPU sample is not to be trusted.
func cpuUnready(p *corev1.Pod, sample PodMetric, cpuInitializationPeriod, delayOfInitialReadinessStatus time.Duration, now time.Time) bool {
	ready := pod.ReadyCondition(p)
	if ready == nil || p.Status.StartTime == nil {
		return true
	}
	start := p.Status.StartTime.Time
	if start.Add(cpuInitializationPeriod).After(now) {
		// Starting: the sample counts once the pod is ready and the sample's
		// whole window lies after the pod turned ready.
		return ready.Status == corev1.ConditionFalse || sample.Timestamp.Before(ready.LastTransitionTime.Add(sample.Window))
	}
	// Started: an unready pod that was ready once (it turned unready later
	// than its initial readiness delay) is using CPU for real.
	return ready.Status == corev1.ConditionFalse && start.Add(delayOfInitialReadinessStatus).After(ready.LastTransitionTime.Time)
}
