// Package ownership decides which objects an owner controls, as upstream's
// ControllerRefManager does: it adopts orphans that match the owner's selector and releases
// owned objects that no longer match, by patching their ownerReferences.
package ownership

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Claimer claims objects for one owner.
type Claimer struct {
	// Client patches the claimed objects.
	Client client.Client
	// Fresh reads the owner from the API server, bypassing the cache, before the first
	// adoption: an owner that is gone or being deleted must not adopt.
	Fresh    client.Reader
	Owner    client.Object
	OwnerGVK schema.GroupVersionKind
	Selector labels.Selector

	once     sync.Once
	adoptErr error
}

// Claim returns the objects the owner controls after adopting matching orphans and
// releasing owned objects that stopped matching. Objects controlled by another owner are
// never touched. Errors other than "the object is gone" are returned along with what was
// claimed so far. objs may be the cache's own objects (listed without copies): one that is
// adopted or released is copied first, and an adopted one is returned as patched.
func Claim[T client.Object](ctx context.Context, c *Claimer, objs []T) ([]T, error) {
	var claimed []T
	var errs []error
	for _, obj := range objs {
		kept, err := c.claim(ctx, obj)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if kept != nil {
			claimed = append(claimed, kept.(T))
		}
	}
	if len(errs) > 0 {
		return claimed, fmt.Errorf("claiming %d of %d objects failed, first: %w", len(errs), len(objs), errs[0])
	}
	return claimed, nil
}

// claim returns obj when the owner controls it, its patched copy when adopted, or nil.
func (c *Claimer) claim(ctx context.Context, obj client.Object) (client.Object, error) {
	matches := c.Selector.Matches(labels.Set(obj.GetLabels()))
	ownerDeleting := c.Owner.GetDeletionTimestamp() != nil
	if ref := metav1.GetControllerOfNoCopy(obj); ref != nil {
		if ref.UID != c.Owner.GetUID() {
			return nil, nil
		}
		if matches {
			return obj, nil
		}
		// An owner being deleted keeps its objects so that they are deleted with it.
		if ownerDeleting {
			return nil, nil
		}
		return nil, c.release(ctx, obj.DeepCopyObject().(client.Object))
	}
	if ownerDeleting || !matches || obj.GetDeletionTimestamp() != nil || obj.GetNamespace() != c.Owner.GetNamespace() {
		return nil, nil
	}
	adopted := obj.DeepCopyObject().(client.Object)
	if err := c.adopt(ctx, adopted); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return adopted, nil
}

func (c *Claimer) canAdopt(ctx context.Context) error {
	c.once.Do(func() {
		fresh := c.Owner.DeepCopyObject().(client.Object)
		if err := c.Fresh.Get(ctx, client.ObjectKeyFromObject(c.Owner), fresh); err != nil {
			c.adoptErr = err
			return
		}
		if fresh.GetUID() != c.Owner.GetUID() {
			c.adoptErr = fmt.Errorf("original %s %s is gone: got uid %s, wanted %s",
				c.OwnerGVK.Kind, client.ObjectKeyFromObject(c.Owner), fresh.GetUID(), c.Owner.GetUID())
			return
		}
		if fresh.GetDeletionTimestamp() != nil {
			c.adoptErr = fmt.Errorf("%s %s has just been deleted at %v",
				c.OwnerGVK.Kind, client.ObjectKeyFromObject(c.Owner), fresh.GetDeletionTimestamp())
		}
	})
	return c.adoptErr
}

func (c *Claimer) adopt(ctx context.Context, obj client.Object) error {
	if err := c.canAdopt(ctx); err != nil {
		return fmt.Errorf("can't adopt %s: %w", client.ObjectKeyFromObject(obj), err)
	}
	ref := metav1.NewControllerRef(c.Owner, c.OwnerGVK)
	patch, err := ownerRefPatch(obj.GetUID(), map[string]any{
		"apiVersion": ref.APIVersion, "kind": ref.Kind, "name": ref.Name, "uid": ref.UID,
		"controller": true, "blockOwnerDeletion": true,
	})
	if err != nil {
		return err
	}
	if err := c.Client.Patch(ctx, obj, client.RawPatch(types.StrategicMergePatchType, patch)); err != nil {
		return err
	}
	log.FromContext(ctx).V(2).Info("Adopted object", "object", client.ObjectKeyFromObject(obj))
	return nil
}

func (c *Claimer) release(ctx context.Context, obj client.Object) error {
	patch, err := ownerRefPatch(obj.GetUID(), map[string]any{"$patch": "delete", "uid": c.Owner.GetUID()})
	if err != nil {
		return err
	}
	err = c.Client.Patch(ctx, obj, client.RawPatch(types.StrategicMergePatchType, patch))
	// Gone, or its UID changed (the patch names the UID, so a recreated object is Invalid):
	// either way there is nothing left to release.
	if apierrors.IsNotFound(err) || apierrors.IsInvalid(err) {
		return nil
	}
	if err == nil {
		log.FromContext(ctx).V(2).Info("Released object", "object", client.ObjectKeyFromObject(obj))
	}
	return err
}

// ownerRefPatch is a strategic merge patch of one ownerReference, pinned to the object's UID
// so it never applies to a recreated object of the same name.
func ownerRefPatch(objUID types.UID, ref map[string]any) ([]byte, error) {
	return json.Marshal(map[string]any{
		"metadata": map[string]any{
			"ownerReferences": []any{ref},
			"uid":             objUID,
		},
	})
}
