package nodelifecycle

import (
	"context"
	"slices"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-helpers/node/topology"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// tainter is the NoExecute tainting queue of one zone, drained at the zone's rate: upstream's
// zoneNoExecuteTainter.
type tainter struct {
	rate    float32
	limiter *rate.Limiter // nil when the rate is 0
	queue   []string
}

func (t *tainter) setRate(qps float32) {
	if t.limiter != nil && t.rate == qps {
		return
	}
	t.rate, t.limiter = qps, nil
	if qps > 0 {
		t.limiter = rate.NewLimiter(rate.Limit(qps), 1)
	}
}

// runZonePasses is the periodic, cluster-wide work, a manager Runnable of its own beside the
// per-node reconciles (so it runs on the elected leader only, once the caches are synced):
// a zone pass on every tick of the --node-monitor-period grid, on which node deadlines
// fall too, so that nodes that fell silent together are classified together; every 100ms
// while nodes wait in a queue; and at once when a node reconcile queues a node.
func (r *Reconciler) runZonePasses(ctx context.Context) error {
	for {
		wait := r.zonePass(ctx)
		timer := r.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil
		case <-r.kick:
			timer.Stop()
		case <-timer.C():
		}
	}
}

// kickZonePass asks for a zone pass now.
func (r *Reconciler) kickZonePass() {
	select {
	case r.kick <- struct{}{}:
	default: // a pass is already due
	}
}

// zonePass is upstream's handleDisruption and NoExecute tainting pass in one: it classifies
// every zone by the health of its nodes, sets each zone's tainting rate from that, and
// taints the queued nodes the rates allow. It returns the time until the next pass. Its
// duration is upstream's update_all_nodes_health_duration_seconds, the cluster-wide pass.
func (r *Reconciler) zonePass(ctx context.Context) time.Duration {
	start := r.Clock.Now()
	defer func() { updateAllNodesHealthDuration.Observe(r.Clock.Since(start).Seconds()) }()
	nodes := &corev1.NodeList{}
	if err := r.Client.List(ctx, nodes); err != nil {
		log.FromContext(ctx).Error(err, "Listing nodes for the zone pass; will retry")
		return evictionPeriod
	}
	now := r.Clock.Now()
	ready, pending := r.readyByZone(nodes.Items, now)
	if pending {
		// Nodes whose grace period just ran out are being judged: classify them together
		// once they are, as upstream's monitor pass judges every node before its zones.
		return evictionPeriod
	}
	r.applyZonePlan(ctx, nodes.Items, ready, now)

	byName := make(map[string]*corev1.Node, len(nodes.Items))
	for i := range nodes.Items {
		byName[nodes.Items[i].Name] = &nodes.Items[i]
	}
	waiting := false
	for _, key := range r.tainterKeys() {
		if r.drainZone(ctx, key, byName, now) {
			waiting = true
		}
	}
	if waiting {
		return evictionPeriod
	}
	return r.nextTick(now).Sub(now)
}

// nextTick is the first point of the --node-monitor-period grid after now, plus a
// millisecond so that a node whose deadline falls on it is past it.
func (r *Reconciler) nextTick(now time.Time) time.Time {
	return now.Truncate(r.MonitorPeriod).Add(r.MonitorPeriod + time.Millisecond)
}

// readyByZone is what a zone pass observes: the Ready status, as kcm knows it now, of each
// node counted for disruption, by zone; pending when a node past its grace period is still
// to be judged.
func (r *Reconciler) readyByZone(nodes []corev1.Node, now time.Time) (map[string][]corev1.ConditionStatus, bool) {
	byZone := map[string][]corev1.ConditionStatus{}
	pending := false
	for i := range nodes {
		if _, excluded := nodes[i].Labels[excludeDisruptionLabel]; excluded {
			continue
		}
		status, counted, judging := r.effectiveReady(&nodes[i], now)
		pending = pending || judging
		if !counted {
			continue
		}
		k := topology.GetZoneKey(&nodes[i])
		byZone[k] = append(byZone[k], status)
	}
	return byZone, pending
}

// effectiveReady is the node's Ready status as kcm knows it now: Unknown once its grace
// period ran out, even before the status write that says so reached the cache. Under the
// lease circuit breaker that takes its reconcile's verdict: a node the breaker holds is not
// counted (upstream counts in its zones only the nodes whose health update went through),
// and one not judged yet is pending for one monitor period, then counted Unknown.
func (r *Reconciler) effectiveReady(node *corev1.Node, now time.Time) (status corev1.ConditionStatus, counted, pending bool) {
	r.mu.Lock()
	h := r.healths[node.Name]
	var verdict expiryVerdict
	if h != nil {
		verdict = h.expiry
	}
	r.mu.Unlock()
	if h == nil || !now.After(r.deadline(node, h)) {
		return readyStatus(node), true, false
	}
	switch {
	case !r.LeaseCircuitBreaker || verdict == expiryConfirmed:
		return corev1.ConditionUnknown, true, false
	case verdict == expiryHeld:
		return readyStatus(node), false, false
	case now.Before(r.deadline(node, h).Add(r.MonitorPeriod)):
		return readyStatus(node), false, true
	}
	return corev1.ConditionUnknown, true, false
}

// applyZonePlan plans the zones' new states from what readyByZone observed (planZones) and
// applies the plan: the zones' rates, and the changes of master disruption mode.
func (r *Reconciler) applyZonePlan(ctx context.Context, nodes []corev1.Node, ready map[string][]corev1.ConditionStatus, now time.Time) {
	logger := log.FromContext(ctx)

	r.mu.Lock()
	plan := planZones(r.zoneStates, ready, r.rates())
	var gone []string
	for k := range r.zoneStates {
		if _, live := plan.states[k]; !live {
			gone = append(gone, k)
		}
	}
	recordZones(ready, gone)
	r.zoneStates = plan.states
	for k := range plan.states {
		r.tainterLocked(k)
	}
	for k, qps := range plan.rates {
		r.tainterLocked(k).setRate(qps)
	}
	switch plan.mode {
	case modeEnter:
		// The taints come off below; nothing waits to be tainted.
		for _, t := range r.tainters {
			t.queue = nil
		}
	case modeLeave:
		for _, h := range r.healths {
			h.probe, h.readyTransition, h.expiry = now, now, expiryUnjudged
		}
	}
	// A zone with no node left keeps its queue until the queue is drained.
	for k, t := range r.tainters {
		if _, live := plan.states[k]; !live && len(t.queue) == 0 {
			delete(r.tainters, k)
		}
	}
	r.mu.Unlock()

	switch plan.mode {
	case modeEnter:
		logger.Info("All nodes are not ready: entering master disruption mode, no NoExecute tainting")
		for i := range nodes {
			if err := r.setNoExecute(ctx, &nodes[i], ""); err != nil {
				logger.Error(err, "Removing NoExecute taints in master disruption mode", "node", nodes[i].Name)
			}
		}
	case modeLeave:
		logger.Info("Some nodes are ready again: leaving master disruption mode")
	}
	for _, k := range plan.changed {
		logger.Info("Zone changed state", "zone", k, "state", plan.states[k])
	}
}

func (r *Reconciler) rates() evictionRates {
	return evictionRates{
		primary: r.EvictionRate, secondary: r.SecondaryEvictionRate,
		largeClusterThreshold: r.LargeClusterThreshold, unhealthyZoneThreshold: r.UnhealthyZoneThreshold,
	}
}

// tainterLocked returns the zone's tainter, created at the primary rate as upstream creates
// a new zone's, with the zone's evictions_total series at 0.
func (r *Reconciler) tainterLocked(key string) *tainter {
	t, ok := r.tainters[key]
	if !ok {
		t = &tainter{}
		t.setRate(r.EvictionRate)
		r.tainters[key] = t
		evictionsTotal.WithLabelValues(key).Add(0)
	}
	return t
}

func (r *Reconciler) tainterKeys() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	keys := make([]string, 0, len(r.tainters))
	for k := range r.tainters {
		keys = append(keys, k)
	}
	return keys
}

// drainZone taints, in order, the zone's queued nodes its rate allows now; it reports
// whether nodes are still waiting.
func (r *Reconciler) drainZone(ctx context.Context, key string, nodes map[string]*corev1.Node, now time.Time) bool {
	for {
		r.mu.Lock()
		t := r.tainters[key]
		if t == nil || len(t.queue) == 0 {
			r.mu.Unlock()
			return false
		}
		if t.limiter == nil || !t.limiter.AllowN(now, 1) {
			r.mu.Unlock()
			return true
		}
		name := t.queue[0]
		t.queue = t.queue[1:]
		r.mu.Unlock()

		node, ok := nodes[name]
		if !ok {
			continue
		}
		status, _, _ := r.effectiveReady(node, now)
		taint := noExecuteKey(status)
		if taint == "" || hasNoExecute(node, taint) {
			continue
		}
		switch err := r.setNoExecute(ctx, node, taint); {
		case err == nil:
			// Upstream counts each taint of its tainting pass as an eviction of the zone.
			evictionsTotal.WithLabelValues(key).Inc()
		case !apierrors.IsNotFound(err):
			log.FromContext(ctx).Error(err, "Tainting node NoExecute; will retry", "node", name)
			r.requeueFront(key, name)
			return true
		}
	}
}

// enqueue queues the node for a NoExecute taint in its zone; false when already queued.
func (r *Reconciler) enqueue(node *corev1.Node) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.tainterLocked(topology.GetZoneKey(node))
	if slices.Contains(t.queue, node.Name) {
		return false
	}
	t.queue = append(t.queue, node.Name)
	return true
}

func (r *Reconciler) dequeue(node *corev1.Node) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t, ok := r.tainters[topology.GetZoneKey(node)]; ok {
		t.queue = without(t.queue, node.Name)
	}
}

func (r *Reconciler) requeueFront(key, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if t := r.tainters[key]; t != nil {
		t.queue = append([]string{name}, without(t.queue, name)...)
	}
}

func without(list []string, name string) []string {
	out := list[:0]
	for _, n := range list {
		if n != name {
			out = append(out, n)
		}
	}
	return out
}
