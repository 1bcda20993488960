package ownership

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Controller reads into owner (an empty object of kind gvk) the object that controls obj,
// as upstream's resolveControllerRef: obj's controller reference must name gvk's group and
// kind, and an object of that name must exist with the UID the reference names (an owner
// recreated under the same name is another owner). c is usually the cache.
func Controller[T client.Object](ctx context.Context, c client.Reader, obj metav1.Object, gvk schema.GroupVersionKind, owner T) (T, bool) {
	ref := metav1.GetControllerOfNoCopy(obj)
	if ref == nil || ref.Kind != gvk.Kind {
		return owner, false
	}
	if gv, err := schema.ParseGroupVersion(ref.APIVersion); err != nil || gv.Group != gvk.Group {
		return owner, false
	}
	key := types.NamespacedName{Namespace: obj.GetNamespace(), Name: ref.Name}
	if err := c.Get(ctx, key, owner); err != nil || owner.GetUID() != ref.UID {
		return owner, false
	}
	return owner, true
}
