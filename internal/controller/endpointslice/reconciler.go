// Package endpointslice is upstream's endpointslice-controller: for every Service with a
// selector it keeps EndpointSlices (discovery.k8s.io/v1) listing the selected pods, per
// address type and set of resolved ports, at most --max-endpoints-per-slice endpoints each,
// with topology hints for trafficDistribution and the service.kubernetes.io/topology-mode
// annotation.
//
// What to write is upstream's own code: k8s.io/endpointslice's Reconciler plans and writes
// the slices (with its TopologyCache and trafficdist hints), its EndpointSliceTracker tells
// the controller's own writes from others' and a cache that has not caught up, and its
// TriggerTimeTracker computes the last-change-trigger-time annotation. This package gathers
// the inputs and decides when to sync.
package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/util/workqueue"
	endpointslicerec "k8s.io/endpointslice"
	endpointslicemetrics "k8s.io/endpointslice/metrics"
	"k8s.io/endpointslice/topologycache"
	endpointsliceutil "k8s.io/endpointslice/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/pod"
)

const (
	// ControllerName is upstream's name for the controller and its client.
	ControllerName = "endpointslice-controller"
	// ManagedBy is the endpointslice.kubernetes.io/managed-by value of the slices it keeps
	// (upstream's controller name as the library knows it).
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
	// Client reads Services, pods, nodes and slices from the cache.
	Client client.Client
	// Clientset writes the slices: the library's Reconciler writes through client-go. It
	// shares Client's connection (and token bucket).
	Clientset kubernetes.Interface
	Recorder  recorder.EventRecorder
	// MaxEndpointsPerSlice is --max-endpoints-per-slice.
	MaxEndpointsPerSlice int
	// BatchPeriod is --endpointslice-updates-batch-period: pod changes sync their Services
	// that much later, so that several changes make one write.
	BatchPeriod time.Duration

	slices     *endpointsliceutil.EndpointSliceTracker
	triggers   *endpointsliceutil.TriggerTimeTracker
	topology   *topologycache.TopologyCache
	reconciler *endpointslicerec.Reconciler
	// nodesKnown is set once the topology cache has been given the nodes.
	nodesKnown atomic.Bool
	// overloaded carries the Services whose topology hints a node change overloaded.
	overloaded chan event.GenericEvent
}

// What endpointslice-controller's own clientset does (reads of the shared cache and Events
// run as kcm's identity): the library's slices created, updated and deleted. They are owned
// by their Service with blockOwnerDeletion, which needs update on services/finalizers.
//
// +kubebuilder:rbac:groups="",resources=services/finalizers,verbs=update
// +kubebuilder:rbac:groups=discovery.k8s.io,resources=endpointslices,verbs=create;update;delete

// Reconcile brings the Service's slices in line with its pods, and counts the sync's result
// in endpoint_slice_controller_syncs as upstream's handleErr does.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.sync(ctx, req)
	trackSync(err)
	return res, err
}

// trackSync counts one sync by result: "stale" when the cache had not caught up with the
// controller's own writes, "error" for any other failure, "success" otherwise.
func trackSync(err error) {
	result := "success"
	switch {
	case errors.Is(err, errStaleCache):
		result = "stale"
	case err != nil:
		result = "error"
	}
	endpointslicemetrics.EndpointSliceSyncs.WithLabelValues(result).Inc()
}

func (r *Reconciler) sync(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, req.NamespacedName, svc); err != nil {
		if apierrors.IsNotFound(err) {
			// Its slices go with it (garbage collector); forget what was tracked.
			r.triggers.DeleteService(req.Namespace, req.Name)
			r.reconciler.DeleteService(req.Namespace, req.Name)
			r.slices.DeleteService(req.Namespace, req.Name)
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
	if r.slices.StaleSlices(svc, existing) {
		return reconcile.Result{}, errStaleCache
	}
	podPtrs := make([]*corev1.Pod, len(pods.Items))
	for i := range pods.Items {
		podPtrs[i] = &pods.Items[i]
	}
	// Computed on every sync, written or not, so that the next sync compares with this one.
	triggerTime := r.triggers.ComputeEndpointLastChangeTriggerTime(svc.Namespace, svc, podPtrs)

	if !r.nodesKnown.Load() {
		// The node watch has not reported yet (start-up): learn the zones now rather than
		// disable topology-aware hints for want of them.
		if err := r.refreshTopology(ctx); err != nil {
			return reconcile.Result{}, err
		}
	}
	if err := r.reconciler.Reconcile(log.FromContext(ctx), svc, podPtrs, existing, triggerTime); err != nil {
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

// refreshTopology gives the topology cache the cached nodes (their zones' CPU shares).
func (r *Reconciler) refreshTopology(ctx context.Context) error {
	list := &corev1.NodeList{}
	if err := r.Client.List(ctx, list); err != nil {
		return err
	}
	nodes := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		nodes[i] = &list.Items[i]
	}
	r.topology.SetNodes(log.FromContext(ctx), nodes)
	r.nodesKnown.Store(true)
	return nil
}

// SetupWithManager watches Services (every change syncs at once), pods (mapped to the
// Services selecting them, after the batch period), the controller's slices (by their
// service-name label, when someone else changed or deleted them) and, through a second
// small controller, nodes (for topology-aware hints).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Clientset == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client, Clientset and Recorder are required", ControllerName)
	}
	if r.MaxEndpointsPerSlice <= 0 {
		r.MaxEndpointsPerSlice = DefaultMaxEndpointsPerSlice
	}
	// The library's families (endpoint_slice_controller_*), recorded by its Reconciler and
	// by Reconcile, registered once as upstream's constructor does.
	endpointslicemetrics.RegisterMetrics()
	r.slices = endpointsliceutil.NewEndpointSliceTracker()
	r.triggers = endpointsliceutil.NewTriggerTimeTracker()
	r.topology = topologycache.NewTopologyCache()
	// PreferSameTrafficDistribution is GA and locked on in 1.37.
	r.reconciler = endpointslicerec.NewReconciler(r.Clientset, nodeLister{r.Client}, int32(r.MaxEndpointsPerSlice),
		r.slices, r.topology, eventRecorder{r.Recorder}, ManagedBy,
		endpointslicerec.WithPreferSameTrafficDistributionEnabled(true))
	r.overloaded = make(chan event.GenericEvent, 1024)

	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Service{}).
		Watches(&corev1.Pod{}, r.podEvents()).
		Watches(&discoveryv1.EndpointSlice{}, r.sliceEvents()).
		WatchesRawSource(source.Channel(r.overloaded, &handler.EnqueueRequestForObject{})).
		WithOptions(controller.Options{
			NewQueue:                newQueue,
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

// podEvents syncs, after the batch period, the Services a pod event may change (upstream's
// pod projection, pod.ServicesToSync).
func (r *Reconciler) podEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	enqueue := func(ctx context.Context, q queue, old, cur *corev1.Pod) {
		services, err := pod.ServicesToSync(r.Client, old, cur)
		if err != nil {
			log.FromContext(ctx).Error(err, "Listing Services for a pod")
			return
		}
		for _, svc := range services {
			q.AddAfter(reconcile.Request{NamespacedName: svc}, r.BatchPeriod)
		}
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			enqueue(ctx, q, nil, e.Object.(*corev1.Pod))
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q queue) {
			enqueue(ctx, q, e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod))
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q queue) {
			if p, ok := e.Object.(*corev1.Pod); ok {
				enqueue(ctx, q, p, nil)
			}
		},
	}
}

// sliceEvents syncs a Service when one of its slices changed or went and the controller
// did not do it (the tracker knows its own writes), a little later so that changes to
// several slices make one sync; a slice moved between Services syncs both.
func (r *Reconciler) sliceEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	delay := max(sliceChangeMinDelay, r.BatchPeriod)
	enqueue := func(q queue, s *discoveryv1.EndpointSlice) {
		name := s.Labels[discoveryv1.LabelServiceName]
		if name == "" {
			return
		}
		q.AddAfter(reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: name}}, delay)
	}
	managed := r.reconciler.ManagedByController
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[client.Object], q queue) {
			if s := e.Object.(*discoveryv1.EndpointSlice); managed(s) && r.slices.ShouldSync(s) {
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
			if r.reconciler.ManagedByChanged(oldSlice, s) || (managed(s) && r.slices.ShouldSync(s)) {
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

// nodeLister reads nodes from controller-runtime's cache for the library, which takes
// client-go's lister.
type nodeLister struct{ reader client.Reader }

var _ corelisters.NodeLister = nodeLister{}

func (l nodeLister) List(selector labels.Selector) ([]*corev1.Node, error) {
	list := &corev1.NodeList{}
	if err := l.reader.List(context.Background(), list, client.MatchingLabelsSelector{Selector: selector}); err != nil {
		return nil, err
	}
	out := make([]*corev1.Node, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

func (l nodeLister) Get(name string) (*corev1.Node, error) {
	n := &corev1.Node{}
	if err := l.reader.Get(context.Background(), types.NamespacedName{Name: name}, n); err != nil {
		return nil, err
	}
	return n, nil
}

// eventRecorder hands the library's Events (topology-aware hints) to kcm's events.k8s.io
// recorder, as Sync actions like the controller's own.
type eventRecorder struct{ recorder.EventRecorder }

func (e eventRecorder) Event(obj runtime.Object, eventType, reason, message string) {
	e.Eventf(obj, eventType, reason, "%s", message)
}

func (e eventRecorder) Eventf(obj runtime.Object, eventType, reason, format string, args ...any) {
	e.EventRecorder.Eventf(obj, nil, eventType, reason, "Sync", format, args...)
}

func (e eventRecorder) AnnotatedEventf(obj runtime.Object, _ map[string]string, eventType, reason, format string, args ...any) {
	e.Eventf(obj, eventType, reason, format, args...)
}
