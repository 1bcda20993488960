package owned

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/index"
)

// List lists from c (the cache), through the ControllerUID index, the objects of owner's
// namespace that owner controls and the orphans it may adopt: the candidates it claims.
// newList returns an empty list of the children's kind, whose items are T. A caller that
// only reads the children (and copies one before changing it) passes
// client.UnsafeDisableDeepCopy, as upstream's listers share the cache's objects: a deep
// copy of every child every sync was a fifth of what kcm allocated creating 10,000 pods
// (issue 24). Such items are shallow copies whose maps, slices and pointers are the cache's.
func List[T client.Object](ctx context.Context, c client.Reader, owner metav1.Object, newList func() client.ObjectList, opts ...client.ListOption) (controlled, orphans []T, err error) {
	for _, key := range []string{string(owner.GetUID()), index.Orphan} {
		list := newList()
		listOpts := append([]client.ListOption{client.InNamespace(owner.GetNamespace()), client.MatchingFields{index.ControllerUID: key}}, opts...)
		if err := c.List(ctx, list, listOpts...); err != nil {
			return nil, nil, err
		}
		var items []T
		if err := meta.EachListItem(list, func(o runtime.Object) error {
			items = append(items, o.(T))
			return nil
		}); err != nil {
			return nil, nil, err
		}
		if key == index.Orphan {
			orphans = items
		} else {
			controlled = items
		}
	}
	return controlled, orphans, nil
}

// Pods is List for pods, the controlled ones first.
func Pods(ctx context.Context, c client.Reader, owner metav1.Object, opts ...client.ListOption) ([]*corev1.Pod, error) {
	controlled, orphans, err := List[*corev1.Pod](ctx, c, owner, func() client.ObjectList { return &corev1.PodList{} }, opts...)
	return append(controlled, orphans...), err
}
