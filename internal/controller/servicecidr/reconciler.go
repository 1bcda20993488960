// Package servicecidr is upstream's service-cidr-controller: every ServiceCIDR gets the
// networking.k8s.io/service-cidr-finalizer finalizer and the Ready condition (which the API
// server's allocator requires before it hands out addresses of the range). A ServiceCIDR
// being deleted keeps its finalizer, with Ready False/Terminating, while an IPAddress the
// allocator made would be left inside no other ServiceCIDR (Blocked); once none would, the
// finalizer goes after a grace period that lets every API server's allocator stop using the
// range. The default ServiceCIDR "kubernetes" is created by the API server; this controller
// treats it as any other.
package servicecidr

import (
	"context"
	"encoding/json"
	"fmt"
	"net/netip"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	networkingv1 "k8s.io/api/networking/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	metav1apply "k8s.io/client-go/applyconfigurations/meta/v1"
	networkingv1apply "k8s.io/client-go/applyconfigurations/networking/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/patch"
)

const (
	// ControllerName is the controller's name in --controllers, its event source and its
	// field manager.
	ControllerName = "service-cidr-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "service-cidrs-controller"
	// Finalizer keeps a ServiceCIDR while addresses depend on it.
	Finalizer = "networking.k8s.io/service-cidr-finalizer"
	// AllocatorName is the managed-by label of the IPAddresses the API server's allocator
	// makes: only those can block a deletion.
	AllocatorName = "ipallocator.k8s.io"
	// DeletionGracePeriod is upstream's wait, from the deletion timestamp, before the
	// finalizer goes: the deletion must reach every API server's allocator first, or one
	// could still allocate from the range.
	DeletionGracePeriod = 10 * time.Second
	// ReasonStatusError is the Warning Event when the Ready condition cannot be written.
	ReasonStatusError = "KubernetesServiceCIDRError"
)

// Reconciler keeps one ServiceCIDR's finalizer and Ready condition.
type Reconciler struct {
	// Client reads ServiceCIDRs and IPAddresses from the cache and writes ServiceCIDRs.
	Client   client.Client
	Recorder recorder.EventRecorder
	Clock    clock.PassiveClock
	// GracePeriod is DeletionGracePeriod; tests leave it.
	GracePeriod time.Duration
}

// ServiceCIDRs and IPAddresses are read from the shared cache (kcm's identity); the
// controller's own identity patches ServiceCIDRs' finalizers and applies their status.
// +kubebuilder:rbac:groups=networking.k8s.io,resources=servicecidrs,verbs=patch
// +kubebuilder:rbac:groups=networking.k8s.io,resources=servicecidrs/status,verbs=patch

// Reconcile brings one ServiceCIDR's finalizer and Ready condition up to date.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	cidr := &networkingv1.ServiceCIDR{}
	if err := r.Client.Get(ctx, req.NamespacedName, cidr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if cidr.DeletionTimestamp != nil {
		return r.syncDeleted(ctx, cidr)
	}

	if !slices.Contains(cidr.Finalizers, Finalizer) {
		if err := r.patchFinalizers(ctx, cidr, "finalizers"); err != nil {
			return reconcile.Result{}, fmt.Errorf("adding the finalizer: %w", err)
		}
		log.FromContext(ctx).V(4).Info("Added protection finalizer to ServiceCIDR")
	}
	if err := r.setReady(ctx, cidr, ReadyCondition(false)); err != nil {
		r.Recorder.Eventf(cidr, nil, corev1.EventTypeWarning, ReasonStatusError, "UpdateStatus",
			"The ServiceCIDR Status can not be set to Ready=True")
		return reconcile.Result{}, fmt.Errorf("setting the Ready condition: %w", err)
	}
	return reconcile.Result{}, nil
}

// syncDeleted releases a deleted ServiceCIDR once no address depends on it alone and the
// grace period has passed; while blocked, it says so in its Ready condition and waits for
// an IPAddress or ServiceCIDR change to look again, as upstream.
func (r *Reconciler) syncDeleted(ctx context.Context, cidr *networkingv1.ServiceCIDR) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	all := &networkingv1.ServiceCIDRList{}
	if err := r.Client.List(ctx, all); err != nil {
		return reconcile.Result{}, err
	}
	ips := &networkingv1.IPAddressList{}
	if err := r.Client.List(ctx, ips, client.MatchingLabels{networkingv1.LabelManagedBy: AllocatorName}); err != nil {
		return reconcile.Result{}, err
	}
	if Blocked(cidr, all.Items, ips.Items) {
		logger.Info("Deleting ServiceCIDR blocked by IP addresses")
		return reconcile.Result{}, r.setReady(ctx, cidr, ReadyCondition(true))
	}
	if wait := r.GracePeriod - r.Clock.Since(cidr.DeletionTimestamp.Time); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if !slices.Contains(cidr.Finalizers, Finalizer) {
		return reconcile.Result{}, nil
	}
	if err := r.patchFinalizers(ctx, cidr, "$deleteFromPrimitiveList/finalizers"); err != nil {
		return reconcile.Result{}, fmt.Errorf("removing the finalizer: %w", err)
	}
	logger.V(4).Info("Removed protection finalizer from ServiceCIDR")
	return reconcile.Result{}, nil
}

// patchFinalizers adds (key "finalizers") or removes (key "$deleteFromPrimitiveList/
// finalizers") this controller's finalizer by a strategic merge patch, as upstream: other
// finalizers are left as they are, whatever the cache's version. A ServiceCIDR gone
// meanwhile needs nothing.
func (r *Reconciler) patchFinalizers(ctx context.Context, cidr *networkingv1.ServiceCIDR, key string) error {
	body, err := json.Marshal(map[string]any{"metadata": map[string]any{key: []string{Finalizer}}})
	if err != nil {
		return err
	}
	return client.IgnoreNotFound(r.Client.Patch(ctx, cidr, client.RawPatch(types.StrategicMergePatchType, body)))
}

// setReady applies the Ready condition unless the ServiceCIDR already shows it. As upstream,
// it is applied (server-side, forced, as service-cidr-controller) so that the condition the
// API server itself puts on its default ServiceCIDR is taken over, not duplicated.
func (r *Reconciler) setReady(ctx context.Context, cidr *networkingv1.ServiceCIDR, want metav1.Condition) error {
	if ConditionCurrent(cidr.Status.Conditions, want) {
		return nil
	}
	log.FromContext(ctx).V(2).Info("Updating ServiceCIDR condition", "conditionType", want.Type,
		"newStatus", want.Status, "newReason", want.Reason)
	apply := networkingv1apply.ServiceCIDR(cidr.Name).WithStatus(networkingv1apply.ServiceCIDRStatus().WithConditions(
		metav1apply.Condition().WithType(want.Type).WithStatus(want.Status).WithReason(want.Reason).
			WithMessage(want.Message).WithLastTransitionTime(metav1.NewTime(r.Clock.Now()))))
	body, err := patch.ServerSideApply(apply)
	if err != nil {
		return err
	}
	return r.Client.Status().Patch(ctx, cidr.DeepCopy(), body, client.FieldOwner(ControllerName), client.ForceOwnership)
}

// SetupWithManager registers the controller: every ServiceCIDR change; a ServiceCIDR added
// wakes the ServiceCIDRs it overlaps (it may now cover one being deleted); an allocator's
// IPAddress created or deleted wakes the ServiceCIDRs containing it, as upstream.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil || r.Clock == nil {
		return fmt.Errorf("%s: Client, Recorder and Clock are required", ControllerName)
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&networkingv1.ServiceCIDR{}).
		Watches(&networkingv1.ServiceCIDR{}, handler.Funcs{CreateFunc: r.wakeOverlapping}).
		Watches(&networkingv1.IPAddress{}, handler.Funcs{CreateFunc: r.wakeContaining, DeleteFunc: r.wakeContainingDeleted}).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]

func (r *Reconciler) wakeOverlapping(ctx context.Context, e event.CreateEvent, q queue) {
	cidr, ok := e.Object.(*networkingv1.ServiceCIDR)
	if !ok {
		return
	}
	all := &networkingv1.ServiceCIDRList{}
	if err := r.Client.List(ctx, all); err != nil {
		log.FromContext(ctx).Error(err, "Listing ServiceCIDRs overlapping a new one")
		return
	}
	enqueue(q, Overlapping(cidr, all.Items))
}

func (r *Reconciler) wakeContaining(ctx context.Context, e event.CreateEvent, q queue) {
	r.containing(ctx, e.Object, q)
}

func (r *Reconciler) wakeContainingDeleted(ctx context.Context, e event.DeleteEvent, q queue) {
	r.containing(ctx, e.Object, q)
}

func (r *Reconciler) containing(ctx context.Context, obj client.Object, q queue) {
	if obj.GetLabels()[networkingv1.LabelManagedBy] != AllocatorName {
		return
	}
	addr, err := netip.ParseAddr(obj.GetName())
	if err != nil {
		return
	}
	all := &networkingv1.ServiceCIDRList{}
	if err := r.Client.List(ctx, all); err != nil {
		log.FromContext(ctx).Error(err, "Listing ServiceCIDRs containing an IPAddress", "IPAddress", obj.GetName())
		return
	}
	enqueue(q, Containing(all.Items, addr))
}

func enqueue(q queue, names []string) {
	for _, name := range names {
		q.Add(reconcile.Request{NamespacedName: client.ObjectKey{Name: name}})
	}
}
