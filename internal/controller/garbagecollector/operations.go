package garbagecollector

import (
	"context"
	"errors"
	"fmt"
	"reflect"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"
)

var (
	// errClusterScopedDependentOfNamespacedOwner: a cluster-scoped object cannot refer to a
	// namespaced owner; retrying will not fix it.
	errClusterScopedDependentOfNamespacedOwner = errors.New("cluster-scoped objects cannot refer to namespaced owners")
	// errVirtualDeleted: the item was found gone and the graph told; nothing left to do.
	errVirtualDeleted = errors.New("item not found; the graph was told")
)

// restMappingError: a kind no API serves (yet: a custom resource not discovered, or a typo
// in a reference). Upstream retries quietly.
type restMappingError struct {
	gvk schema.GroupVersionKind
	err error
}

func (e *restMappingError) Error() string {
	return fmt.Sprintf("unable to get REST mapping for %s: %v", e.gvk, e.err)
}

func (e *restMappingError) Unwrap() error { return e.err }

// resource resolves a kind to its resource and scope.
func (r *Reconciler) resource(gvk schema.GroupVersionKind) (schema.GroupVersionResource, bool, error) {
	m, err := r.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return schema.GroupVersionResource{}, false, &restMappingError{gvk: gvk, err: err}
	}
	return m.Resource, m.Scope.Name() == meta.RESTScopeNameNamespace, nil
}

// resourceClient is the metadata client for the object id names, with its namespace
// dropped for a cluster-scoped kind.
func (r *Reconciler) resourceClient(id objectRef) (metadata.ResourceInterface, bool, error) {
	gvr, namespaced, err := r.resource(id.GVK())
	if err != nil {
		return nil, false, err
	}
	if !namespaced {
		return r.metadata.Resource(gvr), false, nil
	}
	return r.metadata.Resource(gvr).Namespace(id.Namespace), true, nil
}

// getObject reads the object live.
func (r *Reconciler) getObject(ctx context.Context, id objectRef) (*metav1.PartialObjectMetadata, error) {
	c, namespaced, err := r.resourceClient(id)
	if err != nil {
		return nil, err
	}
	if namespaced && id.Namespace == "" {
		// A virtual node made from a cluster-scoped dependent's reference to a namespaced kind.
		return nil, errClusterScopedDependentOfNamespacedOwner
	}
	return c.Get(ctx, id.Name, metav1.GetOptions{})
}

// deleteObject deletes the item if it still is the object read at resourceVersion (with
// owners). When only something else changed since (a status, a label), the deletion is
// retried without the resourceVersion, as upstream does.
func (r *Reconciler) deleteObject(ctx context.Context, id objectRef, resourceVersion string, owners []metav1.OwnerReference, policy metav1.DeletionPropagation) error {
	c, _, err := r.resourceClient(id)
	if err != nil {
		return err
	}
	pre := metav1.Preconditions{UID: &id.UID}
	if resourceVersion != "" {
		pre.ResourceVersion = &resourceVersion
	}
	err = c.Delete(ctx, id.Name, metav1.DeleteOptions{Preconditions: &pre, PropagationPolicy: &policy})
	if !apierrors.IsConflict(err) || resourceVersion == "" {
		return err
	}
	live, liveErr := c.Get(ctx, id.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(liveErr) {
		return liveErr
	}
	if liveErr == nil && live.UID == id.UID && live.ResourceVersion != resourceVersion && reflect.DeepEqual(live.OwnerReferences, owners) {
		return r.deleteObject(ctx, id, "", nil, policy)
	}
	return err
}

// patchOwnerRefs applies a strategic merge patch to the item, or, where the API server does
// not take one (custom resources), the JSON merge patch mergePatch computes from the live
// object.
func (r *Reconciler) patchOwnerRefs(ctx context.Context, id objectRef, strategic []byte, mergePatch func(*metav1.PartialObjectMetadata) ([]byte, error)) error {
	c, _, err := r.resourceClient(id)
	if err != nil {
		return err
	}
	_, err = c.Patch(ctx, id.Name, types.StrategicMergePatchType, strategic, metav1.PatchOptions{})
	if !apierrors.IsUnsupportedMediaType(err) {
		return err
	}
	return retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		cur, err := c.Get(ctx, id.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if cur.UID != id.UID {
			return apierrors.NewNotFound(schema.GroupResource{Group: id.GVK().Group, Resource: id.Kind}, id.Name)
		}
		patch, err := mergePatch(cur)
		if err != nil {
			return err
		}
		_, err = c.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
}

// removeFinalizer removes finalizer from the live object, retrying on conflicts as upstream.
func (r *Reconciler) removeFinalizer(ctx context.Context, id objectRef, finalizer string) error {
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		c, _, err := r.resourceClient(id)
		if err != nil {
			return err
		}
		cur, err := c.Get(ctx, id.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("cannot finalize owner %s, because cannot get it: %w", id, err)
		}
		if cur.UID != id.UID {
			return nil // another object now; ours is gone
		}
		patch, ok, err := removeFinalizerPatch(cur, finalizer)
		if err != nil || !ok {
			return err
		}
		_, err = c.Patch(ctx, id.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		return err
	})
	if apierrors.IsConflict(err) {
		return fmt.Errorf("removing finalizer %s from %s: still conflicting after %d tries: %w", finalizer, id, retry.DefaultBackoff.Steps, err)
	}
	return err
}
