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
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	endpointsliceutil "k8s.io/endpointslice/util"
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

	// slices tells the controller's own slice writes from others' and a cache that has not
	// caught up with them (upstream's tracker).
	slices *endpointsliceutil.EndpointSliceTracker
	// sizes feeds the endpoints_desired and *_endpoint_slices gauges.
	sizes *sizeCache
}

// What endpointslice-mirroring-controller's own client does (reads of the shared cache and
// Events run as kcm's identity): mirrored slices created, updated and deleted. They are owned
// by their Endpoints with blockOwnerDeletion, which needs update on endpoints/finalizers.
//
// +kubebuilder:rbac:groups="",resources=endpoints/finalizers,verbs=update
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=create;update;delete

// Reconcile mirrors the Endpoints, or deletes its mirrored slices when it must not be. Every
// sync's duration is observed, in whole milliseconds as upstream.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	defer func() {
		endpointsSyncDuration.WithLabelValues().Observe(float64(time.Since(start).Milliseconds()) / 1000)
	}()
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
	if r.slices.StaleSlices(svc, existing) {
		return reconcile.Result{RequeueAfter: staleRetry}, nil
	}
	// Track the slices found too, as upstream, so that someone else deleting one is noticed.
	for _, s := range existing {
		if !r.slices.Has(s) {
			r.slices.Update(s)
		}
	}

	plan := PlanSlices(ep, existing, r.MaxEndpointsPerSubset)
	addressesSkippedPerSync.WithLabelValues().Observe(float64(plan.Skipped))
	if plan.Invalid > 0 {
		r.Recorder.Eventf(ep, nil, corev1.EventTypeWarning, InvalidIPAddress, "Mirror",
			"Skipped %d invalid IP addresses when mirroring to EndpointSlices", plan.Invalid)
	}
	if plan.Skipped > plan.Invalid {
		r.Recorder.Eventf(ep, nil, corev1.EventTypeWarning, TooManyAddressesToMirror, "Mirror",
			"A max of %d addresses can be mirrored to EndpointSlices per Endpoints subset. %d addresses were skipped",
			r.MaxEndpointsPerSubset, plan.Skipped)
	}
	endpointsAddedPerSync.WithLabelValues().Observe(float64(plan.Added))
	endpointsUpdatedPerSync.WithLabelValues().Observe(float64(plan.Updated))
	endpointsRemovedPerSync.WithLabelValues().Observe(float64(plan.Removed))
	r.sizes.set(req.NamespacedName, plan.Groups)
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
			r.slices.Update(s)
			sliceChanges.WithLabelValues("create").Inc()
		}
	}
	for _, s := range plan.Update {
		if err := r.Client.Update(ctx, s); err != nil {
			return fmt.Errorf("updating EndpointSlice %s for Endpoints %s: %w", s.Name, key, err)
		}
		r.slices.Update(s)
		sliceChanges.WithLabelValues("update").Inc()
	}
	for _, s := range plan.Delete {
		if err := r.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("deleting EndpointSlice %s for Endpoints %s: %w", s.Name, key, err)
		}
		r.slices.ExpectDeletion(s)
		sliceChanges.WithLabelValues("delete").Inc()
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
	r.slices.DeleteService(key.Namespace, key.Name)
	// Upstream counts these deletions in no family but drops the Endpoints from the gauges.
	r.sizes.forget(key)
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
	r.slices = endpointsliceutil.NewEndpointSliceTracker()
	r.sizes = newSizeCache(r.MaxEndpointsPerSubset)
	registerMetrics()
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
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// sliceHandler enqueues the Endpoints of a mirrored slice that someone else changed or
// deleted (the tracker knows the controller's own writes), or that moved between Services
// (both names), after the batch period.
func (r *Reconciler) sliceHandler() handler.TypedEventHandler[client.Object, reconcile.Request] {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	enqueue := func(q queue, s *discoveryv1.EndpointSlice) {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			return
		}
		req := reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: name}}
		if r.BatchPeriod > 0 {
			q.AddAfter(req, r.BatchPeriod)
		} else {
			q.Add(req)
		}
	}
	managed := func(s *discoveryv1.EndpointSlice) bool { return s.Labels[discoveryv1.LabelManagedBy] == ManagedBy }
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if s := e.Object.(*discoveryv1.EndpointSlice); managed(s) && r.slices.ShouldSync(s) {
				enqueue(q, s)
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			oldSlice, s := e.ObjectOld.(*discoveryv1.EndpointSlice), e.ObjectNew.(*discoveryv1.EndpointSlice)
			if oldSlice.Labels[discoveryv1.LabelServiceName] != s.Labels[discoveryv1.LabelServiceName] {
				enqueue(q, oldSlice)
				enqueue(q, s)
				return
			}
			if managed(oldSlice) != managed(s) || (managed(s) && r.slices.ShouldSync(s)) {
				enqueue(q, s)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			// HandleDeletion is false when the controller did not expect the deletion.
			s, ok := e.Object.(*discoveryv1.EndpointSlice)
			if ok && managed(s) && r.slices.Has(s) && !r.slices.HandleDeletion(s) {
				enqueue(q, s)
			}
		},
	}
}
