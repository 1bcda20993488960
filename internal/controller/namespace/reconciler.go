// Package namespace is upstream's namespace-controller: when a namespace is deleted it
// deletes every namespaced object in it, of every resource the API server serves (custom
// resources included), waits for them to be gone, and then removes the "kubernetes"
// finalizer, which lets the API server delete the namespace. Progress and problems are
// reported in the namespace's conditions.
package namespace

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
)

const (
	// ControllerName is upstream's controller name.
	ControllerName = "namespace-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "namespace-controller"
	// Workers is the default of --concurrent-namespace-syncs.
	Workers = 10
	// QPSMultiplier and BurstMultiplier raise the controller's client rates above
	// --kube-api-qps and --kube-api-burst as upstream does: namespace deletion makes many
	// discovery, list and delete calls.
	QPSMultiplier   = 20
	BurstMultiplier = 100

	// deletionGracePeriod is how long after its deletion a namespace is first processed.
	deletionGracePeriod = 5 * time.Second
)

// DiscoverFunc lists the API server's preferred namespaced resources; with an
// ErrGroupDiscoveryFailed it returns what it could discover.
type DiscoverFunc func() ([]*metav1.APIResourceList, error)

// Reconciler empties deleted namespaces and finalizes them.
type Reconciler struct {
	// Client reads the namespace and its pods from the API server, not the cache, as upstream
	// does (a namespace is edited by several parties while it terminates), and writes its
	// status and finalize subresources.
	Client client.Client
	// Metadata lists and deletes the objects of any resource.
	Metadata metadata.Interface
	// Discover finds the resources to delete; called on every pass, so new custom resources
	// are found.
	Discover DiscoverFunc
	Clock    clock.PassiveClock
	// SyncPeriod is --namespace-sync-period: how often a terminating namespace is looked at
	// again after a successful pass.
	SyncPeriod time.Duration

	// transient backs off the passes that failed only for the API server's momentary failure
	// (transient.go).
	transient transientBackoff
}

// The controller's own identity reads the namespace and its content live, as upstream, and
// writes the namespace's status and finalize subresources by update; the namespaces to look
// at come from the shared cache (kcm's identity).
// +kubebuilder:rbac:groups="",resources=namespaces,verbs=get
// +kubebuilder:rbac:groups="",resources=namespaces/finalize;namespaces/status,verbs=update
// +kubebuilder:rbac:groups=*,resources=*,verbs=list;delete;deletecollection

// Reconcile deletes the content of a namespace being deleted and then removes the
// kubernetes finalizer.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	res, err := r.reconcile(ctx, req)
	if transient(err) {
		wait := r.transient.next(req.Name)
		log.FromContext(ctx).Info("Namespace deletion failed for the API server's momentary failure; retrying", "after", wait, "err", err)
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	r.transient.forget(req.Name)
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if ns.DeletionTimestamp == nil {
		return reconcile.Result{}, nil
	}
	if wait := graceRemaining(ns.DeletionTimestamp.Time, r.Clock.Now()); wait > 0 {
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if ns.Status.Phase != corev1.NamespaceTerminating {
		ns.Status.Phase = corev1.NamespaceTerminating
		// Optimistic, as upstream's UpdateStatus: others write the namespace while it terminates.
		if err := patch.Status(ctx, r.Client, ns); err != nil {
			return reconcile.Result{}, client.IgnoreNotFound(err)
		}
	}
	// Finalized: no spec finalizer is left, ours included.
	if len(ns.Spec.Finalizers) == 0 {
		return reconcile.Result{}, nil
	}

	estimate, err := r.deleteAllContent(ctx, ns)
	if err != nil {
		return reconcile.Result{}, err
	}
	if estimate > 0 {
		wait := waitForContent(estimate)
		log.FromContext(ctx).V(4).Info("Content remaining in namespace", "waitSeconds", wait.Seconds())
		return reconcile.Result{RequeueAfter: wait}, nil
	}
	if err := r.finalize(ctx, ns); err != nil {
		return reconcile.Result{}, err
	}
	// Other spec finalizers may keep the namespace; look again after the sync period.
	return reconcile.Result{RequeueAfter: r.SyncPeriod}, nil
}

// SetupWithManager watches the namespaces being deleted. The queue retries as upstream's
// does: failures back off from 5ms to at most a minute, within 10 retries a second overall.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Metadata == nil || r.Discover == nil {
		return fmt.Errorf("%s: Client, Metadata and Discover are required", ControllerName)
	}
	if r.SyncPeriod <= 0 {
		return fmt.Errorf("%s: the sync period must be positive", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	deleting := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetDeletionTimestamp() != nil })
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Namespace{}, builder.WithPredicates(deleting)).
		WithOptions(controller.Options{
			NewQueue:                newQueue,
			MaxConcurrentReconciles: workers,
			RateLimiter: workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](5*time.Millisecond, time.Minute),
				&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
		}).
		Complete(r)
}
