// Package storageversionmigrator is upstream's storage-version-migrator-controller: it runs
// the storagemigration.k8s.io StorageVersionMigrations, each of which rewrites every object
// of one resource so that the API server stores it again in the resource's current storage
// version (and encryption), then lets a custom resource's stored versions shrink to that one.
//
// As upstream, three controllers share the migrations, each with its own queue:
//
//   - the runner (runner.go), keyed by resource: one migration at a time per resource, the
//     oldest first, is marked Running (and its CustomResourceDefinition StorageMigrating);
//     when it has succeeded or failed its Running condition is closed and the CRD's status
//     settled (stored versions reduced to the storage version);
//   - the resource-version controller (resourceversion.go): a running migration gets the
//     resource's current resource version in status.resourceVersion, or fails when the
//     resource does not exist or cannot be listed, patched and updated;
//   - the migration itself (this file): once the resource version is recorded, every object
//     not written since then is rewritten by a no-op merge patch pinned to its resource
//     version, and the migration succeeds or fails.
//
// Upstream lists the objects to rewrite from the garbage collector's metadata informer for
// the resource, after waiting until that informer has caught up with the recorded resource
// version. kcm's garbage collector keeps its informers to itself, and the migrator's own role
// grants list and patch on every resource but not watch; the migration instead lists the
// resource's metadata from the API server, in pages, with a consistent read (no resource
// version given): the list is served at the API server's latest resource version, so it is
// caught up with the recorded one by construction, and that is still checked as upstream
// checks its informer. It costs one paginated list per migration where upstream reuses a
// watch, and holds nothing between migrations.
package storageversionmigrator

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/patch"
)

const (
	// ControllerName is upstream's controller name; it is also the field manager of the
	// objects' rewrites, as upstream.
	ControllerName = "storage-version-migrator-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "storage-version-migrator-controller"
	// runnerFieldManager owns the CustomResourceDefinition status fields the runner applies.
	runnerFieldManager = "migration-runner-controller"

	// migrationWorkers is upstream's fixed worker count of the migration; the runner and the
	// resource-version controller have one each.
	migrationWorkers = 5
	// discoveryGrace is how long after its creation a migration of a resource the REST
	// mapper does not know is retried before it fails: a custom resource just created may not
	// be discovered yet (upstream: twice its 30 s discovery period).
	discoveryGrace = time.Minute
	// listPageSize bounds each page of the migration's list of the resource.
	listPageSize = 500
)

// Reconciler runs StorageVersionMigrations: its three controllers share it.
type Reconciler struct {
	// Client reads migrations from the shared cache and updates their status.
	Client client.Client
	// CRDs reads CustomResourceDefinitions live and applies their status.
	CRDs client.Client
	// Metadata lists and patches the migrated resources.
	Metadata metadata.Interface
	// Discovery tells whether a resource is namespaced and supports a migration's verbs.
	Discovery discovery.DiscoveryInterface
	// Mapper finds a migration's resource version (the manager's REST mapper).
	Mapper meta.RESTMapper
	Clock  clock.PassiveClock
}

// Migrations are read from the shared cache (kcm's identity). The controller's own identity
// updates their status, lists and patches the migrated resources (any), reads
// CustomResourceDefinitions and applies their status.
// +kubebuilder:rbac:groups=storagemigration.k8s.io,resources=storageversionmigrations,verbs=list;watch
// +kubebuilder:rbac:groups=storagemigration.k8s.io,resources=storageversionmigrations/status,verbs=update
// +kubebuilder:rbac:groups=*,resources=*,verbs=list;patch
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions,verbs=get
// +kubebuilder:rbac:groups=apiextensions.k8s.io,resources=customresourcedefinitions/status,verbs=patch

// migrate runs one migration whose resource version is recorded: it lists the resource,
// rewrites every object not written since that version, and records the outcome.
func (r *Reconciler) migrate(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	svm := &svmv1.StorageVersionMigration{}
	if err := r.Client.Get(ctx, req.NamespacedName, svm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if isFinished(svm) || svm.Status.ResourceVersion == "" {
		// Finished, or not started yet: the resource-version controller's write brings the
		// migration back.
		return reconcile.Result{}, nil
	}
	recorded := svm.Status.ResourceVersion
	gvr, found, err := resourceFor(r.Mapper, svm.Spec.Resource)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !found {
		if r.withinDiscoveryGrace(svm) {
			return reconcile.Result{}, fmt.Errorf("resource %s is not in the REST mapper yet, retrying", svm.Spec.Resource)
		}
		return reconcile.Result{}, r.fail(ctx, svm, nil, fmt.Errorf("unable to obtain GVR from discovery"))
	}
	gvk, err := r.Mapper.KindFor(gvr)
	if err != nil {
		return reconcile.Result{}, r.fail(ctx, svm, nil, err)
	}

	// Observe: every object of the resource, from a list at least as recent as the recorded
	// version (upstream's "GC cache is up to date" check).
	objs, listRV, err := r.listAll(ctx, gvr)
	if err != nil {
		return reconcile.Result{}, err
	}
	cmp, err := resourceversion.CompareResourceVersion(listRV, recorded)
	if err != nil {
		return reconcile.Result{}, r.fail(ctx, svm, nil, fmt.Errorf("error comparing resource versions between GC and SVM resource: %w", err))
	}
	if cmp < 0 {
		return reconcile.Result{}, fmt.Errorf("list of %s at resource version %s is older than the migration's %s, retrying", gvr, listRV, recorded)
	}
	todo, err := candidates(objs, recorded)
	if err != nil {
		return reconcile.Result{}, r.fail(ctx, svm, nil, err)
	}

	// Act: rewrite each object in place. A conflict or a not-found means it was written or
	// deleted since, which needs no rewrite.
	p := progress{ToPatch: len(todo), Total: len(objs)}
	logger := log.FromContext(ctx)
	for _, obj := range todo {
		err := r.rewrite(ctx, gvr, gvk, obj)
		switch outcomeOf(err) {
		case transient:
			logger.V(6).Info("Resource patch failed due to an error that can be retried", "namespace", obj.Namespace, "name", obj.Name, "gvr", gvr.String(), "err", err)
			if werr := r.setRunning(ctx, svm, p, err); werr != nil {
				logger.V(2).Info("Could not record the transient error", "err", werr)
			}
			return reconcile.Result{}, err
		case fail:
			logger.Error(err, "Failed to migrate the resource", "namespace", obj.Namespace, "name", obj.Name, "gvr", gvr.String(), "reason", apierrors.ReasonForError(err))
			return reconcile.Result{}, r.fail(ctx, svm, &p, err)
		}
		p.ToPatch--
	}

	// Status: all rewritten.
	now := metav1.NewTime(r.Clock.Now())
	running := meta.SetStatusCondition(&svm.Status.Conditions, metav1.Condition{Type: string(svmv1.MigrationRunning),
		Status: metav1.ConditionTrue, LastTransitionTime: now, Reason: reasonRunning, Message: runningMessage(&p, nil)})
	succeeded := meta.SetStatusCondition(&svm.Status.Conditions, metav1.Condition{Type: string(svmv1.MigrationSucceeded),
		Status: metav1.ConditionTrue, LastTransitionTime: now, Reason: reasonSucceeded, Message: "Migration completed"})
	if !running && !succeeded {
		return reconcile.Result{}, nil
	}
	// Optimistic: the three controllers write this status; each works from what it read.
	return reconcile.Result{}, patch.Status(ctx, r.Client, svm)
}

// listAll lists the resource's objects' metadata in pages, all of one snapshot, and the
// resource version the list was served at.
func (r *Reconciler) listAll(ctx context.Context, gvr schema.GroupVersionResource) ([]metav1.PartialObjectMetadata, string, error) {
	var objs []metav1.PartialObjectMetadata
	opts := metav1.ListOptions{Limit: listPageSize}
	listRV := ""
	for {
		page, err := r.Metadata.Resource(gvr).List(ctx, opts)
		if err != nil {
			return nil, "", fmt.Errorf("listing %s: %w", gvr, err)
		}
		if listRV == "" {
			// Every page is served at the first page's resource version.
			listRV = page.ResourceVersion
		}
		objs = append(objs, page.Items...)
		if page.Continue == "" {
			return objs, listRV, nil
		}
		opts.Continue = page.Continue
	}
}

// rewrite is upstream's no-op merge patch: the object's own apiVersion and kind, pinned to
// its resource version, so that the API server reads, converts and stores it again.
func (r *Reconciler) rewrite(ctx context.Context, gvr schema.GroupVersionResource, gvk schema.GroupVersionKind, obj *metav1.PartialObjectMetadata) error {
	apiVersion, kind := gvk.ToAPIVersionAndKind()
	body, err := json.Marshal(map[string]any{
		"apiVersion": apiVersion,
		"kind":       kind,
		"metadata":   map[string]string{"resourceVersion": obj.ResourceVersion},
	})
	if err != nil {
		return err
	}
	_, err = r.Metadata.Resource(gvr).Namespace(obj.Namespace).
		Patch(ctx, obj.Name, types.MergePatchType, body, metav1.PatchOptions{FieldManager: ControllerName})
	return err
}

// setRunning records the progress and a transient error in the Running condition.
func (r *Reconciler) setRunning(ctx context.Context, svm *svmv1.StorageVersionMigration, p progress, transientErr error) error {
	if !meta.SetStatusCondition(&svm.Status.Conditions, metav1.Condition{Type: string(svmv1.MigrationRunning),
		Status: metav1.ConditionTrue, LastTransitionTime: metav1.NewTime(r.Clock.Now()), Reason: reasonRunning,
		Message: runningMessage(&p, transientErr)}) {
		return nil
	}
	return patch.Status(ctx, r.Client, svm)
}

// fail marks the migration Failed with upstream's message; with p, after objects were being
// rewritten, the Running condition gets the counts too.
func (r *Reconciler) fail(ctx context.Context, svm *svmv1.StorageVersionMigration, p *progress, cause error) error {
	now := metav1.NewTime(r.Clock.Now())
	changed := false
	if p != nil {
		changed = meta.SetStatusCondition(&svm.Status.Conditions, metav1.Condition{Type: string(svmv1.MigrationRunning),
			Status: metav1.ConditionTrue, LastTransitionTime: now, Reason: reasonRunning, Message: runningMessage(p, nil)})
	}
	if meta.SetStatusCondition(&svm.Status.Conditions, metav1.Condition{Type: string(svmv1.MigrationFailed),
		Status: metav1.ConditionTrue, LastTransitionTime: now, Reason: reasonFailed, Message: failedMessage(p, cause)}) {
		changed = true
	}
	if !changed {
		return nil
	}
	return patch.Status(ctx, r.Client, svm)
}

// withinDiscoveryGrace: the migration is recent enough that its resource may just not be
// discovered yet.
func (r *Reconciler) withinDiscoveryGrace(svm *svmv1.StorageVersionMigration) bool {
	return r.Clock.Since(svm.CreationTimestamp.Time) < discoveryGrace
}

// resourceFor finds the version the REST mapper serves a group and resource at; found is
// false when it knows no such resource.
func resourceFor(mapper meta.RESTMapper, gr metav1.GroupResource) (schema.GroupVersionResource, bool, error) {
	gvrs, err := mapper.ResourcesFor(schema.GroupVersionResource{Group: gr.Group, Resource: gr.Resource})
	if meta.IsNoMatchError(err) {
		return schema.GroupVersionResource{}, false, nil
	}
	if err != nil {
		return schema.GroupVersionResource{}, false, err
	}
	for _, gvr := range gvrs {
		if gvr.Group == gr.Group && gvr.Resource == gr.Resource {
			return gvr, true, nil
		}
	}
	return schema.GroupVersionResource{}, false, nil
}

// SetupWithManager registers the three controllers: the migration and the resource-version
// controller per migration, the runner per resource.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.CRDs == nil || r.Metadata == nil || r.Discovery == nil || r.Mapper == nil {
		return fmt.Errorf("%s: Client, CRDs, Metadata, Discovery and Mapper are required", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&svmv1.StorageVersionMigration{}).
		WithOptions(controller.Options{NewQueue: newMigrationQueue, MaxConcurrentReconciles: migrationWorkers}).
		Complete(reconcile.Func(r.migrate)); err != nil {
		return err
	}
	if err := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName + "-resource-version").
		For(&svmv1.StorageVersionMigration{}).
		WithOptions(controller.Options{NewQueue: newResourceVersionQueue}).
		Complete(reconcile.Func(r.recordResourceVersion)); err != nil {
		return err
	}
	byResource := handler.TypedEnqueueRequestsFromMapFunc(func(_ context.Context, svm *svmv1.StorageVersionMigration) []metav1.GroupResource {
		return []metav1.GroupResource{svm.Spec.Resource}
	})
	return builder.TypedControllerManagedBy[metav1.GroupResource](mgr).
		Named(ControllerName + "-runner").
		WatchesRawSource(source.TypedKind(mgr.GetCache(), &svmv1.StorageVersionMigration{}, byResource)).
		WithOptions(controller.TypedOptions[metav1.GroupResource]{NewQueue: newRunnerQueue}).
		Complete(reconcile.TypedFunc[metav1.GroupResource](r.run))
}
