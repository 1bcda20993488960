package storageversionmigrator

import (
	"context"
	"fmt"
	"slices"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
)

// absentNamespace is upstream's namespace listed for a namespaced resource's current
// resource version: not a valid namespace name, so the list is empty, and cheap.
const absentNamespace = "@fake:svm_ns!"

// recordResourceVersion gives a running migration the resource's current resource version,
// from which the migration knows which objects to rewrite; a resource that does not exist
// (once discovery has had time to find it) or cannot be migrated fails the migration.
func (r *Reconciler) recordResourceVersion(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	svm := &svmv1.StorageVersionMigration{}
	if err := r.Client.Get(ctx, req.NamespacedName, svm); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !isRunning(svm) || isFinished(svm) || svm.Status.ResourceVersion != "" {
		return reconcile.Result{}, nil
	}
	gvr, found, err := resourceFor(r.Mapper, svm.Spec.Resource)
	if err != nil {
		return reconcile.Result{}, err
	}
	if !found {
		if r.withinDiscoveryGrace(svm) {
			return reconcile.Result{}, fmt.Errorf("resource %s is not in the REST mapper yet, retrying", svm.Spec.Resource)
		}
		return reconcile.Result{}, r.failOnce(ctx, svm, "resource does not exist in discovery")
	}
	api, err := r.discovered(gvr)
	if err != nil {
		return reconcile.Result{}, err
	}
	if api == nil || !migratable(api) {
		err := fmt.Errorf("resource %q does not support discovery operations: %v", gvr.String(), verbsRequiredForMigration)
		log.FromContext(ctx).Error(err, "resource is not able to be migrated, not retrying", "gvr", gvr.String())
		return reconcile.Result{}, r.failOnce(ctx, svm, err.Error())
	}

	latest, err := r.currentResourceVersion(ctx, gvr, api.Namespaced)
	if err != nil {
		return reconcile.Result{}, err
	}
	if _, err := resourceversion.CompareResourceVersion(latest, latest); err != nil {
		return reconcile.Result{}, r.failOnce(ctx, svm, fmt.Errorf("latest resourceVersion for %s is not valid: %w", gvr.String(), err).Error())
	}
	svm.Status.ResourceVersion = latest
	// Optimistic: the three controllers write this status; each works from what it read.
	if err := patch.Status(ctx, r.Client, svm); err != nil {
		return reconcile.Result{}, fmt.Errorf("error updating status for %s: %w", svm.Name, err)
	}
	return reconcile.Result{}, nil
}

// discovered is the resource as discovery lists it in its group version; nil when the group
// version or the resource is not served (it cannot be migrated).
func (r *Reconciler) discovered(gvr schema.GroupVersionResource) (*metav1.APIResource, error) {
	list, err := r.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if list != nil {
		// A partial answer still names the resources already discovered.
		for i := range list.APIResources {
			if list.APIResources[i].Name == gvr.Resource {
				return &list.APIResources[i], nil
			}
		}
	}
	if err != nil {
		return nil, err
	}
	return nil, fmt.Errorf("resource %q not found in discovery", gvr.String())
}

// migratable: discovery lists every verb a migration uses.
func migratable(api *metav1.APIResource) bool {
	for _, v := range verbsRequiredForMigration {
		if !slices.Contains(api.Verbs, v) {
			return false
		}
	}
	return true
}

// currentResourceVersion is the resource version of an (empty) one-item list of the
// resource, as upstream: of a namespace that cannot exist for a namespaced resource.
func (r *Reconciler) currentResourceVersion(ctx context.Context, gvr schema.GroupVersionResource, namespaced bool) (string, error) {
	res := r.Metadata.Resource(gvr)
	var list *metav1.PartialObjectMetadataList
	var err error
	if namespaced {
		list, err = res.Namespace(absentNamespace).List(ctx, metav1.ListOptions{Limit: 1})
	} else {
		list, err = res.List(ctx, metav1.ListOptions{Limit: 1})
	}
	if err != nil {
		return "", fmt.Errorf("error getting latest resourceVersion for %s: %w", gvr.String(), err)
	}
	return list.ResourceVersion, nil
}

// failOnce is upstream's resource-version controller's failure: the Failed condition with
// the message, added unless one is there.
func (r *Reconciler) failOnce(ctx context.Context, svm *svmv1.StorageVersionMigration, message string) error {
	addConditionOnce(svm, svmv1.MigrationFailed, reasonFailed, message, metav1.NewTime(r.Clock.Now()))
	return patch.Status(ctx, r.Client, svm)
}
