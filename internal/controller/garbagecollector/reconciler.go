package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	batchv1 "k8s.io/api/batch/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	networkingv1 "k8s.io/api/networking/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	resourcev1 "k8s.io/api/resource/v1"
	resourcev1alpha3 "k8s.io/api/resource/v1alpha3"
	schedulingv1beta1 "k8s.io/api/scheduling/v1beta1"
	storagev1 "k8s.io/api/storage/v1"
	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/parallel"
)

const (
	// ControllerName is upstream's name for this controller.
	ControllerName = "garbage-collector-controller"
	// ClientName is upstream's client (service account) name for it.
	ClientName = "generic-garbage-collector"
	// DefaultWorkers is upstream's default of --concurrent-gc-syncs.
	DefaultWorkers = 20

	// readyRecheck is how soon a finalizer waiting for the watches to sync is tried again.
	readyRecheck = time.Second
)

// errWaitForWatches: the graph may not list all dependents yet.
var errWaitForWatches = errors.New("waiting for the watches to sync")

// Reconciler is the garbage collector.
type Reconciler struct {
	// Config reaches the API server for the collector's live reads, writes and discovery
	// (see ClientConfig). The metadata watches use the manager's configuration.
	Config   *rest.Config
	Recorder recorder.EventRecorder
	Clock    clock.PassiveClock
	// DiscoveryPeriod is how often discovery is run for new resources (default 30 s).
	DiscoveryPeriod time.Duration
	// IgnoredResources are never watched (default DefaultIgnoredResources).
	IgnoredResources map[schema.GroupResource]struct{}

	graph     *graph
	mapper    meta.RESTMapper
	metadata  metadata.Interface
	discovery discovery.DiscoveryInterface
	cache     cache.Cache
	// shared is the manager's cache, and scheme its types: the kinds in sharedKinds are
	// watched through it.
	shared     cache.Informers
	scheme     *runtime.Scheme
	controller controller.TypedController[request]
	// requests carries the requests workers make for other items to the queue.
	requests chan event.TypedGenericEvent[request]

	mu      sync.Mutex
	watches map[schema.GroupVersionResource]*resourceWatch
	// checkSynced: the last discovery pass changed the watches, and the next one checks that
	// they synced since (upstream waits up to a discovery period for it).
	checkSynced bool
}

// resourceWatch is the watch of one resource.
type resourceWatch struct {
	gvk      schema.GroupVersionKind
	informer cache.Informer
	// shared: the informer is the shared cache's (never stopped by the collector).
	shared  bool
	started time.Time
}

// sharedKinds are watched through the shared cache rather than a metadata informer: kcm's
// default controllers keep every object of these kinds whole in it anyway (each is in a
// For, Owns or Watches of one), so a metadata informer would hold each object a second time
// and have the API server send, and kcm decode, each of its events twice (issue 24: before
// Nodes, Leases and the rest were listed, kcm's cluster served one more watch than
// upstream's of each of them). Upstream's collector shares the typed informer of every
// built-in kind (ObjectOrMetadataInformerFactory); here kinds no controller keeps whole
// (ConfigMaps, which the shared cache restricts, Secrets, custom resources, ...) stay
// metadata-only. A kind whose controller is turned off is still watched typed, as upstream's.
var sharedKinds = map[schema.GroupVersionKind]bool{
	corev1.SchemeGroupVersion.WithKind("Pod"):                               true,
	corev1.SchemeGroupVersion.WithKind("Node"):                              true,
	corev1.SchemeGroupVersion.WithKind("Namespace"):                         true,
	corev1.SchemeGroupVersion.WithKind("Service"):                           true,
	corev1.SchemeGroupVersion.WithKind("Endpoints"):                         true,
	corev1.SchemeGroupVersion.WithKind("ServiceAccount"):                    true,
	corev1.SchemeGroupVersion.WithKind("PersistentVolume"):                  true,
	corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim"):             true,
	corev1.SchemeGroupVersion.WithKind("ResourceQuota"):                     true,
	corev1.SchemeGroupVersion.WithKind("ReplicationController"):             true,
	appsv1.SchemeGroupVersion.WithKind("ReplicaSet"):                        true,
	appsv1.SchemeGroupVersion.WithKind("Deployment"):                        true,
	appsv1.SchemeGroupVersion.WithKind("StatefulSet"):                       true,
	appsv1.SchemeGroupVersion.WithKind("DaemonSet"):                         true,
	appsv1.SchemeGroupVersion.WithKind("ControllerRevision"):                true,
	batchv1.SchemeGroupVersion.WithKind("Job"):                              true,
	batchv1.SchemeGroupVersion.WithKind("CronJob"):                          true,
	discoveryv1.SchemeGroupVersion.WithKind("EndpointSlice"):                true,
	coordinationv1.SchemeGroupVersion.WithKind("Lease"):                     true,
	policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget"):             true,
	rbacv1.SchemeGroupVersion.WithKind("ClusterRole"):                       true,
	networkingv1.SchemeGroupVersion.WithKind("ServiceCIDR"):                 true,
	networkingv1.SchemeGroupVersion.WithKind("IPAddress"):                   true,
	certificatesv1.SchemeGroupVersion.WithKind("CertificateSigningRequest"): true,
	storagev1.SchemeGroupVersion.WithKind("VolumeAttachment"):               true,
	storagev1.SchemeGroupVersion.WithKind("CSIDriver"):                      true,
	// Kept whole by vacprotection, storageversionmigrator, podcertificaterequestcleaner,
	// devicetainteviction, ctbpublisher, podgroupprotection, resourcepoolstatusrequest and
	// storageversiongc (issue 39: each was watched twice, typed and metadata-only, when its
	// API is served; TestCollectorSharesEveryKeptKind reads the controllers' source so none
	// is forgotten). An API that is off is not discovered, so nothing is watched; one served
	// at another preferred version than here stays metadata-only.
	storagev1.SchemeGroupVersion.WithKind("VolumeAttributesClass"):                   true,
	svmv1.SchemeGroupVersion.WithKind("StorageVersionMigration"):                     true,
	certificatesv1.SchemeGroupVersion.WithKind("PodCertificateRequest"):              true,
	resourcev1.SchemeGroupVersion.WithKind("DeviceTaintRule"):                        true,
	certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle"):                 true,
	schedulingv1beta1.SchemeGroupVersion.WithKind("PodGroup"):                        true,
	resourcev1alpha3.SchemeGroupVersion.WithKind("ResourcePoolStatusRequest"):        true,
	apiserverinternalv1alpha1.SchemeGroupVersion.WithKind("StorageVersion"):          true,
	autoscalingv2.SchemeGroupVersion.WithKind("HorizontalPodAutoscaler"):             true,
	admissionregistrationv1.SchemeGroupVersion.WithKind("ValidatingAdmissionPolicy"): true,
	resourcev1.SchemeGroupVersion.WithKind("ResourceClaim"):                          true,
	resourcev1.SchemeGroupVersion.WithKind("ResourceClaimTemplate"):                  true,
	resourcev1.SchemeGroupVersion.WithKind("ResourceSlice"):                          true,
}

// SharesKind reports whether the collector watches gvk through the manager's shared cache
// (for the registry's test that no such kind is one the shared cache restricts).
func SharesKind(gvk schema.GroupVersionKind) bool { return sharedKinds[gvk] }

// The metadata watches run in a cache on the manager's configuration (kcm's identity, which
// may list and watch everything, as upstream's shared metadata informers); the collector's
// own identity reads items live, patches their owner references and finalizers, and deletes.
// +kubebuilder:rbac:groups=*,resources=*,verbs=get;patch;delete

// Reconcile runs one request: the discovery pass, or an attempt to delete or to orphan.
func (r *Reconciler) Reconcile(ctx context.Context, req request) (reconcile.Result, error) {
	switch req.Op {
	case opDiscover:
		return r.discover(ctx)
	case opDelete:
		return r.attemptToDelete(ctx, req.UID)
	case opOrphan:
		return r.attemptToOrphan(ctx, req.UID)
	}
	return reconcile.Result{}, nil
}

// discover watches the deletable resources discovery reports that are not watched yet, and
// stops watching those it no longer reports; it comes back after DiscoveryPeriod. Failures
// are logged and left to the next pass, as upstream.
func (r *Reconciler) discover(ctx context.Context) (reconcile.Result, error) {
	logger := log.FromContext(ctx)
	next := reconcile.Result{RequeueAfter: r.DiscoveryPeriod}
	if r.checkSynced {
		r.checkSynced = false
		if !r.watchesSynced() {
			logger.Error(nil, "Timed out waiting for dependency graph builder sync during GC sync")
			resourcesSyncErrors.Inc()
		}
	}
	preferred, err := r.discovery.ServerPreferredResources()
	if err != nil {
		logger.Info("Failed to discover some resources", "err", err.Error())
	}
	found := deletableResources(preferred, r.IgnoredResources)
	if len(found) == 0 {
		logger.V(2).Info("No resources reported by discovery, skipping garbage collector sync")
		resourcesSyncErrors.Inc()
		return next, nil
	}
	watched := r.watchedResources()
	if failed, ok := discovery.GroupDiscoveryFailedErrorGroups(err); ok {
		keepFailedGroups(found, watched, failed)
	}
	add, remove := resourceChanges(watched, found)
	if len(add) == 0 && len(remove) == 0 {
		logger.V(5).Info("No resource updates from discovery, skipping garbage collector sync")
		return next, nil
	}
	logger.V(2).Info("Syncing garbage collector with updated resources from discovery", "added", len(add), "removed", len(remove))
	var errs []error
	for _, gvr := range remove {
		errs = append(errs, r.unwatch(ctx, gvr))
	}
	for _, gvr := range add {
		errs = append(errs, r.watch(ctx, gvr, found[gvr]))
	}
	if err := utilerrors.NewAggregate(errs); err != nil {
		logger.Error(err, "Failed to sync resource monitors; the next discovery pass retries")
		resourcesSyncErrors.Inc()
		return next, nil
	}
	r.checkSynced = true
	return next, nil
}

func (r *Reconciler) watchedResources() map[schema.GroupVersionResource]schema.GroupVersionKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[schema.GroupVersionResource]schema.GroupVersionKind, len(r.watches))
	for gvr, w := range r.watches {
		out[gvr] = w.gvk
	}
	return out
}

// watch starts the informer of a resource (see sharedKinds) and feeds its events to the graph.
func (r *Reconciler) watch(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind) error {
	var inf cache.Informer
	var err error
	shared := false
	if typed, ok := r.sharedObject(gvk); ok {
		inf, err = r.shared.GetInformer(ctx, typed, cache.BlockUntilSynced(false))
		shared = true
	} else {
		inf, err = r.cache.GetInformer(ctx, partialObject(gvk), cache.BlockUntilSynced(false))
	}
	if err != nil {
		return fmt.Errorf("couldn't start monitor for resource %q: %w", gvr, err)
	}
	if err := r.controller.Watch(r.informerSource(inf, gvk)); err != nil {
		return fmt.Errorf("couldn't watch resource %q: %w", gvr, err)
	}
	r.mu.Lock()
	r.watches[gvr] = &resourceWatch{gvk: gvk, informer: inf, shared: shared, started: r.Clock.Now()}
	r.mu.Unlock()
	return nil
}

// unwatch stops the informer of a resource discovery no longer reports.
func (r *Reconciler) unwatch(ctx context.Context, gvr schema.GroupVersionResource) error {
	r.mu.Lock()
	w, ok := r.watches[gvr]
	delete(r.watches, gvr)
	r.mu.Unlock()
	if !ok || w.shared {
		// The shared cache's informers serve other controllers too.
		return nil
	}
	if err := r.cache.RemoveInformer(ctx, partialObject(w.gvk)); err != nil {
		return fmt.Errorf("stopping monitor for resource %q: %w", gvr, err)
	}
	return nil
}

// sharedObject is an empty typed object of gvk when gvk is watched through the shared cache.
func (r *Reconciler) sharedObject(gvk schema.GroupVersionKind) (client.Object, bool) {
	if r.shared == nil || !sharedKinds[gvk] {
		return nil, false
	}
	obj, err := r.scheme.New(gvk)
	if err != nil {
		return nil, false
	}
	typed, ok := obj.(client.Object)
	return typed, ok
}

func partialObject(gvk schema.GroupVersionKind) *metav1.PartialObjectMetadata {
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	return obj
}

// watchesSynced reports whether every watch has synced.
func (r *Reconciler) watchesSynced() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range r.watches {
		if !w.informer.HasSynced() {
			return false
		}
	}
	return true
}

// watchesReady reports whether the graph can be trusted to list an owner's dependents.
func (r *Reconciler) watchesReady() bool {
	r.mu.Lock()
	states := make([]watchState, 0, len(r.watches))
	for _, w := range r.watches {
		states = append(states, watchState{Synced: w.informer.HasSynced(), Started: w.started})
	}
	r.mu.Unlock()
	return watchesReady(states, r.Clock.Now(), r.DiscoveryPeriod)
}

// attemptToDelete is upstream's attemptToDeleteWorker for one item.
func (r *Reconciler) attemptToDelete(ctx context.Context, uid types.UID) (reconcile.Result, error) {
	item, ok := r.graph.view(uid)
	if !ok {
		// Removed from the graph since it was queued: nothing left to decide.
		return reconcile.Result{}, nil
	}
	ctx = log.IntoContext(ctx, log.FromContext(ctx).WithValues("item", item.identity.String()))
	err := r.attemptToDeleteItem(ctx, item)
	var mappingErr *restMappingError
	switch {
	case errors.Is(err, errVirtualDeleted):
		return reconcile.Result{}, nil
	case errors.Is(err, errClusterScopedDependentOfNamespacedOwner):
		return reconcile.Result{}, reconcile.TerminalError(fmt.Errorf("%s: %w", item.identity, err))
	case errors.As(err, &mappingErr):
		// A kind not served (yet): the next discovery may bring it.
		log.FromContext(ctx).V(5).Info("Error syncing item", "err", err.Error())
		return reconcile.Result{RequeueAfter: retryAfter(r.graph.retried(uid))}, nil
	case errors.Is(err, errWaitForWatches):
		return reconcile.Result{RequeueAfter: readyRecheck}, nil
	case err != nil:
		return reconcile.Result{}, fmt.Errorf("error syncing item %s: %w", item.identity, err)
	case !item.observed:
		// A virtual node whose object exists: wait until a watch shows it, or a virtual node
		// added and removed while a watch was re-established would stay forever.
		log.FromContext(ctx).V(5).Info("Item hasn't been observed via informer yet")
		return reconcile.Result{RequeueAfter: retryAfter(r.graph.retried(uid))}, nil
	}
	return reconcile.Result{}, nil
}

// attemptToDeleteItem reads the item live and deletes it when all its owners are gone or
// waiting for it, as upstream's attemptToDeleteItem.
func (r *Reconciler) attemptToDeleteItem(ctx context.Context, item itemView) error {
	logger := log.FromContext(ctx)
	logger.V(2).Info("Processing item", "virtual", !item.observed)
	// Being deleted is a one-way trip: the deletion's event brings the dependents here.
	if item.beingDeleted && !item.deletingDependents {
		return nil
	}
	latest, err := r.getObject(ctx, item.identity)
	if apierrors.IsNotFound(err) || (err == nil && latest.UID != item.identity.UID) {
		logger.V(5).Info("Item not found, generating a virtual delete event")
		r.virtualDelete(ctx, item.identity)
		return errVirtualDeleted
	}
	if err != nil {
		return err
	}
	if item.deletingDependents {
		return r.processDeletingDependents(ctx, item)
	}
	if len(latest.OwnerReferences) == 0 {
		logger.V(2).Info("Item doesn't have an owner, continue on next item")
		return nil
	}
	var owners classifiedOwners
	for _, ref := range latest.OwnerReferences {
		state, err := r.ownerState(ctx, item.identity, ref)
		if err != nil {
			return err
		}
		owners.add(ref, state)
	}
	facts := itemFacts{HasDependents: len(item.dependents) > 0, Finalizers: latest.Finalizers}
	for _, d := range item.dependents {
		facts.DependentDeletingDependents = facts.DependentDeletingDependents || d.deletingDependents
	}
	p := decide(owners, facts)
	switch p.Action {
	case removeOwnerRefs:
		logger.V(2).Info("Item has at least one existing owner; removing the references to the others", "owners", p.Owners)
		smp, err := deleteOwnerRefsStrategicPatch(item.identity.UID, p.Owners)
		if err != nil {
			return err
		}
		return r.patchOwnerRefs(ctx, item.identity, smp, func(cur *metav1.PartialObjectMetadata) ([]byte, error) {
			return deleteOwnerRefsMergePatch(cur, p.Owners)
		})
	case deleteItem:
		if p.Unblock && hasBlockingRef(latest.OwnerReferences) {
			// Its owner and one of its dependents both wait for dependents: stop blocking the
			// owner, or the two foreground deletions could wait for each other forever.
			logger.V(2).Info("Item's owner and dependent both wait for their dependents' deletion; unblocking its owner references to prevent a cycle")
			smp, err := unblockOwnerRefsStrategicPatch(item.identity.UID, latest.OwnerReferences)
			if err != nil {
				return err
			}
			if err := r.patchOwnerRefs(ctx, item.identity, smp, unblockOwnerRefsMergePatch); err != nil {
				return err
			}
		}
		logger.V(2).Info("Deleting item", "propagationPolicy", p.Policy)
		err := r.deleteObject(ctx, item.identity, latest.ResourceVersion, latest.OwnerReferences, p.Policy)
		if apierrors.IsNotFound(err) {
			r.virtualDelete(ctx, item.identity)
			return errVirtualDeleted
		}
		return err
	}
	return nil
}

func hasBlockingRef(refs []metav1.OwnerReference) bool {
	for _, ref := range refs {
		if isBlocking(ref) {
			return true
		}
	}
	return false
}

// ownerState classifies one owner of item with a live read, by UID, in the item's namespace
// (or cluster-wide for a cluster-scoped kind), remembering owners found absent.
func (r *Reconciler) ownerState(ctx context.Context, item objectRef, ref metav1.OwnerReference) (ownerState, error) {
	key := ownerIdentity(ref, "")
	if r.graph.isAbsent(key) {
		return dangling, nil
	}
	key.Namespace = item.Namespace
	if r.graph.isAbsent(key) {
		return dangling, nil
	}
	gvr, namespaced, err := r.resource(key.GVK())
	if err != nil {
		return solid, err
	}
	if !namespaced {
		key.Namespace = ""
	}
	if item.Namespace == "" && namespaced {
		log.FromContext(ctx).V(2).Info("Item is cluster-scoped, but refers to a namespaced owner", "owner", key.String())
		return solid, errClusterScopedDependentOfNamespacedOwner
	}
	live, err := r.metadata.Resource(gvr).Namespace(key.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		return solid, err
	}
	state := ownerStateOf(ref, live)
	if state == dangling {
		log.FromContext(ctx).V(5).Info("Item's owner is not found", "owner", key.String())
		r.graph.markAbsent(key)
	}
	return state, nil
}

// processDeletingDependents handles an item deleting in the foreground: it asks for its
// blocking dependents to be deleted, and removes the foregroundDeletion finalizer once
// there are none.
func (r *Reconciler) processDeletingDependents(ctx context.Context, item itemView) error {
	blocking := item.blockingDependents()
	if len(blocking) == 0 {
		if !r.watchesReady() {
			return errWaitForWatches
		}
		log.FromContext(ctx).V(2).Info("Removing the foregroundDeletion finalizer")
		return r.removeFinalizer(ctx, item.identity, metav1.FinalizerDeleteDependents)
	}
	var reqs []request
	for _, dep := range blocking {
		if !dep.deletingDependents {
			log.FromContext(ctx).V(2).Info("Adding dependent to attemptToDelete, because its owner is deletingDependents", "dependent", dep.identity.String())
			reqs = append(reqs, request{Op: opDelete, UID: dep.identity.UID})
		}
	}
	r.enqueue(ctx, reqs...)
	return nil
}

// attemptToOrphan removes the owner's references from its dependents, then its orphan
// finalizer, as upstream's attemptToOrphanWorker.
func (r *Reconciler) attemptToOrphan(ctx context.Context, uid types.UID) (reconcile.Result, error) {
	owner, ok := r.graph.view(uid)
	if !ok {
		return reconcile.Result{}, nil
	}
	if !r.watchesReady() {
		return reconcile.Result{RequeueAfter: readyRecheck}, nil
	}
	if err := r.orphanDependents(ctx, owner); err != nil {
		return reconcile.Result{}, err
	}
	if err := r.removeFinalizer(ctx, owner.identity, metav1.FinalizerOrphanDependents); err != nil {
		return reconcile.Result{}, fmt.Errorf("removing the orphan finalizer of %s: %w", owner.identity, err)
	}
	return reconcile.Result{}, nil
}

func (r *Reconciler) orphanDependents(ctx context.Context, owner itemView) error {
	ownerUIDs := []types.UID{owner.identity.UID}
	// As upstream, every dependent at once: the client's rate limit is the bound.
	deps := owner.dependents
	err := parallel.Do(ctx, len(deps), len(deps), func(ctx context.Context, i int) error {
		dep := deps[i]
		smp, err := deleteOwnerRefsStrategicPatch(dep.identity.UID, ownerUIDs)
		if err == nil {
			err = r.patchOwnerRefs(ctx, dep.identity, smp, func(cur *metav1.PartialObjectMetadata) ([]byte, error) {
				return deleteOwnerRefsMergePatch(cur, ownerUIDs)
			})
		}
		// A strategic merge patch of a reference that is not there is no error.
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("orphaning %s: %w", dep.identity, err)
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("failed to orphan dependents of owner %s: %w", owner.identity, err)
	}
	log.FromContext(ctx).V(5).Info("Successfully updated all dependents", "owner", owner.identity.String())
	return nil
}

// virtualDelete tells the graph an object was found gone that no watch reported.
func (r *Reconciler) virtualDelete(ctx context.Context, id objectRef) {
	eff := r.graph.apply(change{
		Type:    deleted,
		Virtual: true,
		GVK:     id.GVK(),
		Object:  objectMeta{UID: id.UID, Name: id.Name, Namespace: id.Namespace},
	})
	r.enqueue(ctx, eff.requests()...)
	r.report(ctx, eff.InvalidNamespace)
}

// report records upstream's Event on dependents referencing an owner in another namespace.
func (r *Reconciler) report(ctx context.Context, invalid []invalidOwnerRef) {
	for _, i := range invalid {
		log.FromContext(ctx).V(2).Info("Item references an owner but does not match namespaces", "item", i.Dependent.String(), "owner", i.Owner.String())
		regarding := partialObject(i.Dependent.GVK())
		regarding.Name, regarding.Namespace, regarding.UID = i.Dependent.Name, i.Dependent.Namespace, i.Dependent.UID
		r.Recorder.Eventf(regarding, nil, "Warning", ReasonOwnerRefInvalidNamespace, actionGarbageCollect, "%s", i.Message())
	}
}

const (
	// ReasonOwnerRefInvalidNamespace is upstream's Event reason for a reference to an owner
	// in another namespace.
	ReasonOwnerRefInvalidNamespace = "OwnerRefInvalidNamespace"
	// actionGarbageCollect is the events.k8s.io action of the collector's Events (upstream's
	// core/v1 Events have none).
	actionGarbageCollect = "GarbageCollect"
)
