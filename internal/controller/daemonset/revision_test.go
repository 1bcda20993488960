package daemonset

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/history"
	"github.com/kcm/kcm/internal/index"
)

// TestRevisions: the first sync snapshots the template; duplicates of the current revision
// collapse into the newest, their pods relabelled; old revisions beyond the limit go unless
// a pod still carries them.
func TestRevisions(t *testing.T) {
	ctx := context.Background()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	ds := dsWith(nil)
	ds.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "agent"}}
	ds.Spec.RevisionHistoryLimit = new(int32)
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithObjects(ds).
		WithStatusSubresource(&appsv1.DaemonSet{}).
		WithIndex(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf).
		WithIndex(&appsv1.ControllerRevision{}, index.ControllerUID, index.ControllerUIDOf).
		Build()
	r := &Reconciler{Client: c, APIReader: c, Recorder: events.NewFakeRecorder(100), Clock: clocktesting.NewFakeClock(t0)}
	r.init()
	key := client.ObjectKeyFromObject(ds)
	sync := func() {
		t.Helper()
		if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: key}); err != nil {
			t.Fatalf("Reconcile: %v", err)
		}
	}
	revisions := func() []appsv1.ControllerRevision {
		t.Helper()
		list := &appsv1.ControllerRevisionList{}
		if err := c.List(ctx, list, client.InNamespace("ns")); err != nil {
			t.Fatal(err)
		}
		return list.Items
	}

	sync()
	revs := revisions()
	// Named and labelled by the hash of the template as stored, as upstream's snapshot.
	stored := &appsv1.DaemonSet{}
	if err := c.Get(ctx, key, stored); err != nil {
		t.Fatal(err)
	}
	wantHash := history.TemplateHash(&stored.Spec.Template, nil)
	if len(revs) != 1 || revs[0].Revision != 1 || revs[0].Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != wantHash ||
		revs[0].Name != ds.Name+"-"+wantHash {
		t.Fatalf("first revision = %+v, want name %s-%s", revs, ds.Name, wantHash)
	}
	cur := revs[0]

	// A duplicate with a higher revision number, and a pod carrying the first one's hash.
	dup := cur.DeepCopy()
	dup.ResourceVersion, dup.Name, dup.Revision = "", "agent-dup", 2
	dup.Labels = map[string]string{"app": "agent", appsv1.DefaultDaemonSetUniqueLabelKey: "dup"}
	if err := c.Create(ctx, dup); err != nil {
		t.Fatal(err)
	}
	if err := c.Get(ctx, key, ds); err != nil {
		t.Fatal(err)
	}
	p := newPod(ds, "gone-node", cur.Labels[appsv1.DefaultDaemonSetUniqueLabelKey])
	p.GenerateName, p.Name = "", "p"
	p.Spec.NodeName = "gone-node" // bound to a node that is gone: left to podgc
	if err := c.Create(ctx, p); err != nil {
		t.Fatal(err)
	}
	r.creations.Forget(key)
	r.deletions.Forget(key)
	sync()
	revs = revisions()
	if len(revs) != 1 || revs[0].Name != "agent-dup" {
		t.Fatalf("after dedup: %+v", revs)
	}
	got := &corev1.Pod{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(p), got); err != nil || got.Labels[appsv1.DefaultDaemonSetUniqueLabelKey] != "dup" {
		t.Errorf("pod not relabelled: %v %v", err, got.Labels)
	}

	// A template change: the old revision stays while a pod carries it, then goes (limit 0).
	ds.Spec.Template.Spec.Containers[0].Image = "other"
	if err := c.Update(ctx, ds); err != nil {
		t.Fatal(err)
	}
	r.creations.Forget(key)
	r.deletions.Forget(key)
	sync()
	if revs = revisions(); len(revs) != 2 {
		t.Fatalf("after a template change, with a pod on the old revision: %+v", revs)
	}
	if err := c.Delete(ctx, got); err != nil {
		t.Fatal(err)
	}
	r.creations.Forget(key)
	r.deletions.Forget(key)
	sync()
	revs = revisions()
	if len(revs) != 1 || revs[0].Revision != 3 || revs[0].Name == "agent-dup" {
		t.Fatalf("after the old pod went: %+v", revs)
	}
}
