package replicaset

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/owned"
	"github.com/kcm/kcm/internal/pod"
)

// podHandler maps pod events to the owners to sync, as upstream's pod event handlers do, and
// records the creations and deletions the owners' expectations wait for.
func (r *Reconciler) podHandler() *owned.PodHandler {
	return &owned.PodHandler{
		Reader:   r.Client,
		OwnerGVK: r.Kind.GVK,
		NewOwner: r.Kind.New,
		Adopters: func(ctx context.Context, ns string) ([]owned.Adopter, error) {
			owners, err := r.Kind.List(ctx, r.Client, ns)
			out := make([]owned.Adopter, len(owners))
			for i, rs := range owners {
				out[i] = owned.Adopter{Key: client.ObjectKeyFromObject(rs), Selector: rs.Spec.Selector}
			}
			return out, err
		},
		Created: r.expectations.CreationObserved,
		Deleted: func(owner types.NamespacedName, p *corev1.Pod, _ bool) {
			r.expectations.DeletionObserved(owner, pod.Key(p))
		},
		// Upstream's ReplicaSet controller: a pod relabelled as its deletion begins may have
		// been counted by the owner its old labels named.
		DeleteOldOnRelabel: true,
	}
}
