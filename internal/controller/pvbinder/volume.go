package pvbinder

import (
	"context"
	"fmt"
	"os"
	"regexp"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/storagemetrics"
)

// volumeReconciler syncs one volume: upstream's syncVolume, as observe, decideVolume
// (decide.go), apply; a Recycle reclaim runs the volume's recycler pod to its end.
type volumeReconciler struct{ *Binder }

func (r *volumeReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	v := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, req.NamespacedName, v); err != nil {
		if apierrors.IsNotFound(err) {
			// The volume is gone: its deletion, if timed, has ended.
			r.operations.record(req.Name, nil)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	in := volumeInput{Volume: v}
	if ref := v.Spec.ClaimRef; ref != nil && ref.UID != "" {
		var err error
		if in.Claim, err = r.claimOf(ctx, v); err != nil {
			return r.done(ctx, err)
		}
	}
	return r.done(ctx, r.apply(ctx, in, decideVolume(in)))
}

// apply carries out the volume's plan; the volume is written by writeVolume only.
func (r *volumeReconciler) apply(ctx context.Context, in volumeInput, p volumePlan) error {
	v := in.Volume
	if p.Anneal != nil {
		var err error
		if v, err = r.writeVolume(ctx, v, volumeWrite{Edit: p.Anneal}); err != nil {
			return fmt.Errorf("persistent Volume Controller can't anneal migration annotations or finalizer: %w", err)
		}
	}
	r.record(v, p.Events...)
	if in.Claim != nil {
		r.record(in.Claim, p.ClaimEvents...)
	}
	if p.Unbind != nil {
		return r.unbind(ctx, v, p.Unbind)
	}
	if p.Phase == corev1.VolumeReleased {
		log.FromContext(ctx).V(2).Info("Volume is released and reclaim policy will be executed", "reclaimPolicy", v.Spec.PersistentVolumeReclaimPolicy)
	}
	v, err := r.writeVolume(ctx, v, volumeWrite{Phase: p.Phase})
	if err != nil || p.Reclaim == nil {
		return err
	}
	return r.reclaim(ctx, v, p.Reclaim)
}

// volumeWrite is one write of a volume: Edit's annotations, finalizers and spec, then the
// phase (with Message). With a Failure the phase is Failed, its message the failure's, and
// its Event reports the change; a phase is written only when it changes.
type volumeWrite struct {
	Edit    *corev1.PersistentVolume
	Phase   corev1.PersistentVolumePhase
	Failure *failure
}

// writeVolume is the one place a volume is written: by update, as upstream, each write from
// the volume as last written; the API server stamps lastPhaseTransitionTime.
func (b *Binder) writeVolume(ctx context.Context, v *corev1.PersistentVolume, w volumeWrite) (*corev1.PersistentVolume, error) {
	if w.Edit != nil {
		clone, edit := v.DeepCopy(), w.Edit.DeepCopy()
		clone.Annotations, clone.Finalizers, clone.Spec = edit.Annotations, edit.Finalizers, edit.Spec
		if err := b.Client.Update(ctx, clone); err != nil {
			return v, err
		}
		log.FromContext(ctx).V(2).Info("Updated the volume", "volume", v.Name)
		v = clone
	}
	message := ""
	if w.Failure != nil {
		w.Phase, message = corev1.VolumeFailed, w.Failure.Message
	}
	if w.Phase == "" || v.Status.Phase == w.Phase {
		return v, nil
	}
	clone := v.DeepCopy()
	clone.Status.Phase = w.Phase
	clone.Status.Message = message
	if err := b.Client.Status().Update(ctx, clone); err != nil {
		return v, fmt.Errorf("updating phase of volume %s: %w", v.Name, err)
	}
	log.FromContext(ctx).V(2).Info("Volume entered phase", "volume", v.Name, "phase", w.Phase)
	if w.Failure != nil {
		b.record(clone, w.Failure.Event)
	}
	return clone, nil
}

// unbind writes the volume without its binding, then makes it Available again.
func (r *volumeReconciler) unbind(ctx context.Context, v, unbound *corev1.PersistentVolume) error {
	if _, err := r.writeVolume(ctx, v, volumeWrite{Edit: unbound, Phase: corev1.VolumeAvailable}); err != nil {
		return fmt.Errorf("rolling back the binding of volume %s: %w", v.Name, err)
	}
	return nil
}

// fail moves the volume to Failed; the Event only when it becomes Failed.
func (r *volumeReconciler) fail(ctx context.Context, v *corev1.PersistentVolume, f *failure) error {
	_, err := r.writeVolume(ctx, v, volumeWrite{Failure: f})
	return err
}

// claimOf returns the claim the volume's claimRef names, nil when it no longer exists (or
// was re-created with another UID). A claim the cache does not show, or shows with another
// UID, is read from the API server before the volume is released: an external provisioner
// or the scheduler may have bound the volume to a claim the cache has not seen yet.
func (r *volumeReconciler) claimOf(ctx context.Context, v *corev1.PersistentVolume) (*corev1.PersistentVolumeClaim, error) {
	ref := v.Spec.ClaimRef
	key := types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}
	claim := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, key, claim)
	switch {
	case err != nil && !apierrors.IsNotFound(err):
		return nil, err
	case err == nil && claim.UID == ref.UID:
		return claim, nil
	case err != nil && (v.Status.Phase == corev1.VolumeReleased || v.Status.Phase == corev1.VolumeFailed):
		return nil, nil
	}
	if err := r.APIReader.Get(ctx, key, claim); err != nil {
		return nil, client.IgnoreNotFound(err)
	}
	if claim.UID != ref.UID {
		return nil, nil
	}
	return claim, nil
}

// reclaim applies the reclaim policy of a released volume (decideReclaim).
func (r *volumeReconciler) reclaim(ctx context.Context, v *corev1.PersistentVolume, rc *reclaim) error {
	switch {
	case rc.Fail != nil:
		return r.fail(ctx, v, rc.Fail)
	case rc.Recycle:
		return r.recycle(ctx, v)
	}
	// Timed until the volume is gone, whoever deletes it; an error counts.
	r.operations.start(v.Name, r.deleterName(ctx, v), "delete")
	err := r.deleteVolume(ctx, v, rc)
	if err != nil {
		r.operations.record(v.Name, err)
	}
	return err
}

var hostPathDeletable = regexp.MustCompile("/tmp/.+")

// deleteVolume is upstream's deleteVolumeOperation with kcm's one plugin, hostPath (which
// only deletes under /tmp, for testing, as upstream's): the storage, then the in-tree
// finalizer, then the volume.
func (r *volumeReconciler) deleteVolume(ctx context.Context, v *corev1.PersistentVolume, rc *reclaim) error {
	if rc.DeleterErr != nil {
		return r.fail(ctx, v, failed(ReasonVolumeFailedDelete, rc.DeleterErr.Error()))
	}
	if rc.Deleter == "" {
		log.FromContext(ctx).V(3).Info("External deleter for volume requested, ignoring")
		return nil
	}
	if err := deleteHostPath(v); err != nil {
		if uerr := r.fail(ctx, v, failed(ReasonVolumeFailedDelete, err.Error())); uerr != nil {
			return uerr
		}
		return err
	}
	if rc.Unprotect != nil {
		var err error
		if v, err = r.writeVolume(ctx, v, volumeWrite{Edit: rc.Unprotect}); err != nil {
			return err
		}
	}
	return client.IgnoreNotFound(r.Client.Delete(ctx, v, client.Preconditions{UID: &v.UID}))
}

// deleteHostPath removes a hostPath volume's directory: the plugin's deletion, refused or
// done, is one volume_delete operation.
func deleteHostPath(v *corev1.PersistentVolume) error {
	if v.Spec.HostPath == nil {
		return fmt.Errorf("failed to create deleter for volume %q: spec.PersistentVolumeSource.HostPath is nil", v.Name)
	}
	start := time.Now()
	var err error
	if path := v.Spec.HostPath.Path; !hostPathDeletable.MatchString(path) {
		err = fmt.Errorf("host_path deleter only supports /tmp/.+ but received provided %s", path)
	} else {
		err = os.RemoveAll(path)
	}
	storagemetrics.RecordOperation(hostPathPlugin, "volume_delete", time.Since(start).Seconds(), err != nil, false)
	return err
}

// recycle is upstream's recycleVolumeOperation, level-based: the first sync of a released
// volume starts its recycler pod; the pod's changes bring the volume back until the pod
// finished, then the pod is deleted and the volume made Available (VolumeRecycled) or
// Failed (VolumeFailedRecycle). A Failed volume is recycled again on its next sync, as
// upstream.
func (r *volumeReconciler) recycle(ctx context.Context, v *corev1.PersistentVolume) error {
	if run := r.recycling.get(v.Name); run != nil {
		return r.watchRecycler(ctx, v, run)
	}
	// Scrubbing is destructive: check on the API server's copy that the volume is still
	// released, as upstream does before it starts.
	live := &corev1.PersistentVolume{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: v.Name}, live); err != nil {
		log.FromContext(ctx).V(3).Info("Error reading persistent volume", "err", err)
		return nil
	}
	if released, err := r.released(ctx, live); err != nil || !released {
		log.FromContext(ctx).V(3).Info("Volume no longer needs recycling, skipping", "err", err)
		return nil
	}
	pods, claimExists, err := r.podsUsing(ctx, live)
	if err != nil {
		log.FromContext(ctx).V(3).Info("Can't recycle volume", "err", err)
		return nil
	}
	start := decideRecycle(live, pods, claimExists, r.Recyclers)
	switch {
	case start.Used != nil:
		r.record(live, *start.Used)
		return nil
	case start.Fail != nil:
		return r.fail(ctx, live, start.Fail)
	}
	return r.startRecycler(ctx, live, start.Pod)
}

// released is upstream's isVolumeReleased: the volume names a claim (by UID) that is gone,
// re-created, or bound to another volume.
func (r *volumeReconciler) released(ctx context.Context, v *corev1.PersistentVolume) (bool, error) {
	ref := v.Spec.ClaimRef
	if ref == nil || ref.UID == "" {
		return false, nil
	}
	claim := &corev1.PersistentVolumeClaim{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, claim)
	switch {
	case apierrors.IsNotFound(err):
		return true, nil
	case err != nil:
		return false, err
	case claim.UID != ref.UID:
		return true, nil
	}
	return claim.Spec.VolumeName != "" && claim.Spec.VolumeName != v.Name, nil
}

// podsUsing is upstream's isVolumeUsed: the running pods (namespace/name, sorted) that use
// the claim the volume names, and whether a claim of that name exists (then it is a new
// claim, bound elsewhere, and its pods do not use this volume).
func (r *volumeReconciler) podsUsing(ctx context.Context, v *corev1.PersistentVolume) ([]string, bool, error) {
	ref := v.Spec.ClaimRef
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(ref.Namespace), client.MatchingFields{index.PodClaimName: ref.Name}); err != nil {
		return nil, false, fmt.Errorf("error finding pods by pvc %q: %w", ref.Namespace+"/"+ref.Name, err)
	}
	names := sets.New[string]()
	for i := range pods.Items {
		if p := &pods.Items[i]; !podTerminated(p) {
			names.Insert(p.Namespace + "/" + p.Name)
		}
	}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, &corev1.PersistentVolumeClaim{})
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, false, err
	}
	return sets.List(names), err == nil, nil
}

// startRecycler follows the pod's Events, then creates the pod. A pod of that name the
// binder did not start is deleted, and the recycle fails until it is gone.
func (r *volumeReconciler) startRecycler(ctx context.Context, v *corev1.PersistentVolume, pod *corev1.Pod) error {
	forward, stop := context.WithCancel(ctx)
	events, err := r.WatchRecyclerEvents(forward, pod.Namespace, pod.Name)
	if err != nil {
		stop()
		return r.failRecycle(ctx, v, err)
	}
	go r.forwardRecyclerEvents(forward, v, events)

	if err := r.Client.Create(ctx, pod); err != nil {
		stop()
		if apierrors.IsAlreadyExists(err) {
			old := &corev1.Pod{}
			old.Namespace, old.Name = pod.Namespace, pod.Name
			if err := r.Client.Delete(ctx, old); err != nil && !apierrors.IsNotFound(err) {
				return r.failRecycle(ctx, v, fmt.Errorf("failed to delete old recycler pod %s/%s: %s", pod.Namespace, pod.Name, err))
			}
			return r.failRecycle(ctx, v, fmt.Errorf("old recycler pod found, will retry later"))
		}
		return r.failRecycle(ctx, v, fmt.Errorf("unexpected error creating recycler pod:  %+v", err))
	}
	log.FromContext(ctx).V(2).Info("Started the recycler pod", "pod", client.ObjectKeyFromObject(pod))
	r.recycling.put(v.Name, &recyclerRun{uid: pod.UID, stop: stop})
	return nil
}

// forwardRecyclerEvents reports each new Event of the recycler pod on the volume, as
// upstream: "Recycler pod: <message>" with the Event's type.
func (r *volumeReconciler) forwardRecyclerEvents(ctx context.Context, v *corev1.PersistentVolume, w watch.Interface) {
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case e, ok := <-w.ResultChan():
			if !ok {
				return
			}
			if ev, isEvent := e.Object.(*corev1.Event); isEvent && e.Type == watch.Added {
				r.record(v, notice{Type: ev.Type, Reason: ReasonRecyclerPod, Action: "Recycling", Format: "Recycler pod: %s", Args: []any{ev.Message}})
			}
		}
	}
}

// watchRecycler waits for the recycler pod to finish, then deletes it and makes the volume
// Available again, or Failed with the pod's failure.
func (r *volumeReconciler) watchRecycler(ctx context.Context, v *corev1.PersistentVolume, run *recyclerRun) error {
	key := types.NamespacedName{Namespace: r.Recyclers.namespaceOf(v), Name: recyclerPodName(v.Name)}
	pod := &corev1.Pod{}
	err := r.Client.Get(ctx, key, pod)
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	if err != nil || pod.UID != run.uid {
		// The cache may not show the pod yet: only the API server says it is gone.
		if err := r.APIReader.Get(ctx, key, pod); err != nil && !apierrors.IsNotFound(err) {
			return err
		} else if err == nil && pod.UID == run.uid {
			return nil
		}
		r.recycling.end(v.Name)
		return r.failRecycle(ctx, v, fmt.Errorf("failed to recycle volume: recycler pod was deleted"))
	}
	done, podErr := recyclerOutcome(pod)
	if !done {
		return nil
	}
	r.recycling.end(v.Name)
	deleteErr := client.IgnoreNotFound(r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}))
	if deleteErr != nil {
		log.FromContext(ctx).Error(deleteErr, "Failed to delete the recycler pod", "pod", key)
	}
	switch {
	case podErr != nil:
		return r.failRecycle(ctx, v, fmt.Errorf("failed to recycle volume: %s", podErr))
	case deleteErr != nil:
		return r.failRecycle(ctx, v, fmt.Errorf("failed to delete recycler pod: %s", deleteErr))
	}
	log.FromContext(ctx).V(2).Info("Volume recycled")
	r.record(v, normal(ReasonVolumeRecycled, "Recycling", "Volume recycled"))
	return r.unbind(ctx, v, unbound(v))
}

// failRecycle marks the volume Failed with upstream's VolumeFailedRecycle (the Event only
// when it becomes Failed); the next sync recycles it again.
func (r *volumeReconciler) failRecycle(ctx context.Context, v *corev1.PersistentVolume, err error) error {
	return r.fail(ctx, v, failed(ReasonVolumeFailedRecycle, fmt.Sprintf("Recycle failed: %s", err)))
}
