package nodelifecycle

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// runZonePass is upstream's handleDisruption and NoExecute tainting pass in one: it
// classifies every zone by the health of its nodes, sets each zone's tainting rate from
// that, and taints the queued nodes the rates allow. It runs every --node-monitor-period,
// and every 100ms while nodes wait in a queue.
func (r *Reconciler) runZonePass(ctx context.Context) (reconcile.Result, error) {
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		return reconcile.Result{}, err
	}
	now := r.Clock.Now()
	r.updateZoneStates(ctx, nodes.Items, now)

	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	waiting := false
	for _, key := range r.zoneKeys() {
		if r.drainZone(ctx, key, byName, now) {
			waiting = true
		}
	}
	if waiting {
		return reconcile.Result{RequeueAfter: evictionPeriod}, nil
	}
	return reconcile.Result{RequeueAfter: r.MonitorPeriod}, nil
}

// effectiveReady is the node's Ready status as kcm knows it now: Unknown once its grace
// period ran out, even before the status write that says so reached the cache.
func (r *Reconciler) effectiveReady(node *corev1.Node, now time.Time) corev1.ConditionStatus {
	r.mu.Lock()
	h := r.healths[node.Name]
	r.mu.Unlock()
	if h != nil && now.After(r.deadline(node, h)) {
		return corev1.ConditionUnknown
	}
	return readyStatus(node)
}

// updateZoneStates moves zones between states and rates, as upstream's handleDisruption:
// when every zone is fully disrupted the problem is most likely kcm's own view of the
// cluster, so all NoExecute tainting stops and the taints come off; when that ends, every
// node gets a fresh grace period.
func (r *Reconciler) updateZoneStates(ctx context.Context, nodes []corev1.Node, now time.Time) {
	byZone := map[string][]corev1.ConditionStatus{}
	for i := range nodes {
		if _, excluded := nodes[i].Labels[excludeDisruptionLabel]; excluded {
			continue
		}
		k := zoneKey(&nodes[i])
		byZone[k] = append(byZone[k], r.effectiveReady(&nodes[i], now))
	}
	newStates := map[string]zoneState{}
	allAre := true
	for k, ready := range byZone {
		newStates[k] = computeZoneState(ready, r.UnhealthyZoneThreshold)
		if newStates[k] != stateFullDisruption {
			allAre = false
		}
	}

	r.mu.Lock()
	allWas := true
	for k, z := range r.zones {
		if _, present := byZone[k]; !present {
			if len(z.queue) == 0 {
				delete(r.zones, k)
			}
			continue
		}
		if z.state != stateFullDisruption {
			allWas = false
		}
	}
	for k := range byZone {
		r.zoneLocked(k)
	}
	rates := evictionRates{primary: r.EvictionRate, secondary: r.SecondaryEvictionRate, largeClusterThreshold: r.LargeClusterThreshold}
	switch {
	case allAre && allWas:
		// Still all down: nothing changes.
	case allAre:
		log.FromContext(ctx).Info("All nodes are not ready: entering master disruption mode, no NoExecute tainting")
		for k := range byZone {
			z := r.zones[k]
			z.state, z.queue = stateFullDisruption, nil
			r.setRateLocked(z, 0)
		}
	case allWas:
		log.FromContext(ctx).Info("Some nodes are ready again: leaving master disruption mode")
		for _, h := range r.healths {
			h.probe, h.readyTransition = now, now
		}
		for k, ready := range byZone {
			z := r.zones[k]
			z.state = newStates[k]
			r.setRateLocked(z, zoneRate(z.state, len(ready), rates))
		}
	default:
		for k, ready := range byZone {
			z := r.zones[k]
			if z.state == newStates[k] {
				continue
			}
			log.FromContext(ctx).Info("Zone changed state", "zone", k, "state", newStates[k])
			z.state = newStates[k]
			r.setRateLocked(z, zoneRate(z.state, len(ready), rates))
		}
	}
	r.mu.Unlock()

	if allAre && !allWas {
		for i := range nodes {
			if err := r.setNoExecute(ctx, &nodes[i], ""); err != nil {
				log.FromContext(ctx).Error(err, "Removing NoExecute taints in master disruption mode", "node", nodes[i].Name)
			}
		}
	}
}

func (r *Reconciler) zoneKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.zones))
	for k := range r.zones {
		keys = append(keys, k)
	}
	return keys
}

// drainZone taints, in order, the zone's queued nodes its rate allows now; it reports
// whether nodes are still waiting.
func (r *Reconciler) drainZone(ctx context.Context, key string, nodes map[string]*corev1.Node, now time.Time) bool {
	for {
		r.mu.Lock()
		z := r.zones[key]
		if z == nil || len(z.queue) == 0 {
			r.mu.Unlock()
			return false
		}
		if z.limiter == nil || !z.limiter.AllowN(now, 1) {
			r.mu.Unlock()
			return true
		}
		name := z.queue[0]
		z.queue = z.queue[1:]
		r.mu.Unlock()

		node, ok := nodes[name]
		if !ok {
			continue
		}
		taint := noExecuteKey(r.effectiveReady(node, now))
		if taint == "" || hasNoExecute(node, taint) {
			continue
		}
		if err := r.setNoExecute(ctx, node, taint); err != nil {
			if !apierrors.IsNotFound(err) {
				log.FromContext(ctx).Error(err, "Tainting node NoExecute; will retry", "node", name)
				r.requeueFront(key, name)
				return true
			}
		}
	}
}

func (r *Reconciler) requeueFront(key, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if z := r.zones[key]; z != nil {
		z.queue = append([]string{name}, without(z.queue, name)...)
	}
}
