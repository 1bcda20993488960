// Package endpoints is upstream's endpoints-controller: for every Service with a selector it
// keeps a v1 Endpoints object of the same name listing the selected pods' addresses, ready
// and not ready, per port; it deletes the Endpoints when the Service goes. Endpoints of
// Services without a selector belong to their users and are left alone.
package endpoints

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/util/workqueue"
	endpointsliceutil "k8s.io/endpointslice/util"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/pod"
	"github.com/kcm/kcm/internal/staleness"
)

// ControllerName is the controller's name in kcm's registry.
const ControllerName = "endpoints-controller"

// EventSource is upstream's component name on the controller's Events.
const EventSource = "endpoint-controller"

// leaderAnnotation marks the Endpoints old leader elections used as locks; they have no
// Service and must not be deleted as leftovers.
const leaderAnnotation = "control-plane.alpha.kubernetes.io/leader"

// Reconciler keeps the Endpoints of one Service.
type Reconciler struct {
	// Client reads Services, pods and Endpoints from the cache and writes Endpoints.
	Client   client.Client
	Recorder recorder.EventRecorder
	// BatchPeriod delays the syncs pod changes cause, to fold bursts into one write
	// (--endpoint-updates-batch-period).
	BatchPeriod time.Duration

	triggers *endpointsliceutil.TriggerTimeTracker
	// written is each Endpoints' last write, synced from while the cache has not shown it:
	// a sync does not write again from an outdated object, nor create one twice.
	written staleness.Writes[*corev1.Endpoints]
}

// What endpoints-controller's own client does (reads of the shared cache and Events run as
// kcm's identity): Endpoints created, updated and deleted; the API server also checks create
// on endpoints/restricted when an Endpoints names addresses it restricts.
//
// +kubebuilder:rbac:groups="",resources=endpoints,verbs=create;update;delete
// +kubebuilder:rbac:groups="",resources=endpoints/restricted,verbs=create

// Reconcile brings the Service's Endpoints in line with its pods.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	svc := &corev1.Service{}
	if err := r.Client.Get(ctx, req.NamespacedName, svc); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		// The Service is gone: so goes its Endpoints (whoever wrote it), as upstream.
		ep := &corev1.Endpoints{}
		ep.Namespace, ep.Name = req.Namespace, req.Name
		if err := r.Client.Delete(ctx, ep); client.IgnoreNotFound(err) != nil {
			return reconcile.Result{}, fmt.Errorf("deleting Endpoints: %w", err)
		}
		r.triggers.DeleteService(req.Namespace, req.Name)
		r.written.Forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	// ExternalName Services get no endpoints; selector-less ones get their users'.
	if svc.Spec.Type == corev1.ServiceTypeExternalName || svc.Spec.Selector == nil {
		return reconcile.Result{}, nil
	}

	podList := &corev1.PodList{}
	if err := r.Client.List(ctx, podList, client.InNamespace(svc.Namespace),
		client.MatchingLabelsSelector{Selector: labels.SelectorFromValidatedSet(svc.Spec.Selector)}); err != nil {
		return reconcile.Result{}, err
	}
	pods := make([]*corev1.Pod, len(podList.Items))
	for i := range podList.Items {
		pods[i] = &podList.Items[i]
	}
	// Observed even when nothing is written, so the next write reports only newer changes.
	triggerTime := r.triggers.ComputeEndpointLastChangeTriggerTime(svc.Namespace, svc, pods)
	subsets := DesiredSubsets(svc, pods)

	var current *corev1.Endpoints
	cached := &corev1.Endpoints{}
	switch err := r.Client.Get(ctx, req.NamespacedName, cached); {
	case err == nil:
		current = r.written.Current(cached)
	case apierrors.IsNotFound(err):
		if created, ok := r.written.Created(req.NamespacedName); ok {
			current = created
		}
	default:
		return reconcile.Result{}, err
	}
	desired := Desired(current, svc, subsets, triggerTime)
	if current != nil && UpToDate(current, desired) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.write(ctx, svc, current, desired)
}

// write creates or updates the Endpoints, with upstream's Events on failure.
func (r *Reconciler) write(ctx context.Context, svc *corev1.Service, current, desired *corev1.Endpoints) error {
	if current == nil {
		err := r.Client.Create(ctx, desired)
		if err == nil {
			r.written.Wrote("", desired)
			return nil
		}
		// In a terminating namespace creations keep failing; nothing to retry.
		if apierrors.IsForbidden(err) && apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
			return nil
		}
		r.Recorder.Eventf(desired, nil, corev1.EventTypeWarning, "FailedToCreateEndpoint", "Create",
			"Failed to create endpoint for service %v/%v: %v", svc.Namespace, svc.Name, err)
		return fmt.Errorf("creating Endpoints: %w", err)
	}
	if err := r.Client.Update(ctx, desired); err != nil {
		// Someone else wrote since, or it is gone: the cache is to be read again.
		r.written.Forget(client.ObjectKeyFromObject(desired))
		if !apierrors.IsConflict(err) {
			r.Recorder.Eventf(desired, nil, corev1.EventTypeWarning, "FailedToUpdateEndpoint", "Update",
				"Failed to update endpoint %v/%v: %v", svc.Namespace, svc.Name, err)
		}
		return fmt.Errorf("updating Endpoints: %w", err)
	}
	// An update the API server found to change nothing keeps the resourceVersion.
	if desired.ResourceVersion != current.ResourceVersion {
		r.written.Wrote(current.ResourceVersion, desired)
	}
	log.FromContext(ctx).V(4).Info("Updated Endpoints", "subsets", len(desired.Subsets))
	return nil
}

// SetupWithManager watches Services, pods (mapped to the Services selecting them, before
// and after a label change) and deletions of Endpoints (recreated while the Service
// stands); at start it also visits every Endpoints once, to delete those whose Service
// went while no controller ran.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil {
		return errors.New(ControllerName + ": Client and Recorder are required")
	}
	r.triggers = endpointsliceutil.NewTriggerTimeTracker()
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Service{}).
		Watches(&corev1.Pod{}, handler.Funcs{
			CreateFunc: func(ctx context.Context, e event.CreateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.enqueueServices(ctx, q, nil, e.Object.(*corev1.Pod))
			},
			UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				r.enqueueServices(ctx, q, e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod))
			},
			DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				if p, ok := e.Object.(*corev1.Pod); ok {
					r.enqueueServices(ctx, q, p, nil)
				}
			},
		}).
		Watches(&corev1.Endpoints{}, handler.Funcs{
			DeleteFunc: func(_ context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
				key := client.ObjectKeyFromObject(e.Object)
				r.written.Forget(key)
				q.Add(reconcile.Request{NamespacedName: key})
			},
		}).
		WatchesRawSource(source.Func(func(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			go r.visitLeftovers(ctx, mgr.GetCache(), q)
			return nil
		})).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

// enqueueServices adds, after the batch period, the Services a pod event may change
// (upstream's pod projection, pod.ServicesToSync).
func (r *Reconciler) enqueueServices(ctx context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request], old, cur *corev1.Pod) {
	services, err := pod.ServicesToSync(r.Client, old, cur)
	if err != nil {
		log.FromContext(ctx).Error(err, "Listing Services for a pod")
		return
	}
	for _, svc := range services {
		req := reconcile.Request{NamespacedName: svc}
		if r.BatchPeriod > 0 {
			q.AddAfter(req, r.BatchPeriod)
		} else {
			q.Add(req)
		}
	}
}

// visitLeftovers enqueues every Endpoints once the cache has synced: a sync of one whose
// Service is gone deletes it.
func (r *Reconciler) visitLeftovers(ctx context.Context, c cache.Cache, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	if !c.WaitForCacheSync(ctx) {
		return
	}
	list := &corev1.EndpointsList{}
	if err := c.List(ctx, list); err != nil {
		log.FromContext(ctx).Error(err, "Listing Endpoints; leftover Endpoints will not be cleaned up")
		return
	}
	for i := range list.Items {
		if _, ok := list.Items[i].Annotations[leaderAnnotation]; ok {
			continue
		}
		q.Add(reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&list.Items[i])})
	}
}
