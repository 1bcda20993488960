// Package pvbinder is upstream's persistentvolume-binder-controller: it binds
// PersistentVolumeClaims to PersistentVolumes (pre-bound either way, or the smallest fitting
// Available volume), hands claims with a StorageClass to their external provisioner, waits for
// the scheduler with WaitForFirstConsumer classes, keeps the claim and volume phases, and
// reclaims released volumes by their reclaim policy. Two reconcilers share the work, as
// upstream's two queues: one for claims (claim.go), one for volumes (volume.go). Each
// observes, asks a pure decision in decide.go for a plan (decideClaim, decideVolume, and
// decideRecycle for a recycle about to start) and carries it out; a claim is written only
// by writeClaim, a volume only by writeVolume. Matching is match.go, provisioners and
// migration provision.go, recycler pods recycler.go.
package pvbinder

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

const (
	// ControllerName is the upstream controller's name; the claim and volume reconcilers are
	// named after it.
	ControllerName = "persistentvolume-binder-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "persistent-volume-binder"
	// EventSource is the component upstream's Events report.
	EventSource = "persistentvolume-controller"
	// DefaultSyncPeriod is --pvclaimbinder-sync-period's default.
	DefaultSyncPeriod = 15 * time.Second
)

// Annotations and finalizers upstream reads and writes, most named by
// k8s.io/component-helpers/storage/volume.
const (
	AnnBindCompleted          = storagehelpers.AnnBindCompleted
	AnnBoundByController      = storagehelpers.AnnBoundByController
	AnnSelectedNode           = storagehelpers.AnnSelectedNode
	AnnDynamicallyProvisioned = storagehelpers.AnnDynamicallyProvisioned
	AnnMigratedTo             = storagehelpers.AnnMigratedTo
	AnnStorageProvisioner     = storagehelpers.AnnStorageProvisioner
	AnnBetaStorageProvisioner = storagehelpers.AnnBetaStorageProvisioner
	// AnnPreResizeCapacity on a volume is the size its claim reports until a resize finishes.
	AnnPreResizeCapacity = "volume.alpha.kubernetes.io/pre-resize-capacity"
	// AnnIsDefaultClass (and its beta form) marks the default StorageClass.
	AnnIsDefaultClass     = "storageclass.kubernetes.io/is-default-class"
	AnnBetaIsDefaultClass = "storageclass.beta.kubernetes.io/is-default-class"
	// FinalizerInTree protects in-tree volumes until their plugin deleted the storage.
	FinalizerInTree = storagehelpers.PVDeletionInTreeProtectionFinalizer
	// FinalizerExternal is the external provisioner's; the controller drops it from in-tree volumes.
	FinalizerExternal = storagehelpers.PVDeletionProtectionFinalizer
)

// Event reasons (pkg/controller/volume/events).
const (
	ReasonFailedBinding        = "FailedBinding"
	ReasonVolumeMismatch       = "VolumeMismatch"
	ReasonVolumeFailedRecycle  = "VolumeFailedRecycle"
	ReasonVolumeFailedDelete   = "VolumeFailedDelete"
	ReasonExternalProvisioning = "ExternalProvisioning"
	ReasonProvisioningFailed   = "ProvisioningFailed"
	ReasonWaitForFirstConsumer = "WaitForFirstConsumer"
	ReasonWaitForPodScheduled  = "WaitForPodScheduled"
	ReasonClaimLost            = "ClaimLost"
	ReasonClaimMisbound        = "ClaimMisbound"
	ReasonUnknownReclaimPolicy = "VolumeUnknownReclaimPolicy"
)

// Binder holds what both reconcilers need.
type Binder struct {
	// Client reads claims, volumes, classes, pods and nodes from the cache and writes to the
	// API server.
	Client client.Client
	// APIReader double-checks a claim the cache does not show before a volume is released.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	// SyncPeriod is --pvclaimbinder-sync-period: every claim and volume is synced again this
	// often, as upstream's resync (a claim may find a new volume, a class may appear).
	SyncPeriod time.Duration
	// DynamicProvisioning is --enable-dynamic-provisioning.
	DynamicProvisioning bool
	// Recyclers are the recycler pods of NFS and hostPath volumes (--pv-recycler-*).
	Recyclers *Recyclers
	// WatchRecyclerEvents follows a recycler pod's Events, forwarded to its volume.
	WatchRecyclerEvents WatchPodEvents

	recycling recycling
	// operations times provisions and deletions for upstream's metrics.
	operations operationTimes
}

// Claims, volumes, classes, pods and nodes are read from the shared cache and Events
// recorded with kcm's identity; the controller's own identity writes volumes and claims by
// update, as upstream (its role grants update, not patch, on them and their status), deletes
// released volumes, and gets a claim live before releasing its volume.
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=update;delete
// +kubebuilder:rbac:groups="",resources=persistentvolumes/status,verbs=update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims,verbs=get;update
// +kubebuilder:rbac:groups="",resources=persistentvolumeclaims/status,verbs=update
//
// Recycling reads the volume live, creates and deletes the recycler pod (read live when the
// cache does not show it) and watches its Events.
// +kubebuilder:rbac:groups="",resources=persistentvolumes,verbs=get
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;create;delete
// +kubebuilder:rbac:groups="",resources=events,verbs=watch

// SetupWithManager registers the claim reconciler (claims, and volumes mapped to the claim
// their claimRef names) and the volume reconciler (volumes, claims mapped to the volume they
// name, and recycler pods to the volume they scrub), one worker each as upstream.
func (b *Binder) SetupWithManager(mgr manager.Manager) error {
	if b.Client == nil || b.APIReader == nil || b.Recorder == nil || b.Recyclers == nil || b.WatchRecyclerEvents == nil {
		return fmt.Errorf("%s: Client, APIReader, Recorder, Recyclers and WatchRecyclerEvents are required", ControllerName)
	}
	if b.SyncPeriod <= 0 {
		b.SyncPeriod = DefaultSyncPeriod
	}
	registerMetrics(b)
	err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-claims").
		For(&corev1.PersistentVolumeClaim{}).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(b.claimsOfVolume)).
		WithOptions(controller.Options{NewQueue: newClaimQueue, MaxConcurrentReconciles: 1}).
		Complete(&claimReconciler{b})
	if err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName+"-volumes").
		For(&corev1.PersistentVolume{}).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(volumeOfClaim)).
		Watches(&corev1.Pod{}, handler.EnqueueRequestsFromMapFunc(recyclerPodsToVolume)).
		WithOptions(controller.Options{NewQueue: newVolumeQueue, MaxConcurrentReconciles: 1}).
		Complete(&volumeReconciler{b})
}

// claimsOfVolume maps a volume to the claims its change may bind, complete or lose: the claim
// its claimRef names, or, for an unbound Available volume, the waiting claims it fits. A
// volume is created Pending and only matches once the volume sync made it Available, so a
// claim created with it (one kubectl apply) would otherwise wait for the periodic sync;
// upstream's claim sync, reading the volumes its own worker just wrote, mostly finds it.
func (b *Binder) claimsOfVolume(ctx context.Context, obj client.Object) []reconcile.Request {
	v := obj.(*corev1.PersistentVolume)
	if ref := v.Spec.ClaimRef; ref != nil {
		return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}}}
	}
	if v.Status.Phase != corev1.VolumeAvailable || v.DeletionTimestamp != nil {
		return nil
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := b.Client.List(ctx, claims, client.MatchingFields{unboundClaimClass: storagehelpers.GetPersistentVolumeClass(v)},
		client.UnsafeDisableDeepCopy); err != nil {
		// The periodic sync still brings the claims.
		log.FromContext(ctx).Error(err, "Listing the claims a volume may bind", "volume", v.Name)
		return nil
	}
	var reqs []reconcile.Request
	for i := range claims.Items {
		if c := &claims.Items[i]; fits(v, c) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: c.Namespace, Name: c.Name}})
		}
	}
	return reqs
}

// volumeOfClaim maps a claim to the volume it is bound to: a deleted claim releases it.
func volumeOfClaim(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.(*corev1.PersistentVolumeClaim).Spec.VolumeName
	if name == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}

// done turns a sync's outcome into the reconcile result: the periodic resync after success;
// a conflict (a stale cache, or another writer) retried soon without an error log.
func (b *Binder) done(ctx context.Context, err error) (reconcile.Result, error) {
	switch {
	case err == nil:
		return reconcile.Result{RequeueAfter: b.SyncPeriod}, nil
	case apierrors.IsConflict(err):
		log.FromContext(ctx).V(3).Info("Sync hit a conflict, retrying", "err", err)
		return reconcile.Result{RequeueAfter: time.Second}, nil
	default:
		return reconcile.Result{}, err
	}
}

// record records the notices on obj, each as upstream words it.
func (b *Binder) record(obj runtime.Object, notes ...notice) {
	for _, n := range notes {
		b.Recorder.Eventf(obj, nil, n.Type, n.Reason, n.Action, n.Format, n.Args...)
	}
}
