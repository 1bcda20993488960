// Package endpointslice is upstream's endpointslice-controller: for every Service with a
// selector it keeps EndpointSlices (discovery.k8s.io/v1) listing the selected pods, per
// address type and set of resolved ports, at most --max-endpoints-per-slice endpoints each,
// rewriting as few slices as it can, with topology hints for trafficDistribution and the
// service.kubernetes.io/topology-mode annotation.
package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/triggertime"
)

const (
	// ControllerName is upstream's name for the controller and its client.
	ControllerName = "endpointslice-controller"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the slices it keeps.
	ManagedBy = "endpointslice-controller.k8s.io"

	// DefaultMaxEndpointsPerSlice is --max-endpoints-per-slice's default.
	DefaultMaxEndpointsPerSlice = 100

	// sliceChangeMinDelay batches syncs after slice changes, as upstream.
	sliceChangeMinDelay = time.Second
	// Retry backoff, upstream's: 1s doubling to 1000s, and at most 10 retries a second overall.
	syncBackoff    = time.Second
	maxSyncBackoff = 1000 * time.Second
)

// errStaleCache is returned while the cache has not caught up with the controller's own
// slice writes: syncing then would write them again.
var errStaleCache = errors.New("EndpointSlice informer cache is out of date")

// Reconciler keeps the EndpointSlices of one Service.
type Reconciler struct {
	// Client reads Services, pods, nodes and slices from the cache and writes slices.
	Client   client.Client
	Recorder recorder.EventRecorder
	// MaxEndpointsPerSlice is --max-endpoints-per-slice.
	MaxEndpointsPerSlice int
	// BatchPeriod is --endpointslice-updates-batch-period: pod changes sync their Services
	// that much later, so that several changes make one write.
	BatchPeriod time.Duration

	slices   *sliceTracker
	triggers *triggertime.Tracker
	topology *topologyCache
	// overloaded carries the Services whose topology hints a node change overloaded.
	overloaded chan event.GenericEvent
}

// +kubebuilder:rbac:groups="",resources=services,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=pods;nodes,verbs=get;list;watch
// Slices are owned with blockOwnerDeletion, which needs update on services/finalizers.
// +kubebuilder:rbac:groups="",resources=services/finalizers,verbs=update
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=get;list;watch;create;update;delete
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch;update

// Reconcile brings the Service's slices in line with its pods.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, req.NamespacedName, svc); err != nil {
		if apierrors.IsNotFound(err) {
			// Its slices go with it (garbage collector); forget what was tracked.
			r.triggers.Forget(req.NamespacedName)
			r.slices.forget(req.NamespacedName)
			r.topology.removeService(req.String())
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	// ExternalName Services get no endpoints; selector-less ones get slices from elsewhere.
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return reconcile.Result{}, nil
	}

	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(svc.Namespace),
		client.MatchingLabelsSelector{Selector: labels.Set(svc.Spec.Selector).AsSelectorPreValidated()}); err != nil {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "FailedToListPods", "Sync",
			"Error listing Pods for Service %s/%s: %v", svc.Namespace, svc.Name, err)
		return reconcile.Result{}, err
	}
	existing, err := r.slicesOf(ctx, svc)
	if err != nil {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "FailedToListEndpointSlices", "Sync",
			"Error listing Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
		return reconcile.Result{}, err
	}
	if r.slices.stale(req.NamespacedName, existing) {
		return reconcile.Result{}, errStaleCache
	}
	podPtrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		podPtrs[i] = &pods.Items[i]
	}
	// Computed on every sync, written or not, so that the next sync compares with this one.
	triggerTime := r.triggers.Observe(svc, podPtrs)

	if err := r.sync(ctx, svc, podPtrs, existing, triggerTime); err != nil {
		r.Recorder.Eventf(svc, nil, corev1.EventTypeWarning, "FailedToUpdateEndpointSlices", "Sync",
			"Error updating Endpoint Slices for Service %s/%s: %v", svc.Namespace, svc.Name, err)
		return reconcile.Result{}, err
	}
	return reconcile.Result{}, nil
}

// slicesOf lists the Service's slices this controller manages, those being deleted aside.
func (r *Reconciler) slicesOf(ctx context.Context, svc *corev1.Service) ([]*discoveryv1.EndpointSlice, error) {
	list := &discoveryv1.EndpointSliceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(svc.Namespace), client.MatchingLabels{
		discoveryv1.LabelServiceName: svc.Name,
		discoveryv1.LabelManagedBy:   ManagedBy,
	}); err != nil {
		return nil, err
	}
	var out []*discoveryv1.EndpointSlice
	for i := range list.Items {
		if list.Items[i].DeletionTimestamp == nil {
			out = append(out, &list.Items[i])
		}
	}
	return out, nil
}

// sync plans and writes the slices of each of the Service's address types, and deletes the
// slices of address types it no longer has.
func (r *Reconciler) sync(ctx context.Context, svc *corev1.Service, pods []*corev1.Pod,
	existing []*discoveryv1.EndpointSlice, triggerTime time.Time) error {
	key := types.NamespacedName{Namespace: svc.Namespace, Name: svc.Name}.String()
	families := addressTypes(svc)
	byType := map[discoveryv1.AddressType][]*discoveryv1.EndpointSlice{}
	var dropped []*discoveryv1.EndpointSlice
	for _, s := range existing {
		if !slices.Contains(families, s.AddressType) {
			r.topology.removeHints(key, s.AddressType)
			dropped = append(dropped, s)
			continue
		}
		byType[s.AddressType] = append(byType[s.AddressType], s)
	}

	if topologyModeAuto(svc.Annotations) && !r.topology.hasNodes() {
		// The node watch has not reported yet (start-up): learn the zones now.
		if err := r.refreshTopology(ctx); err != nil {
			return err
		}
	}

	var errs []error
	for _, t := range families {
		ch, planErrs := planAddressType(svc, pods, byType[t], t, r.MaxEndpointsPerSlice, r.nodeLookup(ctx))
		errs = append(errs, planErrs...)
		ch, events := r.hints(svc, key, t, ch)
		if err := r.write(ctx, svc, pairCreatesWithDeletes(svc, ch), triggerTime); err != nil {
			errs = append(errs, err)
		}
		for _, e := range events {
			r.Recorder.Eventf(svc, nil, e.eventType, e.reason, "Sync", "%s", e.message)
		}
	}
	for _, s := range dropped {
		if err := r.Client.Delete(ctx, s); client.IgnoreNotFound(err) != nil {
			errs = append(errs, fmt.Errorf("error deleting %s EndpointSlice for Service %s/%s: %w", s.Name, svc.Namespace, svc.Name, err))
			continue
		}
		r.slices.deleting(s)
	}
	return aggregate(errs)
}

// aggregate reports several errors as upstream's utilerrors.Aggregate does: one as itself,
// more as "[first, second]".
func aggregate(errs []error) error {
	switch len(errs) {
	case 0:
		return nil
	case 1:
		return errs[0]
	}
	return aggregateError(errs)
}

type aggregateError []error

func (a aggregateError) Error() string {
	msgs := make([]string, len(a))
	for i, err := range a {
		msgs[i] = err.Error()
	}
	return "[" + strings.Join(msgs, ", ") + "]"
}

func (a aggregateError) Unwrap() []error { return a }

// hints sets the endpoints' hints: topology-aware hints when the annotation asks, else
// those of trafficDistribution, else none.
func (r *Reconciler) hints(svc *corev1.Service, key string, t discoveryv1.AddressType, ch changes) (changes, []hintEvent) {
	if topologyModeAuto(svc.Annotations) {
		return r.topology.addHints(key, t, ch)
	}
	var events []hintEvent
	if r.topology.hasHints(key) {
		events = append(events, disabled(msgHintsDisabled, t))
	}
	r.topology.removeHints(key, t)
	if trafficDistributionHints(svc) {
		return trafficDistributionUpdate(svc.Spec.TrafficDistribution, ch), events
	}
	return trafficDistributionUpdate(nil, ch), events
}

// write creates, updates and deletes slices, recording each write in the tracker. Nothing
// is created for a Service being deleted: the garbage collector is removing its slices.
func (r *Reconciler) write(ctx context.Context, svc *corev1.Service, ch changes, triggerTime time.Time) error {
	if svc.DeletionTimestamp == nil {
		for _, s := range ch.create {
			setTriggerTime(s, triggerTime)
			if err := r.Client.Create(ctx, s); err != nil {
				if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
					return nil
				}
				return fmt.Errorf("failed to create EndpointSlice for Service %s/%s: %w", svc.Namespace, svc.Name, err)
			}
			r.slices.wrote(s)
		}
	}
	for _, s := range ch.update {
		setTriggerTime(s, triggerTime)
		if err := r.Client.Update(ctx, s); err != nil {
			return fmt.Errorf("failed to update %s EndpointSlice for Service %s/%s: %w", s.Name, svc.Namespace, svc.Name, err)
		}
		r.slices.wrote(s)
	}
	for _, s := range ch.delete {
		if err := r.Client.Delete(ctx, s); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return fmt.Errorf("failed to delete %s EndpointSlice for Service %s/%s: %w", s.Name, svc.Namespace, svc.Name, err)
		}
		r.slices.deleting(s)
	}
	return nil
}

// setTriggerTime sets endpoints.kubernetes.io/last-change-trigger-time, or clears it when
// the sync had no trigger.
func setTriggerTime(s *discoveryv1.EndpointSlice, at time.Time) {
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if at.IsZero() {
		delete(s.Annotations, corev1.EndpointsLastChangeTriggerTime)
		return
	}
	s.Annotations[corev1.EndpointsLastChangeTriggerTime] = at.UTC().Format(time.RFC3339Nano)
}

// nodeLookup reads nodes from the cache.
func (r *Reconciler) nodeLookup(ctx context.Context) nodeLookup {
	return func(name string) (*corev1.Node, bool, error) {
		n := &corev1.Node{}
		if err := r.Client.Get(ctx, types.NamespacedName{Name: name}, n); err != nil {
			if apierrors.IsNotFound(err) {
				return nil, false, nil
			}
			return nil, false, err
		}
		return n, true, nil
	}
}

// refreshTopology recomputes the zones' CPU shares from the cached nodes.
func (r *Reconciler) refreshTopology(ctx context.Context) error {
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list); err != nil {
		return err
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	r.topology.setNodes(nodes)
	return nil
}

// SetupWithManager watches Services (every change syncs at once), pods (mapped to the
// Services selecting them, after the batch period), the controller's slices (by their
// service-name label, when someone else changed or deleted them) and, through a second
// small controller, nodes (for topology-aware hints).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client and Recorder are required", ControllerName)
	}
	if r.MaxEndpointsPerSlice <= 0 {
		r.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	r.slices, r.triggers, r.topology = newSliceTracker(), &triggertime.Tracker{}, newTopologyCache()
	r.overloaded = make(chan event.GenericEvent, 1024)

	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Service{}).
		Watches(&corev1.Pod{}, r.podEvents()).
		Watches(&discoveryv1.EndpointSlice{}, r.sliceEvents()).
		WatchesRawSource(source.Channel(r.overloaded, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{
			MaxConcurrentReconciles: workers,
			RateLimiter: workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](syncBackoff, maxSyncBackoff),
				&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
		}).
		Complete(r)
	if err != nil {
		return err
	}
	return (&topologyReconciler{parent: r}).setupWithManager(mgr)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

// podEvents maps a pod to the Services of its namespace that select it, when it changed in
// a way that matters to endpoints (upstream's pod projection): on a label change only the
// Services it joined or left, unless its endpoint changed too.
func (r *Reconciler) podEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			r.enqueueServices(ctx, q, e.Object.GetNamespace(), r.servicesSelecting(ctx, e.Object.GetNamespace(), e.Object.GetLabels()))
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			oldPod, newPod := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
			if oldPod.ResourceVersion == newPod.ResourceVersion {
				return
			}
			endpointChanged, membershipChanged := podChanged(oldPod, newPod)
			if !endpointChanged && !membershipChanged {
				return
			}
			now := r.servicesSelecting(ctx, newPod.Namespace, newPod.Labels)
			if membershipChanged {
				before := r.servicesSelecting(ctx, newPod.Namespace, oldPod.Labels)
				now = servicesToSync(before, now, endpointChanged)
			}
			r.enqueueServices(ctx, q, newPod.Namespace, now)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			r.enqueueServices(ctx, q, e.Object.GetNamespace(), r.servicesSelecting(ctx, e.Object.GetNamespace(), e.Object.GetLabels()))
		},
	}
}

func (r *Reconciler) enqueueServices(_ context.Context, q queue, namespace string, names map[string]bool) {
	for name := range names {
		q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: namespace, Name: name}}, r.BatchPeriod)
	}
}

// servicesSelecting are the names of the Services of the namespace whose selector matches
// the labels.
func (r *Reconciler) servicesSelecting(ctx context.Context, namespace string, podLabels map[string]string) map[string]bool {
	list := &corev1.ServiceList{}
	if err := r.Client.List(ctx, list, client.InNamespace(namespace)); err != nil {
		log.FromContext(ctx).Error(err, "Listing Services for a pod", "namespace", namespace)
		return nil
	}
	out := map[string]bool{}
	for i := range list.Items {
		sel := list.Items[i].Spec.Selector
		if sel != nil && labels.ValidatedSetSelector(sel).Matches(labels.Set(podLabels)) {
			out[list.Items[i].Name] = true
		}
	}
	return out
}

// sliceEvents syncs a Service when one of its slices changed or went and the controller
// did not do it (its own writes are tracked), a little later so that changes to several
// slices make one sync; a slice moved between Services syncs both.
func (r *Reconciler) sliceEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	delay := max(sliceChangeMinDelay, r.BatchPeriod)
	enqueue := func(q queue, s *discoveryv1.EndpointSlice) {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			return
		}
		q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: name}}, delay)
	}
	managed := func(s *discoveryv1.EndpointSlice) bool { return s.Labels[discoveryv1.LabelManagedBy] == ManagedBy }
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if s := e.Object.(*discoveryv1.EndpointSlice); managed(s) && r.slices.shouldSync(s) {
				enqueue(q, s)
			}
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			oldSlice, s := e.ObjectOld.(*discoveryv1.EndpointSlice), e.ObjectNew.(*discoveryv1.EndpointSlice)
			if oldSlice.Labels[discoveryv1.LabelServiceName] != s.Labels[discoveryv1.LabelServiceName] {
				enqueue(q, s)
				enqueue(q, oldSlice)
				return
			}
			if managed(oldSlice) != managed(s) || (managed(s) && r.slices.shouldSync(s)) {
				enqueue(q, s)
			}
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			s, ok := e.Object.(*discoveryv1.EndpointSlice)
			if ok && managed(s) && r.slices.has(s) && !r.slices.deleted(s) {
				enqueue(q, s)
			}
		},
	}
}
