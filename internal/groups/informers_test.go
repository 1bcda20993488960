package groups

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// fakeCache is the part of a shared cache the terms use: informers made on first use, removed
// on request, with client-go's indexer refusing an index added twice.
type fakeCache struct {
	cache.Cache
	scheme *runtime.Scheme

	mu        sync.Mutex
	informers map[string]*fakeInformer
	made      []string
	removed   []string
}

func newFakeCache(t *testing.T) *fakeCache {
	s := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(s); err != nil {
		t.Fatal(err)
	}
	return &fakeCache{scheme: s, informers: map[string]*fakeInformer{}}
}

func (c *fakeCache) key(obj runtime.Object) string {
	gvk, err := apiutil.GVKForObject(obj, c.scheme)
	if err != nil {
		panic(err)
	}
	if _, ok := obj.(*metav1.PartialObjectMetadata); ok {
		return gvk.Kind + " (metadata)"
	}
	return gvk.Kind
}

func (c *fakeCache) GetInformer(_ context.Context, obj client.Object, _ ...cache.InformerGetOption) (cache.Informer, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.key(obj)
	inf, ok := c.informers[k]
	if !ok {
		inf = &fakeInformer{indexer: toolscache.NewIndexer(toolscache.MetaNamespaceKeyFunc, toolscache.Indexers{}), handlers: map[*fakeReg]bool{}}
		c.informers[k] = inf
		c.made = append(c.made, k)
	}
	return inf, nil
}

func (c *fakeCache) RemoveInformer(_ context.Context, obj client.Object) error {
	c.mu.Lock()
	defer c.mu.Unlock()
	k := c.key(obj)
	if inf := c.informers[k]; inf != nil {
		inf.stopped = true
	}
	delete(c.informers, k)
	c.removed = append(c.removed, k)
	return nil
}

func (c *fakeCache) IndexField(ctx context.Context, obj client.Object, field string, _ client.IndexerFunc) error {
	inf, _ := c.GetInformer(ctx, obj)
	return inf.(*fakeInformer).indexer.AddIndexers(toolscache.Indexers{"field:" + field: func(any) ([]string, error) { return nil, nil }})
}

func (c *fakeCache) List(ctx context.Context, list client.ObjectList, _ ...client.ListOption) error {
	return nil
}

type fakeInformer struct {
	cache.Informer
	indexer  toolscache.Indexer
	handlers map[*fakeReg]bool
	stopped  bool
}

type fakeReg struct {
	toolscache.ResourceEventHandlerRegistration
}

func (i *fakeInformer) AddEventHandlerWithOptions(toolscache.ResourceEventHandler, toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	r := &fakeReg{}
	i.handlers[r] = true
	return r, nil
}

func (i *fakeInformer) RemoveEventHandler(r toolscache.ResourceEventHandlerRegistration) error {
	if !i.handlers[r.(*fakeReg)] {
		return errors.New("no such handler")
	}
	delete(i.handlers, r.(*fakeReg))
	return nil
}

func (i *fakeInformer) IsStopped() bool                { return i.stopped }
func (i *fakeInformer) GetIndexer() toolscache.Indexer { return i.indexer }

// An informer stays while a term uses it and goes with the last one; the handlers a term
// added go with the term, whoever else still uses the informer.
func TestInformersFollowTerms(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCache(t)
	in := NewInformers(fc, fc.scheme)
	apps, nodes := in.Term("apps"), in.Term("nodes")

	podsOfApps, err := apps.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := podsOfApps.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerFuncs{}, toolscache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := apps.GetInformer(ctx, &appsv1.ReplicaSet{}); err != nil {
		t.Fatal(err)
	}
	podsOfNodes, err := nodes.GetInformer(ctx, &corev1.Pod{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := podsOfNodes.AddEventHandlerWithOptions(toolscache.ResourceEventHandlerFuncs{}, toolscache.HandlerOptions{}); err != nil {
		t.Fatal(err)
	}
	// A list is a read of its items' informer.
	if err := nodes.List(ctx, &corev1.NodeList{}); err != nil {
		t.Fatal(err)
	}
	kinds := in.Kinds()
	slices.Sort(kinds)
	if want := []string{"/v1, Kind=Node", "/v1, Kind=Pod", "apps/v1, Kind=ReplicaSet"}; !slices.Equal(kinds, want) {
		t.Fatalf("kinds in use = %q, want %q", kinds, want)
	}

	if err := apps.End(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"ReplicaSet"}; !slices.Equal(fc.removed, want) {
		t.Fatalf("after the apps term: removed %q, want %q (pods are still the nodes term's)", fc.removed, want)
	}
	if n := len(fc.informers["Pod"].handlers); n != 1 {
		t.Fatalf("the pod informer has %d handlers after the apps term, want the nodes term's 1", n)
	}

	if err := nodes.End(ctx); err != nil {
		t.Fatal(err)
	}
	removed := slices.Clone(fc.removed)
	slices.Sort(removed)
	if want := []string{"Node", "Pod", "ReplicaSet"}; !slices.Equal(removed, want) {
		t.Fatalf("after both terms: removed %q, want %q", removed, want)
	}
	if len(in.Kinds()) != 0 || len(fc.informers) != 0 {
		t.Fatalf("after both terms: kinds in use %q, informers %d; want none", in.Kinds(), len(fc.informers))
	}

	// An ended term cannot bring an informer back: a straggler of its controllers is refused.
	if _, err := apps.GetInformer(ctx, &corev1.Pod{}); !errors.Is(err, errTermEnded) {
		t.Fatalf("GetInformer after the term ended: %v, want errTermEnded", err)
	}
	if len(fc.informers) != 0 {
		t.Fatalf("an ended term made an informer: %v", fc.made)
	}
}

// A field index is added once to the informer the cache holds, whichever terms ask for it,
// and again to the informer made after the last one was removed.
func TestIndexesFollowInformers(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCache(t)
	in := NewInformers(fc, fc.scheme)
	noop := func(client.Object) []string { return nil }
	a, b := in.Term("a"), in.Term("b")
	if err := a.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", noop); err != nil {
		t.Fatal(err)
	}
	if err := b.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", noop); err != nil {
		t.Fatalf("the second term's index of the same field: %v (client-go refuses an index added twice)", err)
	}
	first := fc.informers["Pod"]
	if _, ok := first.indexer.GetIndexers()["field:spec.nodeName"]; !ok {
		t.Fatal("the pod informer has no spec.nodeName index")
	}
	if err := errors.Join(a.End(ctx), b.End(ctx)); err != nil {
		t.Fatal(err)
	}
	c := in.Term("c")
	if err := c.IndexField(ctx, &corev1.Pod{}, "spec.nodeName", noop); err != nil {
		t.Fatal(err)
	}
	second := fc.informers["Pod"]
	if second == first {
		t.Fatal("the pod informer was not made again after the last term ended")
	}
	if _, ok := second.indexer.GetIndexers()["field:spec.nodeName"]; !ok {
		t.Fatal("the new pod informer lacks the index")
	}
}

// Metadata-only reads use, and remove, the metadata informer of the kind.
func TestMetadataKinds(t *testing.T) {
	ctx := context.Background()
	fc := newFakeCache(t)
	in := NewInformers(fc, fc.scheme)
	gc := in.Term("gc")
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("SecretList"))
	if err := gc.List(ctx, list); err != nil {
		t.Fatal(err)
	}
	if got, want := in.Kinds(), []string{"/v1, Kind=Secret (metadata)"}; !slices.Equal(got, want) {
		t.Fatalf("kinds = %q, want %q", got, want)
	}
	if err := gc.End(ctx); err != nil {
		t.Fatal(err)
	}
	if want := []string{"Secret (metadata)"}; !slices.Equal(fc.removed, want) {
		t.Fatalf("removed %q, want %q", fc.removed, want)
	}
}
