// Package attachdetach is upstream's persistentvolume-attach-detach-controller: the volumes
// that pods scheduled to a node need are attached to it, and detached once no pod needs them
// and the node has unmounted them.
//
// Upstream keeps a desired and an actual state of the world in memory and runs attach and
// detach operations from one loop. kcm reconciles one node at a time, level-based, from the
// shared cache: desired are the node's non-terminated pods' volumes (claims bound to CSI
// volumes, in-tree volumes and inline in-tree sources translated to CSI by
// csi-translation-lib, as upstream; only for nodes annotated
// volumes.kubernetes.io/controller-managed-attach-detach and drivers whose CSIDriver does not
// say attachRequired: false); actual are the node's VolumeAttachments and its status. The
// decision (decide.go) is pure. An attach is a VolumeAttachment created for the external
// attacher, named and shaped as upstream's CSI attacher makes it; once the attacher reports
// it attached the volume is listed in node.status.volumesAttached. A detach removes the
// volume from that list, then deletes the VolumeAttachment. In-tree iSCSI and Fibre Channel
// volumes, whose upstream plugins attach from the node, are only listed and unlisted.
//
// What upstream remembers between loops and cannot be read back from the API, kcm keeps in
// memory too, and loses at restart as upstream does: when a volume was first found unneeded
// (the unmount wait), which multi-attach and attach errors were already reported. At restart
// nothing is detached that a pod needs or that the node reports in use: the state is read
// from VolumeAttachments, node status and pods, as upstream populates its actual state from
// node status and VolumeAttachments.
package attachdetach

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/klog/v2"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/staleness"
)

const (
	// ControllerName is the controller's name in --controllers.
	ControllerName = "persistentvolume-attach-detach-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "attachdetach-controller"
	// EventSource is upstream's event source component.
	EventSource = "attachdetach-controller"

	// ManagedAnnotation marks the nodes whose volumes the controller attaches (the kubelet
	// sets it); upstream only checks that it is present.
	ManagedAnnotation = "volumes.kubernetes.io/controller-managed-attach-detach"

	// Upstream's Event reasons (pkg/kubelet/events).
	ReasonSuccessfulAttachVolume = "SuccessfulAttachVolume"
	ReasonFailedAttachVolume     = "FailedAttachVolume"

	eventAction = "AttachVolume"
)

// Reconciler attaches and detaches the volumes of one node per request (the request's Name
// is the node's).
type Reconciler struct {
	// Client reads the shared cache and writes VolumeAttachments, node status and Events'
	// objects with the controller's identity.
	Client client.Client
	// APIReader reads a node live before a detach, as upstream checks volumesInUse.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// SyncPeriod is --attach-detach-reconcile-sync-period: a node with VolumeAttachments is
	// reconciled again at this period even when nothing changes; zero (or
	// --disable-attach-detach-reconcile-sync, or under a second as upstream) disables it.
	SyncPeriod time.Duration
	// DisableForceDetachOnTimeout is --disable-force-detach-on-timeout.
	DisableForceDetachOnTimeout bool

	mu sync.Mutex
	// detachRequested: per node, when each unneeded volume was first seen unneeded.
	detachRequested map[string]map[corev1.UniqueVolumeName]time.Time
	// reported: per node, the volumes whose multi-attach error was reported (once, as
	// upstream), and the attachment failures reported (by VolumeAttachment: the error).
	multiAttachReported map[string]map[corev1.UniqueVolumeName]bool
	failureReported     map[string]map[string]string
	// announced: per node, the volumes whose SuccessfulAttachVolume was recorded, while they
	// stay attached: a node status rewritten without them (a node re-registering) has them
	// reported again, as upstream does, but not announced twice.
	announced map[string]map[corev1.UniqueVolumeName]bool
	// created: per node, the volumes whose VolumeAttachment was just created, until the cache
	// shows it (createdMemory at most): a sync in between neither creates it again nor, for
	// a volume that may be attached to one node only, lets another node have it too.
	created map[string]map[corev1.UniqueVolumeName]time.Time
	// deleted: per node, the VolumeAttachments deleted (by UID) that the cache does not yet
	// show deleted.
	deleted map[string]map[string]types.UID
	// lastInUse: per node, its volumesInUse as last seen, for after its deletion (upstream
	// keeps a deleted node's last report).
	lastInUse map[string]map[corev1.UniqueVolumeName]bool
	// stats are the node's volume counts for upstream's metrics.
	stats map[string]nodeStats
	// written is the last status written of each node: a sync that runs before the cache
	// delivers it would report the volume attached again (and its Event twice).
	written staleness.Writes[*corev1.Node]
}

// The controller reads pods, claims, volumes, CSIDrivers, nodes and VolumeAttachments from
// the shared cache; its own identity creates and deletes VolumeAttachments, gets a node live
// before a detach and patches node status, as upstream.
// +kubebuilder:rbac:groups=storage.k8s.io,resources=volumeattachments,verbs=create;delete
// +kubebuilder:rbac:groups="",resources=nodes,verbs=get
// +kubebuilder:rbac:groups="",resources=nodes/status,verbs=patch

// Reconcile attaches and detaches the node's volumes.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	nodeName := req.Name
	now := r.Clock.Now()

	// Observe: the node, what its pods need, its VolumeAttachments.
	node := &corev1.Node{}
	exists := true
	if err := r.Client.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		if !apierrors.IsNotFound(err) {
			return reconcile.Result{}, err
		}
		exists = false
	} else {
		node = r.written.Current(node)
	}
	_, managed := node.Annotations[ManagedAnnotation]
	wanted, inUse, err := r.wantedVolumes(ctx, nodeName, exists && !managed)
	if err != nil {
		return reconcile.Result{}, err
	}
	if err := r.otherNodes(ctx, nodeName, wanted); err != nil {
		return reconcile.Result{}, err
	}
	attachments, err := r.attachments(ctx, nodeName, wanted, node.Status.VolumesAttached)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Compare.
	r.mu.Lock()
	nv := view(node, exists)
	if exists {
		r.lastInUse[nodeName] = nv.InUse
	} else {
		nv.Name, nv.InUse = nodeName, r.lastInUse[nodeName]
		if len(attachments) == 0 {
			delete(r.lastInUse, nodeName)
		}
	}
	in := input{
		Node:                        nv,
		Wanted:                      wanted,
		Attachments:                 attachments,
		DetachRequested:             r.detachRequested[nodeName],
		Now:                         now,
		DisableForceDetachOnTimeout: r.DisableForceDetachOnTimeout,
	}
	r.mu.Unlock()
	p := decide(in)

	// A detach (not forced) waits until the node's volumesInUse, read live as upstream's
	// verifySafeToDetach reads it, no longer lists the volume. Checked before anything is
	// acted on or unreported: the cache may show a pod's deletion before the kubelet's
	// mount of its volume, and the node's update will bring this node back.
	if busy, err := r.stillInUse(ctx, nodeName, p.Detach); err != nil || busy {
		return reconcile.Result{RequeueAfter: time.Second}, err
	}
	r.remember(nodeName, p, wanted, attachments, inUse)

	// Act: report before detaching (a volume is no longer listed once its detach starts),
	// detach, attach, then the Events.
	if p.StatusChanged {
		if err := r.patchStatus(ctx, node, p.Status); err != nil {
			return reconcile.Result{}, err
		}
	}
	var errs []error
	for _, d := range p.Detach {
		if err := r.detach(ctx, nodeName, d); err != nil {
			errs = append(errs, err)
		}
	}
	retry := false
	for _, w := range p.Attach {
		created, err := r.attach(ctx, nodeName, w)
		if err != nil {
			errs = append(errs, err)
		}
		retry = retry || !created
	}
	r.report(nodeName, p)

	// Status: requeue for time-based decisions and the periodic sync.
	res := reconcile.Result{RequeueAfter: p.RequeueAfter}
	if retry {
		res.RequeueAfter = shorter(res.RequeueAfter, time.Second)
	}
	if len(attachments) > 0 && r.SyncPeriod >= time.Second {
		res.RequeueAfter = shorter(res.RequeueAfter, r.SyncPeriod)
	}
	return res, errors.Join(errs...)
}

// wantedVolumes resolves the attachable volumes of the node's pods. Pods of a node the
// controller does not manage want nothing (unmanaged); those of a deleted node keep their
// volumes until they go, as upstream keeps a deleted node's volumes while pods use them.
// inUse counts every CSI volume of the node's pods, attachable or not, for upstream's
// storage_count_attachable_volumes_in_use.
func (r *Reconciler) wantedVolumes(ctx context.Context, nodeName string, unmanaged bool) (map[corev1.UniqueVolumeName]*wanted, map[string]int, error) {
	out := map[corev1.UniqueVolumeName]*wanted{}
	inUse := map[string]int{}
	if unmanaged {
		return out, inUse, nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.MatchingFields{index.PodNodeName: nodeName}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, nil, err
	}
	view := cached{ctx: ctx, c: r.Client}
	logger := log.FromContext(ctx)
	for i := range pods.Items {
		pod := &pods.Items[i]
		if !podNeedsVolumes(pod) {
			continue
		}
		for j := range pod.Spec.Volumes {
			pv := &pod.Spec.Volumes[j]
			if !mayNeedAttaching(pv) && pv.CSI == nil {
				continue
			}
			v, err := resolve(view, pod, pv)
			if errors.Is(err, errNotAttachable) {
				if pv.CSI != nil {
					inUse[pluginLabel(pv.CSI.Driver)]++
				}
				continue
			}
			if err != nil {
				logger.V(5).Info("Skipping volume of pod", "pod", klog.KObj(pod), "volume", pv.Name, "err", err)
				continue
			}
			inUse[pluginOf(v.UniqueName)]++
			w := out[v.UniqueName]
			if w == nil {
				w = &wanted{volume: *v}
				out[v.UniqueName] = w
			}
			if !slices.Contains(w.Pods, pod) {
				w.Pods = append(w.Pods, pod)
			}
		}
	}
	return out, inUse, nil
}

// otherNodes fills in where the wanted volumes that may be attached to one node only are
// attached elsewhere, and which pods there use them.
func (r *Reconciler) otherNodes(ctx context.Context, nodeName string, wanted map[corev1.UniqueVolumeName]*wanted) error {
	for _, w := range wanted {
		if w.MultiAttach {
			continue
		}
		vas := &storagev1.VolumeAttachmentList{}
		if err := r.Client.List(ctx, vas, client.MatchingFields{attachmentVolumeField: volumeKey(&w.volume)}, client.UnsafeDisableDeepCopy); err != nil {
			return err
		}
		w.Elsewhere = elsewhere{}
		for i := range vas.Items {
			va := &vas.Items[i]
			if va.Spec.NodeName == nodeName || va.Spec.Attacher != w.Driver {
				continue
			}
			if va.Status.Attached && va.DeletionTimestamp == nil {
				w.Elsewhere.AttachedTo = append(w.Elsewhere.AttachedTo, va.Spec.NodeName)
			} else {
				w.Elsewhere.Pending = true
			}
		}
		r.mu.Lock()
		if r.createdElsewhere(w.UniqueName, nodeName) {
			w.Elsewhere.Pending = true
		}
		r.mu.Unlock()
		if len(w.Elsewhere.AttachedTo) > 0 && len(w.Pods) > 0 {
			pods, err := r.podsUsing(ctx, w, w.Elsewhere.AttachedTo)
			if err != nil {
				return err
			}
			w.Elsewhere.Pods = pods
		}
	}
	return nil
}

// podsUsing lists the pods on nodes that need the claim-backed volume w (upstream's pods of
// the desired state on those nodes).
func (r *Reconciler) podsUsing(ctx context.Context, w *wanted, nodes []string) ([]*corev1.Pod, error) {
	if w.PVName == "" {
		return nil, nil
	}
	pv := &corev1.PersistentVolume{}
	if err := r.Client.Get(ctx, types.NamespacedName{Name: w.PVName}, pv); err != nil || pv.Spec.ClaimRef == nil {
		return nil, client.IgnoreNotFound(err)
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(pv.Spec.ClaimRef.Namespace),
		client.MatchingFields{index.PodClaimName: pv.Spec.ClaimRef.Name}); err != nil {
		return nil, err
	}
	var out []*corev1.Pod
	for i := range pods.Items {
		p := &pods.Items[i]
		if slices.Contains(nodes, p.Spec.NodeName) && podNeedsVolumes(p) {
			out = append(out, p)
		}
	}
	return out, nil
}

// attachments lists the node's VolumeAttachments with the volume each is for: a wanted
// volume's or a reported one's when the name is theirs, else the volume its source names. An
// attachment whose volume cannot be known (its PersistentVolume gone) is left alone.
func (r *Reconciler) attachments(ctx context.Context, nodeName string, wanted map[corev1.UniqueVolumeName]*wanted, reported []corev1.AttachedVolume) ([]attachment, error) {
	vas := &storagev1.VolumeAttachmentList{}
	if err := r.Client.List(ctx, vas, client.MatchingFields{attachmentNodeField: nodeName}, client.UnsafeDisableDeepCopy); err != nil {
		return nil, err
	}
	known := map[string]corev1.UniqueVolumeName{}
	for name, w := range wanted {
		known[attachmentName(w.Handle, w.Driver, nodeName)] = name
	}
	for _, av := range reported {
		if driver, handle, ok := splitCSIName(av.Name); ok {
			known[attachmentName(handle, driver, nodeName)] = av.Name
		}
	}
	view := cached{ctx: ctx, c: r.Client}
	var out []attachment
	r.mu.Lock()
	deleted := r.deleted[nodeName]
	delete(r.deleted, nodeName)
	r.mu.Unlock()
	stillDeleted := map[string]types.UID{}
	for i := range vas.Items {
		va := &vas.Items[i]
		// Deleted by an earlier sync, which the cache does not show yet: not detached twice.
		ourDelete := va.DeletionTimestamp == nil && deleted[va.Name] == va.UID
		if ourDelete {
			stillDeleted[va.Name] = va.UID
		}
		name, ok := known[va.Name]
		if !ok {
			if name, ok = sourceVolume(view, va); !ok {
				log.FromContext(ctx).V(4).Info("Leaving alone a VolumeAttachment whose volume is unknown", "volumeAttachment", va.Name)
				continue
			}
		}
		a := attachment{Name: va.Name, UID: va.UID, Volume: name, Attached: va.Status.Attached,
			Deleting: va.DeletionTimestamp != nil || ourDelete, Created: va.CreationTimestamp.Time, AttachError: va.Status.AttachError}
		out = append(out, a)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(stillDeleted) > 0 {
		r.deleted[nodeName] = stillDeleted
	}
	// iSCSI and Fibre Channel volumes are attached as long as the node's status lists them.
	for _, av := range reported {
		if isStatusOnly(av.Name) {
			out = append(out, attachment{Volume: av.Name, Attached: true, StatusOnly: true})
		}
	}
	// Created by an earlier sync, which the cache does not show yet: not attached.
	for name, at := range r.created[nodeName] {
		_, stillWanted := wanted[name]
		shown := slices.ContainsFunc(out, func(a attachment) bool { return a.Volume == name })
		if shown || !stillWanted || r.Clock.Since(at) > createdMemory {
			delete(r.created[nodeName], name)
			continue
		}
		w := wanted[name]
		out = append(out, attachment{Name: attachmentName(w.Handle, w.Driver, nodeName), Volume: name, Created: at})
	}
	if len(r.created[nodeName]) == 0 {
		delete(r.created, nodeName)
	}
	return out, nil
}

// sourceVolume is the unique name of the volume a VolumeAttachment's source names.
func sourceVolume(v cacheView, va *storagev1.VolumeAttachment) (corev1.UniqueVolumeName, bool) {
	src := va.Spec.Source
	switch {
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI != nil:
		return uniqueName(src.InlineVolumeSpec.CSI.Driver, src.InlineVolumeSpec.CSI.VolumeHandle), true
	case src.PersistentVolumeName != nil:
		pv, err := v.persistentVolume(*src.PersistentVolumeName)
		if err != nil || pv == nil {
			return "", false
		}
		if pv.Spec.CSI == nil {
			if pv, err = translator.TranslateInTreePVToCSI(klog.Background(), pv); err != nil || pv.Spec.CSI == nil {
				return "", false
			}
		}
		return uniqueName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle), true
	}
	return "", false
}

// view is the node as decide reads it.
func view(node *corev1.Node, exists bool) nodeView {
	v := nodeView{Name: node.Name, Exists: exists, InUse: map[corev1.UniqueVolumeName]bool{}, Attached: node.Status.VolumesAttached}
	for _, n := range node.Status.VolumesInUse {
		v.InUse[n] = true
	}
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			v.Healthy = c.Status == corev1.ConditionTrue
		}
	}
	for _, t := range node.Spec.Taints {
		if t.Key == corev1.TaintNodeOutOfService {
			v.OutOfService = true
		}
	}
	return v
}

// patchStatus writes the node's volumesAttached, as upstream, with a merge patch of the
// status (the kubelet writes the rest of it; the patch names only this list).
func (r *Reconciler) patchStatus(ctx context.Context, node *corev1.Node, attached []corev1.AttachedVolume) error {
	orig := node.DeepCopy()
	node.Status.VolumesAttached = attached
	if err := r.Client.Status().Patch(ctx, node, client.MergeFrom(orig)); err != nil {
		r.written.Forget(client.ObjectKeyFromObject(node))
		return client.IgnoreNotFound(err)
	}
	r.written.Wrote(orig.ResourceVersion, node)
	return nil
}

// stillInUse reads the node live when a detach needs it (not forced) and says whether its
// volumesInUse still lists a volume the cache showed unmounted.
func (r *Reconciler) stillInUse(ctx context.Context, nodeName string, detaches []detach) (bool, error) {
	if !slices.ContainsFunc(detaches, func(d detach) bool { return d.VerifySafe }) {
		return false, nil
	}
	node := &corev1.Node{}
	if err := r.APIReader.Get(ctx, types.NamespacedName{Name: nodeName}, node); err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("DetachVolume failed fetching node from API server: %w", err)
	}
	for _, d := range detaches {
		if d.VerifySafe && slices.Contains(node.Status.VolumesInUse, d.Volume) {
			log.FromContext(ctx).V(1).Info("DetachVolume waits: volume is still in use by node, according to Node status", "volumeName", d.Volume)
			return true, nil
		}
	}
	return false, nil
}

// detach deletes a VolumeAttachment for the external attacher to detach (stillInUse has
// checked the node first unless forced).
func (r *Reconciler) detach(ctx context.Context, nodeName string, d detach) error {
	if d.StatusOnly {
		// Unreported, it is detached: upstream's iSCSI and Fibre Channel detachers do
		// nothing in the controller.
		r.detached(ctx, d)
		return nil
	}
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: d.Name}}
	if err := r.Client.Delete(ctx, va, client.Preconditions{UID: &d.UID}); err != nil {
		if apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
			// Gone, or another object of that name: nothing of ours left to detach.
			return nil
		}
		return fmt.Errorf("deleting VolumeAttachment %s: %w", d.Name, err)
	}
	r.mu.Lock()
	if r.deleted[nodeName] == nil {
		r.deleted[nodeName] = map[string]types.UID{}
	}
	r.deleted[nodeName][d.Name] = d.UID
	r.mu.Unlock()
	r.detached(ctx, d)
	return nil
}

// detached logs a detach and counts it when forced.
func (r *Reconciler) detached(ctx context.Context, d detach) {
	logger := log.FromContext(ctx)
	if d.Forced != "" {
		forcedDetaches.WithLabelValues(d.Forced).Inc()
		logger.Info("Force detaching volume", "reason", d.Forced, "volumeName", d.Volume)
	} else {
		logger.Info("Detaching volume", "volumeName", d.Volume)
	}
}

// attach creates the volume's VolumeAttachment as upstream's CSI attacher does. A volume that
// may be attached to one node only is claimed for this node first; if another node's
// reconcile claimed it in the meantime nothing is created (created is false).
func (r *Reconciler) attach(ctx context.Context, nodeName string, w *wanted) (created bool, err error) {
	r.mu.Lock()
	if !w.MultiAttach && r.createdElsewhere(w.UniqueName, nodeName) {
		r.mu.Unlock()
		return false, nil
	}
	if r.created[nodeName] == nil {
		r.created[nodeName] = map[corev1.UniqueVolumeName]time.Time{}
	}
	r.created[nodeName][w.UniqueName] = r.Clock.Now()
	r.mu.Unlock()
	va := &storagev1.VolumeAttachment{
		ObjectMeta: metav1.ObjectMeta{Name: attachmentName(w.Handle, w.Driver, nodeName)},
		Spec: storagev1.VolumeAttachmentSpec{
			Attacher: w.Driver,
			NodeName: nodeName,
		},
	}
	if w.Inline != nil {
		va.Spec.Source.InlineVolumeSpec = w.Inline.DeepCopy()
	} else {
		pvName := w.PVName
		va.Spec.Source.PersistentVolumeName = &pvName
	}
	if err := r.Client.Create(ctx, va); err != nil && !apierrors.IsAlreadyExists(err) {
		r.release(w.UniqueName, nodeName)
		return true, fmt.Errorf("AttachVolume.Attach failed for volume %q: creating VolumeAttachment %s: %w", w.SpecName, va.Name, err)
	}
	log.FromContext(ctx).Info("Attaching volume", "volumeName", w.UniqueName, "volumeAttachment", va.Name, "scheduledPods", len(w.Pods))
	return true, nil
}

func (r *Reconciler) release(name corev1.UniqueVolumeName, nodeName string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.created[nodeName], name)
}

// createdMemory bounds how long a creation is remembered without the cache showing it.
const createdMemory = 30 * time.Second

// createdElsewhere reports whether a VolumeAttachment of the volume was just created for
// another node. r.mu is held.
func (r *Reconciler) createdElsewhere(name corev1.UniqueVolumeName, nodeName string) bool {
	for n, vols := range r.created {
		if _, ok := vols[name]; ok && n != nodeName && r.Clock.Since(vols[name]) <= createdMemory {
			return true
		}
	}
	return false
}

// remember keeps what the next decision needs and cannot read back: detach request times,
// reported errors, and the node's counts for the metrics.
func (r *Reconciler) remember(nodeName string, p plan, wanted map[corev1.UniqueVolumeName]*wanted, attachments []attachment, inUse map[string]int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(p.DetachRequested) > 0 {
		r.detachRequested[nodeName] = p.DetachRequested
	} else {
		delete(r.detachRequested, nodeName)
	}
	for name := range r.multiAttachReported[nodeName] {
		if _, ok := wanted[name]; !ok {
			delete(r.multiAttachReported[nodeName], name)
		}
	}
	if len(r.multiAttachReported[nodeName]) == 0 {
		delete(r.multiAttachReported, nodeName)
	}
	for va := range r.failureReported[nodeName] {
		if !slices.ContainsFunc(attachments, func(a attachment) bool { return a.Name == va && !a.Attached }) {
			delete(r.failureReported[nodeName], va)
		}
	}
	if len(r.failureReported[nodeName]) == 0 {
		delete(r.failureReported, nodeName)
	}
	for name := range r.announced[nodeName] {
		if !slices.ContainsFunc(attachments, func(a attachment) bool { return a.Volume == name && a.Attached && !a.Deleting }) {
			delete(r.announced[nodeName], name)
		}
	}
	if len(r.announced[nodeName]) == 0 {
		delete(r.announced, nodeName)
	}
	s := nodeStats{inUse: inUse, desired: map[string]int{}, actual: map[string]int{}}
	for _, w := range wanted {
		s.desired[pluginOf(w.UniqueName)]++
	}
	for _, a := range attachments {
		s.actual[pluginOf(a.Volume)]++
	}
	if len(s.inUse)+len(s.desired)+len(s.actual) == 0 {
		delete(r.stats, nodeName)
	} else {
		r.stats[nodeName] = s
	}
}

// report records upstream's Events on the pods: SuccessfulAttachVolume once a volume is
// reported attached, FailedAttachVolume for a multi-attach (once per volume and node) and for
// an attach the external attacher failed or did not answer (once per error).
func (r *Reconciler) report(nodeName string, p plan) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, w := range p.Attached {
		if r.announced[nodeName][w.UniqueName] {
			continue
		}
		if r.announced[nodeName] == nil {
			r.announced[nodeName] = map[corev1.UniqueVolumeName]bool{}
		}
		r.announced[nodeName][w.UniqueName] = true
		msg := fmt.Sprintf("AttachVolume.Attach succeeded for volume %q ", w.SpecName)
		for _, pod := range w.Pods {
			r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, ReasonSuccessfulAttachVolume, eventAction, "%s", msg)
		}
	}
	for _, w := range p.MultiAttach {
		if r.multiAttachReported[nodeName][w.UniqueName] {
			continue
		}
		if r.multiAttachReported[nodeName] == nil {
			r.multiAttachReported[nodeName] = map[corev1.UniqueVolumeName]bool{}
		}
		r.multiAttachReported[nodeName][w.UniqueName] = true
		for _, pod := range w.Pods {
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonFailedAttachVolume, eventAction, "%s", multiAttachMessage(w, pod))
		}
	}
	for _, f := range p.AttachFailed {
		key := f.Message
		if e := f.Attachment.AttachError; e != nil {
			key += "@" + e.Time.String()
		}
		if r.failureReported[nodeName][f.Attachment.Name] == key {
			continue
		}
		if r.failureReported[nodeName] == nil {
			r.failureReported[nodeName] = map[string]string{}
		}
		r.failureReported[nodeName][f.Attachment.Name] = key
		msg := fmt.Sprintf("AttachVolume.Attach failed for volume %q : %s", f.SpecName, f.Message)
		for _, pod := range f.Pods {
			r.Recorder.Eventf(pod, nil, corev1.EventTypeWarning, ReasonFailedAttachVolume, eventAction, "%s", msg)
		}
	}
}

func shorter(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

// splitCSIName splits kubernetes.io/csi/<driver>^<handle>.
func splitCSIName(name corev1.UniqueVolumeName) (driver, handle string, ok bool) {
	if !isCSI(name) {
		return "", "", false
	}
	rest := string(name)[len(csiPluginName)+1:]
	for i := 0; i < len(rest); i++ {
		if rest[i] == '^' {
			return rest[:i], rest[i+1:], true
		}
	}
	return "", "", false
}

// cached reads claims, volumes and CSIDrivers from the shared cache.
type cached struct {
	ctx context.Context
	c   client.Reader
}

func (c cached) claim(namespace, name string) (*corev1.PersistentVolumeClaim, error) {
	obj := &corev1.PersistentVolumeClaim{}
	return getOrNil(c, types.NamespacedName{Namespace: namespace, Name: name}, obj)
}

func (c cached) persistentVolume(name string) (*corev1.PersistentVolume, error) {
	return getOrNil(c, types.NamespacedName{Name: name}, &corev1.PersistentVolume{})
}

func (c cached) csiDriver(name string) (*storagev1.CSIDriver, error) {
	return getOrNil(c, types.NamespacedName{Name: name}, &storagev1.CSIDriver{})
}

func getOrNil[T client.Object](c cached, key types.NamespacedName, obj T) (T, error) {
	var zero T
	if err := c.c.Get(c.ctx, key, obj); err != nil {
		if apierrors.IsNotFound(err) {
			return zero, nil
		}
		return zero, err
	}
	return obj, nil
}
