package noderoute_test

import (
	corev1 "k8s.io/api/core/v1"
)

// networkUnavailable is a node's NetworkUnavailable condition, or nil.
func networkUnavailable(node *corev1.Node) *corev1.NodeCondition {
	for i := range node.Status.Conditions {
		if node.Status.Conditions[i].Type == corev1.NodeNetworkUnavailable {
			return &node.Status.Conditions[i]
		}
	}
	return nil
}
