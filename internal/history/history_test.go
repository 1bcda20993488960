package history

import (
	"context"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcm/kcm/internal/index"
)

var stsGVK = appsv1.SchemeGroupVersion.WithKind("StatefulSet")

func owner(name, uid string) *appsv1.StatefulSet {
	return &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(uid)}}
}

func raw(s string) runtime.RawExtension { return runtime.RawExtension{Raw: []byte(s)} }

func i32(n int32) *int32 { return &n }

func TestHash(t *testing.T) {
	rev := &appsv1.ControllerRevision{Data: raw(`{"spec":{"template":{}}}`)}
	tests := []struct {
		name      string
		a, b      *appsv1.ControllerRevision
		ca, cb    *int32
		wantEqual bool
	}{
		{"same data, no count", rev, rev.DeepCopy(), nil, nil, true},
		{"same data, same count", rev, rev.DeepCopy(), i32(1), i32(1), true},
		{"same data, other count", rev, rev.DeepCopy(), i32(0), i32(1), false},
		{"other data", rev, &appsv1.ControllerRevision{Data: raw(`{"spec":{}}`)}, nil, nil, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ha, hb := Hash(tt.a, tt.ca), Hash(tt.b, tt.cb)
			if (ha == hb) != tt.wantEqual {
				t.Errorf("Hash = %q, %q; equal want %v", ha, hb, tt.wantEqual)
			}
		})
	}
	// Upstream's value for the same input (fnv32 of the bytes then "0", SafeEncodeString).
	if got, want := Hash(&appsv1.ControllerRevision{Data: raw("abc")}, i32(0)), Hash(&appsv1.ControllerRevision{Data: raw("abc0")}, nil); got != want {
		t.Errorf("collision count not appended to the data: %q != %q", got, want)
	}
}

func TestName(t *testing.T) {
	long := make([]byte, 300)
	for i := range long {
		long[i] = 'a'
	}
	tests := []struct {
		prefix, hash string
		wantLen      int
	}{
		{"web", "abc12", len("web-abc12")},
		{string(long), "abc12", 223 + 1 + 5},
	}
	for _, tt := range tests {
		if got := Name(tt.prefix, tt.hash); len(got) != tt.wantLen {
			t.Errorf("Name(%d chars) has %d chars, want %d", len(tt.prefix), len(got), tt.wantLen)
		}
	}
	if got := Name("web", "h"); got != "web-h" {
		t.Errorf("Name = %q", got)
	}
}

func TestNew(t *testing.T) {
	o := owner("web", "u1")
	rev := New(o, stsGVK, map[string]string{"app": "web"}, raw(`{}`), 3, i32(0))
	if rev.Name != "web-"+rev.Labels[HashLabel] || rev.Labels[HashLabel] != Hash(rev, i32(0)) {
		t.Errorf("name %q, hash label %q", rev.Name, rev.Labels[HashLabel])
	}
	if rev.Labels["app"] != "web" || rev.Revision != 3 || rev.Namespace != "ns" {
		t.Errorf("unexpected revision %+v", rev.ObjectMeta)
	}
	if ref := metav1.GetControllerOf(rev); ref == nil || ref.UID != "u1" || ref.Kind != "StatefulSet" {
		t.Errorf("controller ref %+v", ref)
	}
}

func TestEqualAndFind(t *testing.T) {
	a := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Data: raw("x")}
	b := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "b"}, Data: raw("y")}
	c := &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: "c"}, Data: raw("x")}
	tests := []struct {
		name string
		l, r *appsv1.ControllerRevision
		want bool
	}{
		{"same data", a, c, true},
		{"other data", a, b, false},
		{"nil and nil", nil, nil, true},
		{"nil and one", a, nil, false},
	}
	for _, tt := range tests {
		if got := Equal(tt.l, tt.r); got != tt.want {
			t.Errorf("%s: Equal = %v", tt.name, got)
		}
	}
	got := FindEqual([]*appsv1.ControllerRevision{a, b, c}, &appsv1.ControllerRevision{Data: raw("x")})
	if len(got) != 2 || got[0] != a || got[1] != c {
		t.Errorf("FindEqual = %v", got)
	}
}

func TestSortAndNext(t *testing.T) {
	t0 := metav1.NewTime(time.Unix(1000, 0))
	t1 := metav1.NewTime(time.Unix(2000, 0))
	mk := func(name string, n int64, ts metav1.Time) *appsv1.ControllerRevision {
		return &appsv1.ControllerRevision{ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: ts}, Revision: n}
	}
	tests := []struct {
		name     string
		in       []*appsv1.ControllerRevision
		want     []string
		wantNext int64
	}{
		{"empty", nil, nil, 1},
		{"by revision", []*appsv1.ControllerRevision{mk("c", 3, t0), mk("a", 1, t0), mk("b", 2, t0)}, []string{"a", "b", "c"}, 4},
		{"tie by time", []*appsv1.ControllerRevision{mk("a", 1, t1), mk("b", 1, t0)}, []string{"b", "a"}, 2},
		{"tie by name", []*appsv1.ControllerRevision{mk("b", 5, t0), mk("a", 5, t0)}, []string{"a", "b"}, 6},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			Sort(tt.in)
			var names []string
			for _, r := range tt.in {
				names = append(names, r.Name)
			}
			if len(names) != len(tt.want) {
				t.Fatalf("Sort = %v, want %v", names, tt.want)
			}
			for i := range names {
				if names[i] != tt.want[i] {
					t.Fatalf("Sort = %v, want %v", names, tt.want)
				}
			}
			if got := Next(tt.in); got != tt.wantNext {
				t.Errorf("Next = %d, want %d", got, tt.wantNext)
			}
		})
	}
}

func fakeClient(objs ...client.Object) client.Client {
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).
		WithIndex(&appsv1.ControllerRevision{}, index.ControllerUID, index.ControllerUIDOf).Build()
}

func TestCreate(t *testing.T) {
	ctx := context.Background()
	o := owner("web", "u1")
	tests := []struct {
		name          string
		existing      func(rev *appsv1.ControllerRevision) []client.Object
		wantCollision int32
		wantSameName  bool
	}{
		{"fresh", func(*appsv1.ControllerRevision) []client.Object { return nil }, 0, true},
		{"equal revision exists", func(rev *appsv1.ControllerRevision) []client.Object {
			return []client.Object{rev.DeepCopy()}
		}, 0, true},
		{"name taken by other data", func(rev *appsv1.ControllerRevision) []client.Object {
			other := rev.DeepCopy()
			other.Data = raw(`{"other":true}`)
			return []client.Object{other}
		}, 1, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rev := New(o, stsGVK, nil, raw(`{"a":1}`), 1, i32(0))
			c := fakeClient(tt.existing(rev)...)
			count := int32(0)
			got, err := Create(ctx, c, o, rev, &count)
			if err != nil {
				t.Fatal(err)
			}
			if count != tt.wantCollision {
				t.Errorf("collisionCount = %d, want %d", count, tt.wantCollision)
			}
			if (got.Name == rev.Name) != tt.wantSameName {
				t.Errorf("name %q vs first %q", got.Name, rev.Name)
			}
			if string(got.Data.Raw) != `{"a":1}` || got.Labels[HashLabel] != Hash(rev, &count) {
				t.Errorf("created %+v", got)
			}
		})
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	o := owner("web", "u1")
	mine := New(o, stsGVK, map[string]string{"app": "web"}, raw("1"), 1, nil)
	orphan := New(o, stsGVK, map[string]string{"app": "web"}, raw("2"), 2, nil)
	orphan.OwnerReferences = nil
	others := New(owner("db", "u2"), stsGVK, map[string]string{"app": "web"}, raw("3"), 1, nil)
	unmatched := New(o, stsGVK, map[string]string{"app": "db"}, raw("4"), 1, nil)
	unmatched.OwnerReferences = nil
	c := fakeClient(mine, orphan, others, unmatched)
	got, err := List(ctx, c, o, labels.SelectorFromSet(labels.Set{"app": "web"}))
	if err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	for _, r := range got {
		names[r.Name] = true
	}
	if len(got) != 2 || !names[mine.Name] || !names[orphan.Name] {
		t.Errorf("List = %v, want %s and %s", names, mine.Name, orphan.Name)
	}
}
