package owned

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
)

// recorder is a queue that records what is added, and the hooks' calls, in order.
type recorder struct {
	queue
	got []string
}

func (r *recorder) Add(req reconcile.Request) { r.got = append(r.got, "queue "+req.Name) }
func (r *recorder) AddAfter(req reconcile.Request, d time.Duration) {
	r.got = append(r.got, fmt.Sprintf("queue %s after %s", req.Name, d))
}

var rsGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")

func rs(name, uid string, match map[string]string) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)},
		Spec:       appsv1.ReplicaSetSpec{Selector: &metav1.LabelSelector{MatchLabels: match}},
	}
}

type podOpt func(*corev1.Pod)

func newPod(rv string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p", UID: "pod-uid", ResourceVersion: rv}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func ownedBy(kind, name, uid string) podOpt {
	return func(p *corev1.Pod) {
		p.OwnerReferences = []metav1.OwnerReference{{APIVersion: "apps/v1", Kind: kind, Name: name, UID: types.UID(uid), Controller: new(true)}}
	}
}
func labelled(v string) podOpt { return func(p *corev1.Pod) { p.Labels = map[string]string{"app": v} } }
func deleting() podOpt {
	return func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: time.Unix(1, 0)} }
}

func TestPodHandler(t *testing.T) {
	tests := []struct {
		name           string
		create, delete *corev1.Pod
		old, cur       *corev1.Pod
		delay          time.Duration
		deleteOld      bool
		want           []string
	}{
		{name: "created under its owner: creation observed", create: newPod("1", ownedBy("ReplicaSet", "a", "uid-a")),
			want: []string{"created a", "queue a"}},
		{name: "created under a recreated owner (other UID): nothing", create: newPod("1", ownedBy("ReplicaSet", "a", "old-uid"), labelled("a"))},
		{name: "created under another kind: not offered to adopters", create: newPod("1", ownedBy("StatefulSet", "a", "uid-a"), labelled("a"))},
		{name: "orphan created: the owners whose selector matches", create: newPod("1", labelled("a")),
			want: []string{"queue a"}},
		{name: "created already deleting: deletion observed", create: newPod("1", ownedBy("ReplicaSet", "a", "uid-a"), deleting()),
			want: []string{"deleted a non-final", "queue a"}},
		{name: "resync: nothing", old: newPod("1", ownedBy("ReplicaSet", "a", "uid-a")), cur: newPod("1", ownedBy("ReplicaSet", "a", "uid-a"))},
		{name: "deletion began", old: newPod("1", ownedBy("ReplicaSet", "a", "uid-a")), cur: newPod("2", ownedBy("ReplicaSet", "a", "uid-a"), deleting()),
			want: []string{"deleted a non-final", "queue a"}},
		{name: "deletion began with a relabel, ReplicaSet rule", deleteOld: true,
			old: newPod("1", ownedBy("ReplicaSet", "a", "uid-a"), labelled("a")), cur: newPod("2", ownedBy("ReplicaSet", "b", "uid-b"), labelled("b"), deleting()),
			want: []string{"deleted b non-final", "queue b", "deleted a non-final", "queue a"}},
		{name: "deletion began with a relabel, DaemonSet and Job rule",
			old: newPod("1", ownedBy("ReplicaSet", "a", "uid-a"), labelled("a")), cur: newPod("2", ownedBy("ReplicaSet", "b", "uid-b"), labelled("b"), deleting()),
			want: []string{"deleted b non-final", "queue b"}},
		{name: "owned pod changed", old: newPod("1", ownedBy("ReplicaSet", "a", "uid-a")), cur: newPod("2", ownedBy("ReplicaSet", "a", "uid-a"), labelled("x")),
			want: []string{"updated a", "queue a"}},
		{name: "released: old owner and adopters", old: newPod("1", ownedBy("ReplicaSet", "b", "uid-b"), labelled("a")), cur: newPod("2", labelled("a")),
			want: []string{"updated b", "queue b", "queue a"}},
		{name: "taken over: old and new owner", old: newPod("1", ownedBy("ReplicaSet", "a", "uid-a")), cur: newPod("2", ownedBy("ReplicaSet", "b", "uid-b")),
			want: []string{"updated a", "queue a", "updated b", "queue b"}},
		{name: "orphan relabelled: adopters", old: newPod("1", labelled("x")), cur: newPod("2", labelled("b")),
			want: []string{"queue b"}},
		{name: "orphan changed otherwise: nothing", old: newPod("1", labelled("a")), cur: newPod("2", labelled("a"), func(p *corev1.Pod) { p.Spec.NodeName = "n" })},
		{name: "gone: final deletion observed", delete: newPod("1", ownedBy("ReplicaSet", "a", "uid-a")),
			want: []string{"deleted a final", "queue a"}},
		{name: "gone, owner unknown: nothing", delete: newPod("1", ownedBy("ReplicaSet", "zz", "uid-zz"))},
		{name: "batched (Job): queued after the delay", delay: time.Second, create: newPod("1", ownedBy("ReplicaSet", "a", "uid-a")),
			want: []string{"created a", "queue a after 1s"}},
	}
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(
		rs("a", "uid-a", map[string]string{"app": "a"}),
		rs("b", "uid-b", map[string]string{"app": "b"}),
		rs("empty", "uid-e", nil),
	).Build()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			q := &recorder{}
			h := &PodHandler{
				Reader:   c,
				OwnerGVK: rsGVK,
				NewOwner: func() client.Object { return &appsv1.ReplicaSet{} },
				Adopters: func(ctx context.Context, ns string) ([]Adopter, error) {
					list := &appsv1.ReplicaSetList{}
					err := c.List(ctx, list, client.InNamespace(ns))
					var out []Adopter
					for i := range list.Items {
						out = append(out, Adopter{Key: client.ObjectKeyFromObject(&list.Items[i]), Selector: list.Items[i].Spec.Selector})
					}
					return out, err
				},
				Created: func(o types.NamespacedName) { q.got = append(q.got, "created "+o.Name) },
				Deleted: func(o types.NamespacedName, p *corev1.Pod, final bool) {
					q.got = append(q.got, map[bool]string{true: "deleted " + o.Name + " final", false: "deleted " + o.Name + " non-final"}[final])
				},
				Updated:            func(o types.NamespacedName, _ *corev1.Pod) { q.got = append(q.got, "updated "+o.Name) },
				Delay:              tt.delay,
				DeleteOldOnRelabel: tt.deleteOld,
			}
			ctx := context.Background()
			switch {
			case tt.create != nil:
				h.Create(ctx, event.CreateEvent{Object: tt.create}, q)
			case tt.delete != nil:
				h.Delete(ctx, event.DeleteEvent{Object: tt.delete}, q)
			default:
				h.Update(ctx, event.UpdateEvent{ObjectOld: tt.old, ObjectNew: tt.cur}, q)
			}
			if !slices.Equal(q.got, tt.want) {
				t.Errorf("got %q, want %q", q.got, tt.want)
			}
		})
	}
}

// TestList: the owner's pods and its namespace's orphans, nothing controlled by another
// owner, nothing of another namespace.
func TestList(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	pod := func(name, ns string, opts ...podOpt) client.Object {
		p := newPod("", opts...)
		p.Name, p.Namespace, p.UID = name, ns, types.UID(name)
		return p
	}
	c := fake.NewClientBuilder().WithScheme(scheme).
		WithIndex(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf).
		WithObjects(
			pod("mine", "ns", ownedBy("ReplicaSet", "a", "uid-a")),
			pod("orphan", "ns"),
			pod("theirs", "ns", ownedBy("ReplicaSet", "b", "uid-b")),
			pod("elsewhere", "other"),
			pod("mine-elsewhere", "other", ownedBy("ReplicaSet", "a", "uid-a")),
		).Build()
	owner := rs("a", "uid-a", nil)
	controlled, orphans, err := List[*corev1.Pod](context.Background(), c, owner, func() client.ObjectList { return &corev1.PodList{} })
	if err != nil {
		t.Fatal(err)
	}
	names := func(pods []*corev1.Pod) (out []string) {
		for _, p := range pods {
			out = append(out, p.Name)
		}
		return out
	}
	if got := names(controlled); !slices.Equal(got, []string{"mine"}) {
		t.Errorf("controlled = %q, want [mine]", got)
	}
	if got := names(orphans); !slices.Equal(got, []string{"orphan"}) {
		t.Errorf("orphans = %q, want [orphan]", got)
	}
	all, err := Pods(context.Background(), c, owner)
	if got := names(all); err != nil || !slices.Equal(got, []string{"mine", "orphan"}) {
		t.Errorf("Pods = %q, %v; want [mine orphan]", got, err)
	}
}
