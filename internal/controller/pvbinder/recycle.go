package pvbinder

import (
	"context"
	"fmt"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

// Event reasons of recycling (pkg/controller/volume/events).
const (
	ReasonVolumeRecycled = "VolumeRecycled"
	ReasonRecyclerPod    = "RecyclerPod"
)

// WatchPodEvents watches the core/v1 Events of the named pod. The binder's role may watch
// Events but not list them, so the recycler pod's Events are followed by a watch of their
// own, as upstream's recycler client does, rather than by the shared cache.
type WatchPodEvents func(ctx context.Context, namespace, pod string) (watch.Interface, error)

// recycling is the binder's memory of the recycler pods it started, by volume name: a pod
// of that name it did not start (an earlier kcm's, or a forged one) is deleted rather than
// trusted, as upstream does when its create finds the name taken.
type recycling struct {
	mu   sync.Mutex
	pods map[string]*recyclerRun
}

type recyclerRun struct {
	uid types.UID
	// stop ends the forwarding of the pod's Events.
	stop context.CancelFunc
}

func (rc *recycling) get(volume string) *recyclerRun {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.pods[volume]
}

func (rc *recycling) put(volume string, run *recyclerRun) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.pods == nil {
		rc.pods = map[string]*recyclerRun{}
	}
	rc.pods[volume] = run
}

func (rc *recycling) end(volume string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if run := rc.pods[volume]; run != nil {
		run.stop()
		delete(rc.pods, volume)
	}
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
	pods, claimCached, err := r.podsUsing(ctx, live)
	if err != nil {
		log.FromContext(ctx).V(3).Info("Can't recycle volume", "err", err)
		return nil
	}
	if len(pods) > 0 && !claimCached {
		r.Recorder.Eventf(live, nil, corev1.EventTypeNormal, ReasonVolumeFailedRecycle, "Recycling",
			"Volume is used by pods: %s", strings.Join(pods, ","))
		return nil
	}
	pod := r.Recyclers.recyclerPod(live)
	if pod == nil {
		_, err := r.updateVolumePhaseWithEvent(ctx, live, corev1.VolumeFailed, corev1.EventTypeWarning, ReasonVolumeFailedRecycle,
			"No recycler plugin found for the volume!")
		return err
	}
	return r.startRecycler(ctx, live, pod)
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
				r.Recorder.Eventf(v, nil, ev.Type, ReasonRecyclerPod, "Recycling", "Recycler pod: %s", ev.Message)
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
	r.Recorder.Eventf(v, nil, corev1.EventTypeNormal, ReasonVolumeRecycled, "Recycling", "Volume recycled")
	return r.unbindVolume(ctx, v)
}

// failRecycle marks the volume Failed with upstream's VolumeFailedRecycle (the Event only
// when it becomes Failed); the next sync recycles it again.
func (r *volumeReconciler) failRecycle(ctx context.Context, v *corev1.PersistentVolume, err error) error {
	_, uerr := r.updateVolumePhaseWithEvent(ctx, v, corev1.VolumeFailed, corev1.EventTypeWarning, ReasonVolumeFailedRecycle,
		fmt.Sprintf("Recycle failed: %s", err))
	return uerr
}

// namespaceOf is the namespace of the volume's recycler pod: its template's.
func (rs *Recyclers) namespaceOf(v *corev1.PersistentVolume) string {
	if v.Spec.NFS != nil {
		return rs.NFS.Template.Namespace
	}
	return rs.HostPath.Template.Namespace
}

// recyclerPodsToVolume maps a recycler pod to the volume it scrubs, so that its progress
// brings the volume's sync back.
func recyclerPodsToVolume(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := strings.CutPrefix(obj.GetName(), "recycler-for-")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
