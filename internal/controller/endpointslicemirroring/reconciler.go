// Package endpointslicemirroring is upstream's endpointslice-mirroring-controller: the
// Endpoints a user writes for a Service without a selector are mirrored into EndpointSlices
// (managed-by endpointslicemirroring-controller.k8s.io, owned by the Endpoints), so that
// consumers of slices see them. Mirrored slices go when the Endpoints goes, is labelled
// endpointslice.kubernetes.io/skip-mirror=true, or its Service goes or gains a selector.
package endpointslicemirroring

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// ControllerName is the controller's name in kcm's registry.
const ControllerName = "endpointslice-mirroring-controller"

// EventSource is upstream's component name on the controller's Events.
const EventSource = "endpoint-slice-mirroring-controller"

// Event reasons, as upstream.
const (
	InvalidIPAddress         = "InvalidIPAddress"
	TooManyAddressesToMirror = "TooManyAddressesToMirror"
)

// staleRetry is how soon a sync that found the cache behind its own writes looks again.
const staleRetry = 100 * time.Millisecond

// Reconciler mirrors one Endpoints (a request is the Endpoints' and its Service's name).
type Reconciler struct {
	// Client reads Endpoints, Services and EndpointSlices from the cache and writes slices.
	Client   client.Client
	Recorder recorder.EventRecorder
	// MaxEndpointsPerSubset caps the addresses mirrored per subset
	// (--mirroring-max-endpoints-per-subset).
	MaxEndpointsPerSubset int
	// BatchPeriod delays the syncs that slice changes cause
	// (--mirroring-endpointslice-updates-batch-period).
	BatchPeriod time.Duration

	written generations
}

// +kubebuilder:rbac:groups="",resources=endpoints,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=endpoints/finalizers;services/finalizers,verbs=update
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Reconcile mirrors the Endpoints, or deletes its mirrored slices when it must not be.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ep := &corev1.Endpoints{}
	if err := r.Client.Get(ctx, req.NamespacedName, ep); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.deleteMirrored(ctx, req.NamespacedName)
	}
	if !ShouldMirror(ep) {
		return reconcile.Result{}, r.deleteMirrored(ctx, req.NamespacedName)
	}
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, req.NamespacedName, svc); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		return reconcile.Result{}, r.deleteMirrored(ctx, req.NamespacedName)
	}
	// A Service with a selector has its slices from endpointslice-controller.
	if svc.Spec.Selector != nil {
		return reconcile.Result{}, r.deleteMirrored(ctx, req.NamespacedName)
	}

	existing, err := r.mirrored(ctx, req.NamespacedName)
	if err != nil {
		return reconcile.Result{}, err
	}
	if r.written.stale(req.NamespacedName, existing) {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}

	plan := PlanSlices(ep, existing, r.MaxEndpointsPerSubset)
	if plan.Invalid > 0 {
		r.Recorder.Eventf(ep, nil, corev1.EventTypeWarning, InvalidIPAddress, "Mirror",
			"Skipped %d invalid IP addresses when mirroring to EndpointSlices", plan.Invalid)
	}
	if plan.Skipped > plan.Invalid {
		r.Recorder.Eventf(ep, nil, corev1.EventTypeWarning, TooManyAddressesToMirror, "Mirror",
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped",
			r.MaxEndpointsPerSubset, plan.Skipped)
	}
	return reconcile.Result{}, r.apply(ctx, ep, plan)
}

// apply writes the plan: creations (not for an Endpoints being deleted), updates, deletions.
func (r *Reconciler) apply(ctx context.Context, ep *corev1.Endpoints, plan Plan) error {
	key := client.ObjectKeyFromObject(ep)
	if ep.DeletionTimestamp == nil {
		for _, s := range plan.Create {
			if err := r.Client.Create(ctx, s); err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("creating EndpointSlice for Endpoints %s: %w", key, err)
			}
			r.written.wrote(key, s.UID, s.Generation)
		}
	}
	for _, s := range plan.Update {
		if err := r.Client.Update(ctx, s); err != nil {
			return fmt.Errorf("updating EndpointSlice %s for Endpoints %s: %w", s.Name, key, err)
		}
		r.written.wrote(key, s.UID, s.Generation)
	}
	for _, s := range plan.Delete {
		if err := r.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting EndpointSlice %s for Endpoints %s: %w", s.Name, key, err)
		}
		r.written.deleted(key, s.UID)
	}
	if n := len(plan.Create) + len(plan.Update) + len(plan.Delete); n > 0 {
		log.FromContext(ctx).V(4).Info("Mirrored Endpoints", "created", len(plan.Create), "updated", len(plan.Update), "deleted", len(plan.Delete))
	}
	return nil
}

// mirrored lists, from the cache, the slices this controller mirrored for the Endpoints.
func (r *Reconciler) mirrored(ctx context.Context, key types.NamespacedName) ([]*discoveryv1.EndpointSlice, error) {
	list := &discoveryv1.EndpointSliceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(key.Namespace), client.MatchingLabels{
		discoveryv1.LabelServiceName: key.Name,
		discoveryv1.LabelManagedBy:   ManagedBy,
	}); err != nil {
		return nil, err
	}
	out := make([]*discoveryv1.EndpointSlice, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (r *Reconciler) deleteMirrored(ctx context.Context, key types.NamespacedName) error {
	slices, err := r.mirrored(ctx, key)
	if err != nil {
		return err
	}
	r.written.forget(key)
	var errs []error
	for _, s := range slices {
		if err := r.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("deleting %d/%d EndpointSlices mirrored for Endpoints %s: %w", len(errs), len(slices), key, errors.Join(errs...))
	}
	return nil
}

// SetupWithManager watches Endpoints that are or were mirrorable, Services whose having a
// selector or not matters (created, deleted, or gaining or losing a selector), and the
// slices this controller mirrored (mapped to their Service's name).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New(ControllerName + ": Client and Recorder are required")
	}
	if r.MaxEndpointsPerSubset <= 0 {
		return fmt.Errorf("%s: MaxEndpointsPerSubset must be positive, got %d", ControllerName, r.MaxEndpointsPerSubset)
	}
	mirrorable := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return ShouldMirror(e.Object.(*corev1.Endpoints)) },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return ShouldMirror(e.ObjectOld.(*corev1.Endpoints)) || ShouldMirror(e.ObjectNew.(*corev1.Endpoints))
		},
		DeleteFunc: func(e event.DeleteEvent) bool {
			ep, ok := e.Object.(*corev1.Endpoints)
			return !ok || ShouldMirror(ep)
		},
	}
	selectorless := func(o client.Object) bool { return o.(*corev1.Service).Spec.Selector == nil }
	serviceMatters := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool { return selectorless(e.Object) },
		UpdateFunc: func(e event.UpdateEvent) bool { return selectorless(e.ObjectOld) != selectorless(e.ObjectNew) },
		DeleteFunc: func(e event.DeleteEvent) bool {
			_, ok := e.Object.(*corev1.Service)
			return !ok || selectorless(e.Object)
		},
		GenericFunc: func(event.GenericEvent) bool { return false },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Endpoints{}, builder.WithPredicates(mirrorable)).
		Watches(&corev1.Service{}, &handler.EnqueueRequestForObject{}, builder.WithPredicates(serviceMatters)).
		Watches(&discoveryv1.EndpointSlice{}, r.sliceHandler()).
		WithOptions(controller.Options{MaxConcurrentReconciles: workers}).
		Complete(r)
}

// sliceHandler enqueues the Endpoints of a mirrored slice that changed or went (both
// names when its service-name label changed), after the batch period.
func (r *Reconciler) sliceHandler() handler.EventHandler {
	enqueue := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], o client.Object) {
		name := o.GetLabels()[discoveryv1.LabelServiceName]
		if name == "" {
			return
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: o.GetNamespace(), Name: name}}
		if r.BatchPeriod > 0 {
			q.AddAfter(req, r.BatchPeriod)
		} else {
			q.Add(req)
		}
	}
	managed := func(o client.Object) bool { return o.GetLabels()[discoveryv1.LabelManagedBy] == ManagedBy }
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if managed(e.Object) {
				enqueue(q, e.Object)
			}
		},
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			oldName := e.ObjectOld.GetLabels()[discoveryv1.LabelServiceName]
			if oldName != e.ObjectNew.GetLabels()[discoveryv1.LabelServiceName] {
				enqueue(q, e.ObjectOld)
				enqueue(q, e.ObjectNew)
				return
			}
			if managed(e.ObjectOld) || managed(e.ObjectNew) {
				enqueue(q, e.ObjectNew)
			}
		},
		DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if managed(e.Object) {
				r.written.gone(e.Object)
				enqueue(q, e.Object)
			}
		},
	}
}

// generations remembers, per Endpoints, the generation of each slice this controller last
// wrote (or that it deleted one), as upstream's EndpointSliceTracker: a sync whose cache
// does not show those writes yet waits rather than writing again, which would create
// duplicates or fail on conflicts. Memories older than staleTimeout are dropped, so that a
// lost watch event cannot hold an Endpoints forever.
type generations struct {
	mu    sync.Mutex
	byKey map[types.NamespacedName]*writes
}

type writes struct {
	gens map[types.UID]int64
	at   time.Time
}

const (
	deletionExpected = -1
	staleTimeout     = 30 * time.Second
)

func (g *generations) set(key types.NamespacedName, uid types.UID, gen int64) {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.byKey == nil {
		g.byKey = map[types.NamespacedName]*writes{}
	}
	w := g.byKey[key]
	if w == nil {
		w = &writes{gens: map[types.UID]int64{}}
		g.byKey[key] = w
	}
	w.gens[uid], w.at = gen, time.Now()
}

func (g *generations) wrote(key types.NamespacedName, uid types.UID, gen int64) { g.set(key, uid, gen) }
func (g *generations) deleted(key types.NamespacedName, uid types.UID) {
	g.set(key, uid, deletionExpected)
}

// gone forgets a slice once its deletion is observed.
func (g *generations) gone(o client.Object) {
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetLabels()[discoveryv1.LabelServiceName]}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w := g.byKey[key]; w != nil {
		delete(w.gens, o.GetUID())
	}
}

func (g *generations) forget(key types.NamespacedName) {
	g.mu.Lock()
	defer g.mu.Unlock()
	delete(g.byKey, key)
}

// stale reports whether the cached slices predate a write of ours: a slice written is
// missing or older, or a slice deleted is still there.
func (g *generations) stale(key types.NamespacedName, cached []*discoveryv1.EndpointSlice) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	w := g.byKey[key]
	if w == nil {
		return false
	}
	if time.Since(w.at) > staleTimeout {
		delete(g.byKey, key)
		return false
	}
	seen := map[types.UID]bool{}
	for _, s := range cached {
		seen[s.UID] = true
		if gen, ok := w.gens[s.UID]; ok && (gen == deletionExpected || gen > s.Generation) {
			return true
		}
	}
	for uid, gen := range w.gens {
		if gen != deletionExpected && !seen[uid] {
			return true
		}
	}
	return false
}
