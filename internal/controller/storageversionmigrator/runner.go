package storageversionmigrator

import (
	"context"
	"fmt"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
)

var crdGVK = schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}

// storageMigrating is the CustomResourceDefinition condition the runner keeps.
const storageMigrating = "StorageMigrating"

// run is upstream's migration runner for one resource: finished migrations have their
// Running condition closed (and their CRD's status settled), and the next waiting one
// starts when none runs.
func (r *Reconciler) run(ctx context.Context, gr metav1.GroupResource) (reconcile.Result, error) {
	list := &svmv1.StorageVersionMigrationList{}
	if err := r.Client.List(ctx, list); err != nil {
		return reconcile.Result{}, err
	}
	closing, start := turns(list.Items, gr)
	for _, svm := range closing {
		if err := r.close(ctx, svm.DeepCopy()); err != nil {
			return reconcile.Result{}, err
		}
	}
	if start != nil {
		if err := r.start(ctx, start.DeepCopy()); err != nil {
			return reconcile.Result{}, err
		}
	}
	return reconcile.Result{}, nil
}

// close ends a finished migration: the CRD's status first (its stored versions), then the
// migration's Running condition, false, so that a failed CRD write is retried.
func (r *Reconciler) close(ctx context.Context, svm *svmv1.StorageVersionMigration) error {
	meta.SetStatusCondition(&svm.Status.Conditions, metav1.Condition{Type: string(svmv1.MigrationRunning),
		Status: metav1.ConditionFalse, Reason: reasonCompleted, Message: messageCompleted, ObservedGeneration: svm.Generation})
	success := meta.IsStatusConditionTrue(svm.Status.Conditions, string(svmv1.MigrationSucceeded))
	if err := r.finishCRD(ctx, svm.Spec.Resource, success); err != nil {
		return err
	}
	// Optimistic: the three controllers write this status; each works from what it read.
	return patch.Status(ctx, r.Client, svm)
}

// start marks the resource's CRD, if it is one, StorageMigrating, then the migration Running.
func (r *Reconciler) start(ctx context.Context, svm *svmv1.StorageVersionMigration) error {
	err := r.applyCRDStatus(ctx, svm.Spec.Resource, func(crd crdState) map[string]any {
		return map[string]any{"conditions": []map[string]any{crdCondition(crd, metav1.ConditionTrue, "MigrationRunning",
			fmt.Sprintf("Migration %s is running", svm.Name), r.Clock.Now())}}
	})
	if err != nil {
		return err
	}
	if !addConditionOnce(svm, svmv1.MigrationRunning, reasonRunning, runningMessage(nil, nil), metav1.NewTime(r.Clock.Now())) {
		return nil
	}
	return patch.Status(ctx, r.Client, svm)
}

// finishCRD settles the CRD's status after a migration (crdFinish).
func (r *Reconciler) finishCRD(ctx context.Context, gr metav1.GroupResource, success bool) error {
	return r.applyCRDStatus(ctx, gr, func(crd crdState) map[string]any {
		reason, message, stored := crdFinish(crd, success)
		status := map[string]any{"conditions": []map[string]any{crdCondition(crd, metav1.ConditionFalse, reason, message, r.Clock.Now())}}
		if stored != nil {
			status["storedVersions"] = stored
		}
		return status
	})
}

// applyCRDStatus applies the status built from the resource's CRD, read live, pinned to the
// version read (the status depends on its generation and storage version) and retried on a
// conflict, as upstream. A resource without a CRD (built in, aggregated) has nothing to do.
func (r *Reconciler) applyCRDStatus(ctx context.Context, gr metav1.GroupResource, status func(crdState) map[string]any) error {
	name := gr.Resource + "." + gr.Group
	return retry.RetryOnConflict(retry.DefaultRetry, func() error {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(crdGVK)
		if err := r.CRDs.Get(ctx, client.ObjectKey{Name: name}, u); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}
		crd := readCRD(u)
		apiVersion, kind := crdGVK.ToAPIVersionAndKind()
		p, err := patch.ServerSideApply(map[string]any{
			"apiVersion": apiVersion,
			"kind":       kind,
			"metadata":   map[string]any{"name": crd.Name, "resourceVersion": crd.ResourceVersion},
			"status":     status(crd),
		})
		if err != nil {
			return err
		}
		return r.CRDs.Status().Patch(ctx, u, p, client.FieldOwner(runnerFieldManager), client.ForceOwnership)
	})
}

func crdCondition(crd crdState, status metav1.ConditionStatus, reason, message string, now time.Time) map[string]any {
	return map[string]any{
		"type":               storageMigrating,
		"status":             string(status),
		"lastTransitionTime": now.UTC().Format(time.RFC3339),
		"reason":             reason,
		"message":            message,
		"observedGeneration": crd.Generation,
	}
}

// readCRD takes what the runner needs from a CustomResourceDefinition.
func readCRD(u *unstructured.Unstructured) crdState {
	crd := crdState{Name: u.GetName(), ResourceVersion: u.GetResourceVersion(), Generation: u.GetGeneration()}
	versions, _, _ := unstructured.NestedSlice(u.Object, "spec", "versions")
	for _, v := range versions {
		m, _ := v.(map[string]any)
		if storage, _ := m["storage"].(bool); storage {
			crd.StorageVersion, _ = m["name"].(string)
			break
		}
	}
	conditions, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	for _, c := range conditions {
		m, _ := c.(map[string]any)
		if m["type"] == storageMigrating {
			crd.HasMigrating = true
			crd.MigratingGeneration, _, _ = unstructured.NestedInt64(m, "observedGeneration")
		}
	}
	return crd
}
