// Package selinuxwarning is upstream's selinux-warning-controller (off by default, as
// upstream): it warns, by Events and a metric, about pods that use one volume with
// different SELinux labels or SELinuxChangePolicies, since two such pods cannot both use
// the volume on one node when it is mounted with -o context. It changes no object.
//
// As upstream, it keeps every volume of every live pod in memory (conflicts.go), fed one pod
// at a time: a pod is synced when it appears, when it finishes or goes (then forgotten),
// when one of its claims or their volumes gets bound, and when the CSIDriver of one of its
// volumes starts or stops mounting with -o context. Each sync names the pod's volumes as
// upstream's plugins do (volumes.go), decides the label and policy each is used with
// (labels.go), and reports the conflicts that adding the pod causes, on both pods. Like
// upstream's, it looks at all pods, whether or not they run or could share a node.
package selinuxwarning

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/index"
)

const (
	// ControllerName is the controller's name in --controllers and its client's name.
	ControllerName = "selinux-warning-controller"
	// EventSource is the component upstream's Events report.
	EventSource = "selinux_warning"
	// ReasonMultipleLabels is the Warning on a pod whose containers mount one volume with
	// different labels.
	ReasonMultipleLabels = "MultipleSELinuxLabels"
	// eventAction is the action of the controller's Events where the events.k8s.io API
	// requires one (upstream's core/v1 Events carry none).
	eventAction = "Sync"
)

// Reconciler syncs one pod's volumes into the controller's memory of used volumes.
type Reconciler struct {
	// Client reads pods, claims, volumes and CSIDrivers from the shared cache.
	Client   client.Client
	Recorder recorder.EventRecorder

	volumes *volumeCache
}

// Everything is read from the shared cache (kcm's identity); the controller's own identity
// writes only Events, as upstream's role (get, list and watch of pods, claims, volumes and
// CSIDrivers, and Events) allows.
// +kubebuilder:rbac:groups="",resources=pods;persistentvolumeclaims;persistentvolumes,verbs=list;watch
// +kubebuilder:rbac:groups=storage.k8s.io,resources=csidrivers,verbs=list;watch

// Reconcile syncs a live pod's volumes, or forgets a pod that is gone or finished (its
// volumes are being unmounted).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		r.volumes.Delete(req.NamespacedName)
		return reconcile.Result{}, nil
	}
	if p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		r.volumes.Delete(req.NamespacedName)
		return reconcile.Result{}, nil
	}

	// Every volume is resolved, as upstream, so that a claim not yet bound is retried even
	// when no container mounts it; a volume that fails is skipped and the sync retried.
	var errs []error
	specs := map[string]volumeSpec{}
	for i := range p.Spec.Volumes {
		s, err := r.specOf(ctx, p, &p.Spec.Volumes[i])
		if err != nil {
			errs = append(errs, err)
			continue
		}
		specs[p.Spec.Volumes[i].Name] = s
	}
	mounted, opts := mountedVolumes(p)
	for _, name := range mounted {
		s, ok := specs[name]
		if !ok {
			continue
		}
		if err := r.syncVolume(ctx, p, name, s, opts[name]); err != nil {
			errs = append(errs, err)
		}
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// specOf is a pod volume as the plugins see it: the volume itself, or the PersistentVolume
// bound to its claim (a persistentVolumeClaim volume's, or the generic ephemeral volume's
// claim made for this pod), translated to CSI when its in-tree plugin moved to a driver.
func (r *Reconciler) specOf(ctx context.Context, p *corev1.Pod, v *corev1.Volume) (volumeSpec, error) {
	claimName := ""
	switch {
	case v.PersistentVolumeClaim != nil:
		claimName = v.PersistentVolumeClaim.ClaimName
	case v.Ephemeral != nil:
		claimName = ephemeral.VolumeClaimName(p, v)
	}
	if claimName == "" {
		return migrated(log.FromContext(ctx), volumeSpec{Inline: v}, p.Namespace)
	}
	pvc := &corev1.PersistentVolumeClaim{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: claimName}, pvc); err != nil {
		return volumeSpec{}, fmt.Errorf("volume %s: PVC %s: %w", v.Name, claimName, err)
	}
	if v.Ephemeral != nil {
		if err := ephemeral.VolumeIsForPod(p, pvc); err != nil {
			return volumeSpec{}, err
		}
	}
	if pvc.Status.Phase != corev1.ClaimBound || pvc.Spec.VolumeName == "" {
		return volumeSpec{}, fmt.Errorf("volume %s: PVC %s is not bound (phase %q, volumeName %q)", v.Name, claimName, pvc.Status.Phase, pvc.Spec.VolumeName)
	}
	pv := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: pvc.Spec.VolumeName}, pv); err != nil {
		return volumeSpec{}, fmt.Errorf("volume %s: PV %s of PVC %s: %w", v.Name, pvc.Spec.VolumeName, claimName, err)
	}
	if pv.Spec.ClaimRef == nil || pv.Spec.ClaimRef.UID != pvc.UID {
		return volumeSpec{}, fmt.Errorf("volume %s: PV %s is not bound to PVC %s (UID %s) yet", v.Name, pv.Name, claimName, pvc.UID)
	}
	return migrated(log.FromContext(ctx), volumeSpec{PV: pv}, p.Namespace)
}

// syncVolume records how the pod uses one mounted volume and reports what conflicts.
func (r *Reconciler) syncVolume(ctx context.Context, p *corev1.Pod, name string, s volumeSpec, opts []*corev1.SELinuxOptions) error {
	pl := pluginOf(s)
	supports, err := r.supportsMount(ctx, pl)
	if err != nil {
		return err
	}
	mc, err := decideMountContext(opts, p.Spec.SecurityContext, supports)
	if err != nil {
		var multiple *multipleLabelsError
		if errors.As(err, &multiple) {
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonMultipleLabels, eventAction,
				fmt.Sprintf("Volume %q is mounted twice with different SELinux labels inside this pod", name))
		}
		return fmt.Errorf("volume %s: %w", name, err)
	}
	if pl.Name == "" {
		// A volume no SELinux-relevant plugin handles (emptyDir, configMap, ...).
		return nil
	}
	volume, err := uniqueName(pl, s)
	if err != nil {
		return err
	}
	key := client.ObjectKeyFromObject(p)
	log.FromContext(ctx).V(4).Info("Syncing pod volume", "volume", name, "uniqueVolumeName", volume,
		"label", mc.Label, "changePolicy", mc.Policy, "csiDriver", pl.CSIDriver)
	r.report(ctx, r.volumes.Add(volume, key, mc, pl.CSIDriver))
	return nil
}

// supportsMount tells whether the plugin mounts with -o context: for a CSI volume, its
// CSIDriver's spec.seLinuxMount (no CSIDriver: no).
func (r *Reconciler) supportsMount(ctx context.Context, pl plugin) (bool, error) {
	if pl.Name != pluginCSI {
		return pl.SupportsMount, nil
	}
	d := &storagev1.CSIDriver{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: pl.CSIDriver}, d); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("CSIDriver %s: %w", pl.CSIDriver, err)
	}
	return ptr.Deref(d.Spec.SELinuxMount, false), nil
}

// report puts each conflict as a Normal Event on its pod. As upstream, a pod no longer in
// the cache ends the report: the conflict went with it.
//
// The other pod of the same namespace is the Event's related object: an events.k8s.io
// recorder folds Events that differ only in their note into one series, which would lose
// all but the first of a pod's conflicts; the related object keeps them apart. (core/v1
// Events, upstream's, carry no related object.) A pod of another namespace is not named.
func (r *Reconciler) report(ctx context.Context, conflicts []Conflict) {
	for _, c := range conflicts {
		p := &corev1.Pod{}
		if err := r.Client.Get(ctx, c.Pod, p); err != nil {
			log.FromContext(ctx).V(2).Info("Not reporting a conflict of a pod that cannot be read", "conflictPod", c.Pod, "err", err)
			return
		}
		var related runtime.Object
		if c.OtherPod.Namespace == c.Pod.Namespace {
			related = &corev1.Pod{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
				ObjectMeta: metav1.ObjectMeta{Namespace: c.OtherPod.Namespace, Name: c.OtherPod.Name}}
		}
		r.Recorder.Eventf(p, related, corev1.EventTypeNormal, c.Reason, eventAction, c.Message())
	}
}

// SetupWithManager registers the controller, with upstream's triggers: a pod when it
// appears or goes, and when it finishes (its other changes cannot change its volumes or
// labels); the pods of a claim that gets bound, or whose volume gets bound; and the pods
// using a CSIDriver's volumes when its seLinuxMount may have changed.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Recorder == nil {
		return fmt.Errorf("%s: Client and Recorder are required", ControllerName)
	}
	if r.volumes == nil {
		r.volumes = newVolumeCache()
	}
	registerMetrics(r.volumes)

	podChanged := predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, updated := e.ObjectOld.(*corev1.Pod), e.ObjectNew.(*corev1.Pod)
		return old.Status.Phase != updated.Status.Phase &&
			(updated.Status.Phase == corev1.PodSucceeded || updated.Status.Phase == corev1.PodFailed)
	}}
	claimBound := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			return e.Object.(*corev1.PersistentVolumeClaim).Spec.VolumeName != ""
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.(*corev1.PersistentVolumeClaim).Spec.VolumeName != e.ObjectNew.(*corev1.PersistentVolumeClaim).Spec.VolumeName
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
	volumeBound := predicate.Funcs{
		CreateFunc: func(e event.CreateEvent) bool {
			ref := e.Object.(*corev1.PersistentVolume).Spec.ClaimRef
			return ref != nil && ref.UID != ""
		},
		UpdateFunc: func(e event.UpdateEvent) bool {
			old, ref := e.ObjectOld.(*corev1.PersistentVolume).Spec.ClaimRef, e.ObjectNew.(*corev1.PersistentVolume).Spec.ClaimRef
			return ref != nil && ref.UID != "" && (old == nil || old.UID != ref.UID)
		},
		DeleteFunc: func(event.DeleteEvent) bool { return false },
	}
	driverChanged := predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return seLinuxMount(e.ObjectOld) != seLinuxMount(e.ObjectNew)
		},
		// A driver that did not mount with -o context changes nothing by going: no CSIDriver
		// means no -o context either.
		DeleteFunc: func(e event.DeleteEvent) bool { return seLinuxMount(e.Object) },
	}
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Pod{}, builder.WithPredicates(podChanged)).
		Watches(&corev1.PersistentVolumeClaim{}, handler.EnqueueRequestsFromMapFunc(r.podsOfClaim), builder.WithPredicates(claimBound)).
		Watches(&corev1.PersistentVolume{}, handler.EnqueueRequestsFromMapFunc(r.podsOfVolume), builder.WithPredicates(volumeBound)).
		Watches(&storagev1.CSIDriver{}, handler.EnqueueRequestsFromMapFunc(r.podsOfDriver), builder.WithPredicates(driverChanged)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

func seLinuxMount(obj client.Object) bool {
	return ptr.Deref(obj.(*storagev1.CSIDriver).Spec.SELinuxMount, false)
}

func (r *Reconciler) podsOfClaim(ctx context.Context, obj client.Object) []reconcile.Request {
	return r.podsUsing(ctx, obj.GetNamespace(), obj.GetName())
}

func (r *Reconciler) podsOfVolume(ctx context.Context, obj client.Object) []reconcile.Request {
	ref := obj.(*corev1.PersistentVolume).Spec.ClaimRef
	return r.podsUsing(ctx, ref.Namespace, ref.Name)
}

// podsUsing lists the pods whose volumes name the claim.
func (r *Reconciler) podsUsing(ctx context.Context, namespace, claim string) []reconcile.Request {
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(namespace), client.MatchingFields{index.PodClaimName: claim}); err != nil {
		log.FromContext(ctx).Error(err, "Listing the pods of a PVC from the cache", "PVC", types.NamespacedName{Namespace: namespace, Name: claim})
		return nil
	}
	reqs := make([]reconcile.Request, 0, len(pods.Items))
	for i := range pods.Items {
		reqs = append(reqs, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(&pods.Items[i])})
	}
	return reqs
}

// podsOfDriver lists the pods the controller knows to use the driver's volumes.
func (r *Reconciler) podsOfDriver(_ context.Context, obj client.Object) []reconcile.Request {
	var reqs []reconcile.Request
	for _, p := range r.volumes.PodsOfDriver(obj.GetName()) {
		reqs = append(reqs, reconcile.Request{NamespacedName: p})
	}
	return reqs
}
