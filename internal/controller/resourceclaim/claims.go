package resourceclaim

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// claimReconciler releases a claim's stale reservations, deallocates a claim no longer used,
// and deletes a claim generated for a pod that is done.
type claimReconciler struct{ *Reconciler }

// Reconcile observes the claim's pod reservations, keeps those of pods that may still run,
// writes the claim's release (deallocated when none remains), removes the built-in finalizer
// when nothing is allocated any more, then deletes an unused claim whose pod is done.
// Updates, not patches: a claim changed meanwhile (the scheduler reserving it) must fail the
// write, as upstream.
func (r claimReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	claim := &resourceapi.ResourceClaim{}
	if err := r.Client.Get(ctx, req.NamespacedName, claim); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	remaining, err := r.remainingReservations(ctx, claim)
	if err != nil {
		return reconcile.Result{}, err
	}

	hasFinalizer := slices.Contains(claim.Finalizers, resourceapi.Finalizer)
	switch {
	case len(remaining) < len(claim.Status.ReservedFor):
		released := release(claim, remaining)
		if err := r.Client.Status().Update(ctx, released); err != nil {
			return reconcile.Result{}, err
		}
		log.FromContext(ctx).V(5).Info("Removed consumers", "currentCount", len(released.Status.ReservedFor), "allocated", released.Status.Allocation != nil)
		if err := r.removeFinalizer(ctx, released); err != nil {
			return reconcile.Result{}, err
		}
	case hasFinalizer && claim.DeletionTimestamp != nil && len(remaining) == 0:
		// A claim that stopped being used but stayed allocated, then got deleted: its
		// devices are freed before the finalizer goes.
		if claim.Status.Allocation != nil {
			claim.Status.Allocation = nil
			if err := r.Client.Status().Update(ctx, claim); err != nil {
				return reconcile.Result{}, err
			}
			log.FromContext(ctx).V(5).Info("Removed allocation because not needed")
		}
		if err := r.removeFinalizer(ctx, claim); err != nil {
			return reconcile.Result{}, err
		}
	}

	if len(remaining) > 0 {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.deleteIfPodDone(ctx, claim)
}

// remainingReservations are the claim's reservedFor entries that stay: a pod the controller
// saw deleted goes; a cached pod is judged by its UID and phase; a pod absent from the cache
// is read live, since removing the reservation of a pod the scheduler is placing (and the
// cache does not show yet) would be wrong. Other consumers stay.
func (r claimReconciler) remainingReservations(ctx context.Context, claim *resourceapi.ResourceClaim) ([]resourceapi.ResourceClaimConsumerReference, error) {
	remaining := make([]resourceapi.ResourceClaimConsumerReference, 0, len(claim.Status.ReservedFor))
	for _, ref := range claim.Status.ReservedFor {
		if !isPodReservation(ref) {
			remaining = append(remaining, ref)
			continue
		}
		known, p, err := r.knowledgeOf(ctx, claim.Namespace, ref)
		if err != nil {
			return nil, err
		}
		if keepReservation(ref, known, p) {
			remaining = append(remaining, ref)
		} else {
			log.FromContext(ctx).V(6).Info("Remove reservation", "pod", ref.Name, "podUID", ref.UID)
		}
	}
	return remaining, nil
}

// knowledgeOf finds what is known of a reserving pod: seen deleted, in the cache, or read
// live (nil when not found).
func (r claimReconciler) knowledgeOf(ctx context.Context, namespace string, ref resourceapi.ResourceClaimConsumerReference) (podKnowledge, *corev1.Pod, error) {
	if _, seen := r.deleted.Get(ref.UID); seen {
		return podSeenDeleted, nil, nil
	}
	key := types.NamespacedName{Namespace: namespace, Name: ref.Name}
	p := &corev1.Pod{}
	err := r.Client.Get(ctx, key, p)
	switch {
	case err == nil:
		return podCached, p, nil
	case !apierrors.IsNotFound(err):
		return podCached, nil, err
	}
	if err := r.APIReader.Get(ctx, key, p); err != nil {
		if apierrors.IsNotFound(err) {
			return podLive, nil, nil
		}
		return podLive, nil, err
	}
	return podLive, p, nil
}

// removeFinalizer removes the built-in finalizer of a claim no longer allocated.
func (r claimReconciler) removeFinalizer(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	updated := withoutFinalizer(claim)
	if updated == nil {
		return nil
	}
	if err := r.Client.Update(ctx, updated); err != nil {
		return err
	}
	log.FromContext(ctx).V(5).Info("Removed finalizer")
	return nil
}

// deleteIfPodDone deletes an unreserved claim generated for a pod that is done or was
// replaced: normally the garbage collector does that, but the pod itself may stay for a
// while. A pod the cache does not know is left to the garbage collector.
func (r claimReconciler) deleteIfPodDone(ctx context.Context, claim *resourceapi.ResourceClaim) error {
	name, uid := owningPod(claim)
	if name == "" {
		return nil
	}
	p := &corev1.Pod{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: claim.Namespace, Name: name}, p); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("lookup pod: %v", err)
	}
	if p.UID == uid && !isPodDone(p) {
		return nil
	}
	if err := r.Client.Delete(ctx, claim); client.IgnoreNotFound(err) != nil {
		return fmt.Errorf("delete unused generated claim %s/%s: %w", claim.Namespace, claim.Name, err)
	}
	log.FromContext(ctx).V(5).Info("Deleted unused generated claim", "pod", name)
	return nil
}
