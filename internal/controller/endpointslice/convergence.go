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
// slices must say of the pod (absent, not ready, ready: EndpointState) starts the Service's
// clock with the pod pending, as does a new or changed Service for every pod it selects;
// each event on the Service's slices checks its pending pods against them
// (EndpointsShow) and the clock stops when none is left. A slice event costs a walk of the
// Service's slices, and only while a clock runs.
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
// that state, and names those they do not (sorted) — done lists the pods they show as wanted.
// A pod is ready when any of its endpoints is (ready unset counts as ready, as consumers read
// it; a dual-stack pod has one per address type), not ready when all its endpoints are not.
func EndpointsShow(want map[string]string, slices []*discoveryv1.EndpointSlice) (done []string, waiting []string) {
	shown := map[string]string{}
	for _, s := range slices {
		for _, e := range s.Endpoints {
			if e.TargetRef == nil || e.TargetRef.Kind != "Pod" {
				continue
			}
			name := e.TargetRef.Name
			if _, ok := want[name]; !ok {
				continue
			}
			if e.Conditions.Ready == nil || *e.Conditions.Ready {
				shown[name] = Ready
			} else if shown[name] != Ready {
				shown[name] = NotReady
			}
		}
	}
	for name, state := range want {
		got := shown[name]
		if got == "" {
			got = Absent
		}
		if got == state {
			done = append(done, name)
		} else {
			waiting = append(waiting, name)
		}
	}
	sort.Strings(done)
	sort.Strings(waiting)
	return done, waiting
}

// sliceClocks keeps, per Service key, the pods whose state its slices must still show.
type sliceClocks struct {
	t      *convergence.Tracker
	reader client.Reader

	mu      sync.Mutex
	pending map[string]map[string]string
}

// watchConvergence adds the rule's handlers to the shared informers of Pods, Services and
// EndpointSlices, the three kinds the controller already watches.
func watchConvergence(ctx context.Context, c cache.Cache, t *convergence.Tracker) (func(), error) {
	w := &sliceClocks{t: t, reader: unsafeReader{c}, pending: map[string]map[string]string{}}
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
			AddFunc:    func(obj any) { w.sliceChanged(ctx, obj) },
			UpdateFunc: func(_, obj any) { w.sliceChanged(ctx, obj) },
			DeleteFunc: func(obj any) {
				if tomb, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
					obj = tomb.Obj
				}
				w.sliceChanged(ctx, obj)
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
		w.want(ctx, key.Namespace, key.Name, map[string]string{podName(old, cur): is})
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
		w.want(ctx, svc.Namespace, svc.Name, want)
	}
}

// want makes the pods pending for the Service key and checks them against its slices at
// once (the controller may have written them before this handler saw the pod's event); the
// clock starts when some are not shown yet.
func (w *sliceClocks) want(ctx context.Context, namespace, name string, states map[string]string) {
	key := namespace + "/" + name
	w.mu.Lock()
	defer w.mu.Unlock()
	pending := w.pending[key]
	if pending == nil {
		pending = map[string]string{}
		w.pending[key] = pending
	}
	for pod, state := range states {
		pending[pod] = state
	}
	if w.check(ctx, namespace, name) {
		w.t.Start(key)
	}
}

// sliceChanged checks the pending pods of the slice's Service against its slices, when it
// has some.
func (w *sliceClocks) sliceChanged(ctx context.Context, obj any) {
	s, ok := obj.(*discoveryv1.EndpointSlice)
	if !ok || s.Labels[discoveryv1.LabelManagedBy] != ManagedBy || s.Labels[discoveryv1.LabelServiceName] == "" {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.check(ctx, s.Namespace, s.Labels[discoveryv1.LabelServiceName])
}

// check drops the pending pods of the Service that its slices show as wanted, and stops its
// clock when none is left; it reports whether some are left. w.mu is held.
func (w *sliceClocks) check(ctx context.Context, namespace, name string) bool {
	key := namespace + "/" + name
	pending := w.pending[key]
	if len(pending) == 0 {
		return false
	}
	list := &discoveryv1.EndpointSliceList{}
	if err := w.reader.List(ctx, list, client.InNamespace(namespace), client.MatchingLabels{
		discoveryv1.LabelServiceName: name, discoveryv1.LabelManagedBy: ManagedBy,
	}); err != nil {
		return true
	}
	slices := make([]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		slices[i] = &list.Items[i]
	}
	done, _ := EndpointsShow(pending, slices)
	for _, pod := range done {
		delete(pending, pod)
	}
	if len(pending) > 0 {
		return true
	}
	delete(w.pending, key)
	w.t.Stop(key)
	return false
}

// forget drops a deleted Service's clock and pending pods.
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
