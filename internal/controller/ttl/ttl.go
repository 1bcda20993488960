package ttl

import (
	"math"
	"strconv"

	corev1 "k8s.io/api/core/v1"
)

// boundary is one interval of cluster sizes with the TTL its nodes get. Neighbouring
// intervals overlap, so that a cluster whose size hovers around a boundary does not flip its
// nodes' annotation back and forth.
type boundary struct {
	sizeMin, sizeMax int
	ttlSeconds       int
}

// boundaries is upstream's table (ttlBoundaries).
var boundaries = []boundary{
	{sizeMin: 0, sizeMax: 100, ttlSeconds: 0},
	{sizeMin: 90, sizeMax: 500, ttlSeconds: 15},
	{sizeMin: 450, sizeMax: 1000, ttlSeconds: 30},
	{sizeMin: 900, sizeMax: 2000, ttlSeconds: 60},
	{sizeMin: 1800, sizeMax: math.MaxInt32, ttlSeconds: 300},
}

// desiredTTL returns the boundary step for a cluster of nodeCount nodes that was at step, and
// the TTL in seconds of that step: the step moves up only when the count exceeds its
// sizeMax, and down only when the count falls below its sizeMin. Upstream moves one step per
// node added or deleted; a larger change moves as many steps as needed.
func desiredTTL(step, nodeCount int) (newStep, ttlSeconds int) {
	step = min(max(step, 0), len(boundaries)-1)
	for step < len(boundaries)-1 && nodeCount > boundaries[step].sizeMax {
		step++
	}
	for step > 0 && nodeCount < boundaries[step].sizeMin {
		step--
	}
	return step, boundaries[step].ttlSeconds
}

// currentTTL reads the node's TTL annotation; ok is false when it is missing or not a number.
func currentTTL(node *corev1.Node) (seconds int, ok bool) {
	v, found := node.Annotations[corev1.ObjectTTLAnnotationKey]
	if !found {
		return 0, false
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, false
	}
	return n, true
}
