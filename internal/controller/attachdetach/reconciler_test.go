package attachdetach

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/manager"
)

// staleCache reads from a cache frozen at the start (one that has not yet delivered the
// controller's own writes) and writes to the API, counting the writes.
type staleCache struct {
	client.Client // the API
	cache         client.Reader
	creates       atomic.Int32
	deletes       atomic.Int32
	patches       atomic.Int32
}

func (s *staleCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return s.cache.Get(ctx, key, obj, opts...)
}

func (s *staleCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return s.cache.List(ctx, list, opts...)
}

func (s *staleCache) Create(ctx context.Context, obj client.Object, opts ...client.CreateOption) error {
	s.creates.Add(1)
	return s.Client.Create(ctx, obj, opts...)
}

func (s *staleCache) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	s.deletes.Add(1)
	return s.Client.Delete(ctx, obj, opts...)
}

func (s *staleCache) Status() client.SubResourceWriter {
	return &countingStatus{s.Client.Status(), &s.patches}
}

type countingStatus struct {
	client.SubResourceWriter
	n *atomic.Int32
}

func (c *countingStatus) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	c.n.Add(1)
	return c.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}

func newStale(t *testing.T, objs ...client.Object) (*Reconciler, *staleCache, *events.FakeRecorder) {
	t.Helper()
	build := func() client.Client {
		b := fake.NewClientBuilder().WithScheme(manager.Scheme()).WithStatusSubresource(&corev1.Node{}, &storagev1.VolumeAttachment{})
		for _, i := range []index.Index{index.PodsByNode, index.PodsByClaim, attachmentsByNode, attachmentsByVolume} {
			b = b.WithIndex(i.Object, i.Field, i.Extract)
		}
		for _, o := range objs {
			b = b.WithObjects(o.DeepCopyObject().(client.Object))
		}
		return b.Build()
	}
	s := &staleCache{Client: build(), cache: build()}
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Client: s, APIReader: s.Client, Recorder: rec, Clock: clock.RealClock{}}
	r.initState()
	return r, s, rec
}

func managedNode(name string, status corev1.NodeStatus) *corev1.Node {
	return &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{ManagedAnnotation: "true"}}, Status: status}
}

// boundVolume is a claim c in ns bound to the ReadWriteOnce CSI volume pv (handle h).
func boundVolume() (*corev1.PersistentVolumeClaim, *corev1.PersistentVolume) {
	pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "c", UID: "c-uid"},
		Spec: corev1.PersistentVolumeClaimSpec{VolumeName: "pv"}, Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}
	pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: "pv"}, Spec: corev1.PersistentVolumeSpec{
		AccessModes:            []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
		PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}},
		ClaimRef:               &corev1.ObjectReference{Namespace: "ns", Name: "c", UID: "c-uid"}}}
	return pvc, pv
}

func podOn(name, node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name}, Spec: corev1.PodSpec{NodeName: node,
		Volumes: []corev1.Volume{{Name: "v", VolumeSource: corev1.VolumeSource{PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: "c"}}}}}}
}

func syncNode(t *testing.T, r *Reconciler, node string) {
	t.Helper()
	if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: node}}); err != nil {
		t.Fatal(err)
	}
}

func TestStaleCacheCreatesOnceAndOnOneNode(t *testing.T) {
	pvc, pv := boundVolume()
	r, s, _ := newStale(t, managedNode("n1", corev1.NodeStatus{}), managedNode("n2", corev1.NodeStatus{}), pvc, pv,
		podOn("p1", "n1"), podOn("p2", "n2"))
	syncNode(t, r, "n1")
	syncNode(t, r, "n1")
	syncNode(t, r, "n2")
	if n := s.creates.Load(); n != 1 {
		t.Errorf("%d creates, want 1", n)
	}
	vas := &storagev1.VolumeAttachmentList{}
	if err := s.Client.List(context.Background(), vas); err != nil {
		t.Fatal(err)
	}
	if len(vas.Items) != 1 || vas.Items[0].Spec.NodeName != "n1" {
		t.Errorf("attachments %v, want one, for n1", vas.Items)
	}
}

func TestStaleCacheDetachesOnce(t *testing.T) {
	_, pv := boundVolume()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachmentName("h", "d", "n1"), UID: "va-uid"},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	r, s, _ := newStale(t, managedNode("n1", corev1.NodeStatus{}), pv, va)
	syncNode(t, r, "n1")
	syncNode(t, r, "n1")
	if n := s.deletes.Load(); n != 1 {
		t.Errorf("%d deletes, want 1", n)
	}
}

func TestStaleCacheReportsOnce(t *testing.T) {
	pvc, pv := boundVolume()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachmentName("h", "d", "n1"), UID: "va-uid"},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	r, s, rec := newStale(t, managedNode("n1", corev1.NodeStatus{}), pvc, pv, va, podOn("p1", "n1"))
	syncNode(t, r, "n1")
	syncNode(t, r, "n1")
	if n := s.patches.Load(); n != 1 {
		t.Errorf("%d status patches, want 1", n)
	}
	if n := len(rec.Events); n != 1 {
		t.Errorf("%d Events, want 1", n)
	}
	node := &corev1.Node{}
	if err := s.Client.Get(context.Background(), client.ObjectKey{Name: "n1"}, node); err != nil {
		t.Fatal(err)
	}
	if want := uniqueName("d", "h"); len(node.Status.VolumesAttached) != 1 || node.Status.VolumesAttached[0].Name != want {
		t.Errorf("volumesAttached %v, want %s", node.Status.VolumesAttached, want)
	}
}

// TestSyncPeriod: a node with attachments is synced again at
// --attach-detach-reconcile-sync-period, and not when the sync is disabled (zero).
func TestSyncPeriod(t *testing.T) {
	pvc, pv := boundVolume()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachmentName("h", "d", "n1"), UID: "va-uid"},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	node := managedNode("n1", corev1.NodeStatus{VolumesAttached: []corev1.AttachedVolume{{Name: uniqueName("d", "h")}}})
	for _, period := range []time.Duration{time.Minute, 0} {
		r, _, _ := newStale(t, node, pvc, pv, va, podOn("p1", "n1"))
		r.SyncPeriod = period
		res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "n1"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.RequeueAfter != period {
			t.Errorf("sync period %v: requeued after %v", period, res.RequeueAfter)
		}
	}
}

// TestDetachWaitsForTheLiveVolumesInUse: the cache shows the volume unneeded and unmounted,
// but the node read live still lists it in use (the cache has the pod's deletion, not yet
// the kubelet's mount): nothing is unreported or detached until the live node lets it go.
func TestDetachWaitsForTheLiveVolumesInUse(t *testing.T) {
	ctx := context.Background()
	_, pv := boundVolume()
	va := &storagev1.VolumeAttachment{ObjectMeta: metav1.ObjectMeta{Name: attachmentName("h", "d", "n1"), UID: "va-uid"},
		Spec:   storagev1.VolumeAttachmentSpec{Attacher: "d", NodeName: "n1", Source: storagev1.VolumeAttachmentSource{PersistentVolumeName: &pv.Name}},
		Status: storagev1.VolumeAttachmentStatus{Attached: true}}
	vol := uniqueName("d", "h")
	r, s, _ := newStale(t, managedNode("n1", corev1.NodeStatus{VolumesAttached: []corev1.AttachedVolume{{Name: vol}}}), pv, va)
	setLiveInUse := func(in ...corev1.UniqueVolumeName) {
		t.Helper()
		live := &corev1.Node{}
		if err := s.Client.Get(ctx, client.ObjectKey{Name: "n1"}, live); err != nil {
			t.Fatal(err)
		}
		live.Status.VolumesInUse = in
		if err := s.Client.Status().Update(ctx, live); err != nil {
			t.Fatal(err)
		}
	}
	setLiveInUse(vol)

	res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "n1"}})
	if err != nil {
		t.Fatal(err)
	}
	if d, p := s.deletes.Load(), s.patches.Load(); d != 0 || p != 0 {
		t.Errorf("volume in use on the live node: %d deletes, %d status patches, want none", d, p)
	}
	if res.RequeueAfter <= 0 {
		t.Errorf("no requeue while the detach waits")
	}

	setLiveInUse()
	syncNode(t, r, "n1")
	if d, p := s.deletes.Load(), s.patches.Load(); d != 1 || p != 1 {
		t.Errorf("volume unmounted: %d deletes, %d status patches, want 1 and 1", d, p)
	}
}
