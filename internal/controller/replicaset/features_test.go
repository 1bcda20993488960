package replicaset

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/pod"
)

// With PodDeletionCost off, upstream ranks pods as if no pod-deletion-cost annotation were
// set: here the crowded node decides instead of the lower cost.
func TestPodsToDeleteWithoutDeletionCost(t *testing.T) {
	now := time.Now()
	cheap, crowded := testPod("cheap", "n2", true), testPod("crowded", "n1", true)
	cheap.Annotations = map[string]string{pod.DeletionCostAnnotation: "-10"}
	related := []*corev1.Pod{testPod("x", "n1", true), testPod("y", "n1", true)}
	if got := podsToDelete([]*corev1.Pod{crowded, cheap}, related, 1, true, now); got[0] != cheap {
		t.Errorf("with the gate on, the cheaper pod goes first, got %s", got[0].Name)
	}
	if got := podsToDelete([]*corev1.Pod{cheap, crowded}, related, 1, false, now); got[0] != crowded {
		t.Errorf("with the gate off, the cost is ignored and the crowded node's pod goes first, got %s", got[0].Name)
	}
}
