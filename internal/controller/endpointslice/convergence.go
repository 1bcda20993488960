package endpointslice

import (
	"context"
	"sort"
	"sync"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	"k8s.io/apimachinery/pkg/labels"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/convergence"
	"github.com/kcm/kcm/internal/pod"
)

// Convergence is endpointslice-controller's convergence rule (the SLIs of issue 37), per
// Service. A Service's slices cannot be judged against all its pods on every event at 20,000
// pods, so the rule judges changes: a pod event that changes what a selecting Service's
// slices must show of the pod (absent, not ready, ready: EndpointState) starts the Service's
// clock with the pod pending, as does a new or changed Service for every pod it selects; the
// clock stops when the Service's slices show every pending pod as wanted. What the slices
// show of each pod is kept from the slice events themselves (counts per pod, updated by the
// endpoints of the slice that changed), so an event costs the size of one slice and a check
// the number of pending pods.
//
// Its limits: a change of a pod's IPs alone, a stale endpoint of a pod that no pod event
// concerns (one the controller never removed after a selector change) and the pods listed
// when the leader starts are not judged; a ready pod on a node the cache does not hold is
// left out of the slices by the controller and keeps the clock running.
var Convergence = convergence.Rule{
	Controller: ControllerName,
	Object:     &corev1.Service{},
	Watch:      watchConvergence,
	Description: "the Service's EndpointSlices show every pod a change concerned as it is: " +
		"ready, not ready (terminating, or not ready yet) or absent (no IP, finished, deleted, no longer selected)",
}

// Endpoint states a Service's slices show of a pod.
const (
	Absent   = "absent"
	NotReady = "not ready"
	Ready    = "ready"
)

// EndpointState is what svc's slices must show of p (nil: no pod): absent without an IP, once
// finished or gone; ready when ready and not terminating, or whatever its state with
// publishNotReadyAddresses; not ready otherwise (terminating pods are kept, not ready).
func EndpointState(p *corev1.Pod, svc *corev1.Service) string {
	switch {
	case p == nil || pod.IsTerminal(p) || (p.Status.PodIP == "" && len(p.Status.PodIPs) == 0):
		return Absent
	case svc.Spec.PublishNotReadyAddresses || (pod.IsReady(p) && p.DeletionTimestamp == nil):
		return Ready
	}
	return NotReady
}

// EndpointsShow reports whether slices (a Service's) show each pod of want (name → state) in
// that state: done lists the pods they show as wanted, waiting the others (both sorted). A
// pod is ready when any of its endpoints is (ready unset counts as ready, as consumers read
// it; a dual-stack pod has one per address type), not ready when it has endpoints and none is
// ready, absent when it has none.
func EndpointsShow(want map[string]string, slices []*discoveryv1.EndpointSlice) (done []string, waiting []string) {
	shown := shownPods{}
	for _, s := range slices {
		shown.add(s, 1)
	}
	for name, state := range want {
		if shown.state(name) == state {
			done = append(done, name)
		} else {
			waiting = append(waiting, name)
		}
	}
	sort.Strings(done)
	sort.Strings(waiting)
	return done, waiting
}

// shownPods counts, per pod, the ready and not-ready endpoints of a Service's slices.
type shownPods map[string]*shownCounts

type shownCounts struct{ ready, notReady int }

// add counts the pod endpoints of s, or takes them away (by -1).
func (p shownPods) add(s *discoveryv1.EndpointSlice, by int) {
	for _, e := range s.Endpoints {
		if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
			continue
		}
		c := p[e.TargetRef.Name]
		if c == nil {
			c = &shownCounts{}
			p[e.TargetRef.Name] = c
		}
		if e.Conditions.Ready == nil || *e.Conditions.Ready {
			c.ready += by
		} else {
			c.notReady += by
		}
		if c.ready <= 0 && c.notReady <= 0 {
			delete(p, e.TargetRef.Name)
		}
	}
}

// state is what the counted slices show of the pod.
func (p shownPods) state(pod string) string {
	switch c := p[pod]; {
	case c == nil:
		return Absent
	case c.ready > 0:
		return Ready
	}
	return NotReady
}

// sliceClocks keeps, per Service key, the pods whose state its slices must still show.
type sliceClocks struct {
	t      *convergence.Tracker
	reader client.Reader

	mu sync.Mutex
	// pending: Service key → pod → the state its slices must show.
	pending map[string]map[string]string
	// shown: Service key → what its managed slices show of each pod.
	shown map[string]shownPods
}

// watchConvergence adds the rule's handlers to the shared informers of Pods, Services and
// EndpointSlices, the three kinds the controller already watches.
func watchConvergence(ctx context.Context, c cache.Cache, t *convergence.Tracker) (func(), error) {
	w := &sliceClocks{t: t, reader: unsafeReader{c}, pending: map[string]map[string]string{}, shown: map[string]shownPods{}}
	type registration struct {
		informer cache.Informer
		reg      toolscache.ResourceEventHandlerRegistration
	}
	var regs []registration
	remove := func() {
		for _, r := range regs {
			_ = r.informer.RemoveEventHandler(r.reg)
		}
	}
	for _, h := range []struct {
		obj     client.Object
		handler toolscache.ResourceEventHandler
	}{
		{&corev1.Service{}, toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if s, ok := obj.(*corev1.Service); ok && !initial {
					w.serviceChanged(ctx, s)
				}
			},
			UpdateFunc: func(old, obj any) {
				o, ok1 := old.(*corev1.Service)
				s, ok2 := obj.(*corev1.Service)
				if ok1 && ok2 && s.Generation > o.Generation {
					w.serviceChanged(ctx, s)
				}
			},
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if s, ok := obj.(*corev1.Service); ok {
					w.forget(convergence.Key(s))
				}
			},
		}},
		{&corev1.Pod{}, toolscache.ResourceEventHandlerDetailedFuncs{
			AddFunc: func(obj any, initial bool) {
				if p, ok := obj.(*corev1.Pod); ok && !initial {
					w.podChanged(ctx, nil, p)
				}
			},
			UpdateFunc: func(old, obj any) {
				o, ok1 := old.(*corev1.Pod)
				p, ok2 := obj.(*corev1.Pod)
				if ok1 && ok2 {
					w.podChanged(ctx, o, p)
				}
			},
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				if p, ok := obj.(*corev1.Pod); ok {
					w.podChanged(ctx, p, nil)
				}
			},
		}},
		{&discoveryv1.EndpointSlice{}, toolscache.ResourceEventHandlerFuncs{
			AddFunc: func(obj any) { w.sliceChanged(nil, obj) },
			UpdateFunc: func(old, obj any) {
				w.sliceChanged(old, obj)
			},
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				w.sliceChanged(obj, nil)
			},
		}},
	} {
		informer, err := c.GetInformer(ctx, h.obj)
		if err != nil {
			remove()
			return nil, err
		}
		reg, err := informer.AddEventHandler(h.handler)
		if err != nil {
			remove()
			return nil, err
		}
		regs = append(regs, registration{informer, reg})
	}
	for _, r := range regs {
		if !toolscache.WaitForCacheSync(ctx.Done(), r.reg.HasSynced) {
			break
		}
	}
	return remove, nil
}

// podChanged: for each Service selecting the pod before or after (the library's own
// projection: only changes of labels, readiness, deletion or IPs), the pod is pending when
// the state the Service's slices must show of it changed.
func (w *sliceClocks) podChanged(ctx context.Context, old, cur *corev1.Pod) {
	keys, err := pod.ServicesToSync(w.reader, old, cur)
	if err != nil || len(keys) == 0 {
		return
	}
	for _, key := range keys {
		svc := &corev1.Service{}
		if err := w.reader.Get(ctx, key, svc); err != nil || svc.Spec.Selector == nil {
			continue
		}
		selector := labels.SelectorFromSet(svc.Spec.Selector)
		was, is := Absent, Absent
		if old != nil && selector.Matches(labels.Set(old.Labels)) {
			was = EndpointState(old, svc)
		}
		if cur != nil && selector.Matches(labels.Set(cur.Labels)) {
			is = EndpointState(cur, svc)
		}
		if was == is {
			continue
		}
		w.want(key.String(), map[string]string{podName(old, cur): is})
	}
}

// serviceChanged: a new Service, or a new generation of one (its selector, ports or
// publishNotReadyAddresses): every pod it selects is pending, in the state it is.
func (w *sliceClocks) serviceChanged(ctx context.Context, svc *corev1.Service) {
	if svc.Spec.Selector == nil {
		return
	}
	pods := &corev1.PodList{}
	if err := w.reader.List(ctx, pods, client.InNamespace(svc.Namespace), client.MatchingLabels(svc.Spec.Selector)); err != nil {
		return
	}
	want := map[string]string{}
	for i := range pods.Items {
		if state := EndpointState(&pods.Items[i], svc); state != Absent {
			want[pods.Items[i].Name] = state
		}
	}
	if len(want) > 0 {
		w.want(convergence.Key(svc), want)
	}
}

// want makes the pods pending for the Service key, unless its slices show them so already
// (the controller may have written them before this handler saw the pod's event); the clock
// starts when some are left.
func (w *sliceClocks) want(key string, states map[string]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	pending := w.pending[key]
	if pending == nil {
		pending = map[string]string{}
		w.pending[key] = pending
	}
	pods := make([]string, 0, len(states))
	for pod, state := range states {
		pending[pod] = state
		pods = append(pods, pod)
	}
	if w.check(key, pods) {
		w.t.Start(key)
	}
}

// sliceChanged counts what a managed slice shows in place of what it showed (old: nil for a
// new slice; cur: nil for a deleted one), then checks the pending pods of its Service (both,
// if it moved) that the slice names: only those can have changed state.
func (w *sliceClocks) sliceChanged(old, cur any) {
	w.mu.Lock()
	defer w.mu.Unlock()
	touched := map[string][]string{}
	for _, c := range []struct {
		obj any
		by  int
	}{{old, -1}, {cur, 1}} {
		s, ok := c.obj.(*discoveryv1.EndpointSlice)
		if !ok || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels[discoveryv1.LabelServiceName] == "" {
			continue
		}
		key := s.Namespace + "/" + s.Labels[discoveryv1.LabelServiceName]
		shown := w.shown[key]
		if shown == nil {
			shown = shownPods{}
			w.shown[key] = shown
		}
		shown.add(s, c.by)
		if len(shown) == 0 {
			delete(w.shown, key)
		}
		if len(w.pending[key]) > 0 {
			for _, e := range s.Endpoints {
				if e.TargetRef != nil && e.TargetRef.Kind == "Pod" {
					touched[key] = append(touched[key], e.TargetRef.Name)
				}
			}
		}
	}
	// Both counted first: an endpoint moved within the slice is not absent in between.
	for key, pods := range touched {
		w.check(key, pods)
	}
}

// check drops those of pods pending for the Service that its slices show as wanted, and
// stops its clock when none is left; it reports whether some are left. w.mu is held.
func (w *sliceClocks) check(key string, pods []string) bool {
	pending := w.pending[key]
	if len(pending) == 0 {
		return false
	}
	shown := w.shown[key]
	for _, pod := range pods {
		if state, ok := pending[pod]; ok && shown.state(pod) == state {
			delete(pending, pod)
		}
	}
	if len(pending) > 0 {
		return true
	}
	delete(w.pending, key)
	w.t.Stop(key)
	return false
}

// forget drops a deleted Service's clock and pending pods (what its slices show stays until
// their own deletes).
func (w *sliceClocks) forget(key string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	delete(w.pending, key)
	w.t.Forget(key)
}

func podName(old, cur *corev1.Pod) string {
	if cur != nil {
		return cur.Name
	}
	return old.Name
}

// unsafeReader lists from the shared cache without copies: the handlers only read what they
// list, and a copy of every pod of a namespace per event would make kcm dearer.
type unsafeReader struct{ client.Reader }

func (r unsafeReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.Reader.List(ctx, list, append(opts, client.UnsafeDisableDeepCopy)...)
}
