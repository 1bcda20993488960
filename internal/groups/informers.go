package groups

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"
)

// Informers is the shared cache as the groups' terms use it: it records which kinds each
// term's controllers read, watch or index, and removes a kind's informer from the shared cache
// when the last term using it ends, so that a replica holds only what the groups it leads
// need.
type Informers struct {
	cache  cache.Cache
	scheme *runtime.Scheme

	mu    sync.Mutex
	kinds map[kind]*kindUse
}

// kind is an informer of the shared cache: a GroupVersionKind in one of the cache's three
// forms (typed objects, metadata only, unstructured), each an informer of its own.
type kind struct {
	gvk  schema.GroupVersionKind
	form form
}

type form int

const (
	structured form = iota
	metadataOnly
	unstructuredForm
)

// kindUse is who uses a kind's informer now, and how to remove it.
type kindUse struct {
	proto client.Object
	terms map[*termCache]bool
}

// NewInformers wraps the shared cache; scheme resolves typed objects' kinds.
func NewInformers(c cache.Cache, scheme *runtime.Scheme) *Informers {
	return &Informers{cache: c, scheme: scheme, kinds: map[kind]*kindUse{}}
}

// Term returns the cache one term's controllers are given. End it once they have stopped.
func (in *Informers) Term(group string) *termCache {
	return &termCache{Cache: in.cache, in: in, group: group, used: map[kind]bool{}}
}

// Kinds lists the kinds whose informers the running terms use, as "group/version, Kind=..."
// with a " (metadata)" or " (unstructured)" suffix for those forms: what a replica holds.
func (in *Informers) Kinds() []string {
	in.mu.Lock()
	defer in.mu.Unlock()
	out := make([]string, 0, len(in.kinds))
	for k := range in.kinds {
		out = append(out, k.String())
	}
	return out
}

func (k kind) String() string {
	switch k.form {
	case metadataOnly:
		return k.gvk.String() + " (metadata)"
	case unstructuredForm:
		return k.gvk.String() + " (unstructured)"
	}
	return k.gvk.String()
}

// use records that t uses k's informer: before the informer is asked for, so that a term
// ending meanwhile does not remove it.
func (in *Informers) use(t *termCache, k kind, proto client.Object) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	if t.ended {
		return errTermEnded
	}
	u, ok := in.kinds[k]
	if !ok {
		u = &kindUse{proto: proto, terms: map[*termCache]bool{}}
		in.kinds[k] = u
	}
	u.terms[t] = true
	t.used[k] = true
	return nil
}

// release forgets t's uses and removes the informers no other term uses.
func (in *Informers) release(ctx context.Context, t *termCache) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	t.ended = true
	var errs []error
	for k := range t.used {
		u := in.kinds[k]
		if u == nil {
			continue
		}
		delete(u.terms, t)
		if len(u.terms) > 0 {
			continue
		}
		delete(in.kinds, k)
		if err := in.cache.RemoveInformer(ctx, u.proto); err != nil {
			errs = append(errs, fmt.Errorf("removing the informer of %s: %w", k, err))
		}
	}
	return errors.Join(errs...)
}

// index adds a field index to k's informer unless the informer has it already: another term
// added it to the informer the cache holds now. An informer removed and made again has none,
// and gets it again. Under the lock, so that two terms do not both add it.
func (in *Informers) index(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	in.mu.Lock()
	defer in.mu.Unlock()
	inf, err := in.cache.GetInformer(ctx, obj, cache.BlockUntilSynced(false))
	if err != nil {
		return err
	}
	if ix, ok := inf.(interface{ GetIndexer() toolscache.Indexer }); ok {
		// controller-runtime names a field's index "field:<field>" (its FieldIndexName).
		if _, has := ix.GetIndexer().GetIndexers()["field:"+field]; has {
			return nil
		}
	}
	return in.cache.IndexField(ctx, obj, field, extract)
}

var errTermEnded = errors.New("the controller group's term has ended")

// kindOf is the informer an object or a list of objects is read from, and an object to
// remove that informer by.
func (in *Informers) kindOf(obj runtime.Object) (kind, client.Object, error) {
	gvk, err := apiutil.GVKForObject(obj, in.scheme)
	if err != nil {
		return kind{}, nil, err
	}
	if _, isList := obj.(metav1.ListInterface); isList {
		gvk.Kind = strings.TrimSuffix(gvk.Kind, "List")
	}
	switch obj.(type) {
	case runtime.Unstructured:
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		return kind{gvk, unstructuredForm}, u, nil
	case *metav1.PartialObjectMetadata, *metav1.PartialObjectMetadataList:
		m := &metav1.PartialObjectMetadata{}
		m.SetGroupVersionKind(gvk)
		return kind{gvk, metadataOnly}, m, nil
	}
	o, err := in.scheme.New(gvk)
	if err != nil {
		return kind{}, nil, err
	}
	proto, ok := o.(client.Object)
	if !ok {
		return kind{}, nil, fmt.Errorf("%s is not an object", gvk)
	}
	return kind{gvk, structured}, proto, nil
}

// termCache is the shared cache as one term sees it. Reads, informers and indexes go to the
// shared cache once their kind is recorded; the event handlers the term's controllers add
// are removed when the term ends, since the informer may outlive the term (another group uses
// it) and controller-runtime never removes a source's handler itself.
type termCache struct {
	cache.Cache
	in    *Informers
	group string

	// used and ended are guarded by in.mu.
	used  map[kind]bool
	ended bool

	mu       sync.Mutex
	handlers []handler
}

type handler struct {
	informer cache.Informer
	reg      toolscache.ResourceEventHandlerRegistration
}

func (t *termCache) record(obj runtime.Object) error {
	k, proto, err := t.in.kindOf(obj)
	if err != nil {
		return err
	}
	return t.in.use(t, k, proto)
}

// Get reads from the shared cache.
func (t *termCache) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if err := t.record(obj); err != nil {
		return err
	}
	return t.Cache.Get(ctx, key, obj, opts...)
}

// List reads from the shared cache.
func (t *termCache) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := t.record(list); err != nil {
		return err
	}
	return t.Cache.List(ctx, list, opts...)
}

// GetInformer returns the shared informer, through which the handlers the term adds are
// recorded.
func (t *termCache) GetInformer(ctx context.Context, obj client.Object, opts ...cache.InformerGetOption) (cache.Informer, error) {
	if err := t.record(obj); err != nil {
		return nil, err
	}
	inf, err := t.Cache.GetInformer(ctx, obj, opts...)
	if err != nil {
		return nil, err
	}
	return &termInformer{Informer: inf, term: t}, nil
}

// GetInformerForKind is GetInformer for a typed kind.
func (t *termCache) GetInformerForKind(ctx context.Context, gvk schema.GroupVersionKind, opts ...cache.InformerGetOption) (cache.Informer, error) {
	o, err := t.in.scheme.New(gvk)
	if err != nil {
		return nil, err
	}
	obj, ok := o.(client.Object)
	if !ok {
		return nil, fmt.Errorf("%s is not an object", gvk)
	}
	return t.GetInformer(ctx, obj, opts...)
}

// RemoveInformer is refused: informers are removed when no term uses them any more.
func (t *termCache) RemoveInformer(context.Context, client.Object) error {
	return errors.New("a controller group's term does not remove the shared cache's informers")
}

// IndexField adds the index to the kind's informer unless it has it already.
func (t *termCache) IndexField(ctx context.Context, obj client.Object, field string, extract client.IndexerFunc) error {
	if err := t.record(obj); err != nil {
		return err
	}
	return t.in.index(ctx, obj, field, extract)
}

// End removes the handlers the term added and releases its informers. Call it once every
// controller of the term has stopped.
func (t *termCache) End(ctx context.Context) error {
	t.mu.Lock()
	hs := t.handlers
	t.handlers = nil
	t.mu.Unlock()
	var errs []error
	for _, h := range hs {
		if err := h.informer.RemoveEventHandler(h.reg); err != nil && !h.informer.IsStopped() {
			errs = append(errs, err)
		}
	}
	errs = append(errs, t.in.release(ctx, t))
	return errors.Join(errs...)
}

func (t *termCache) added(inf cache.Informer, reg toolscache.ResourceEventHandlerRegistration, err error) (toolscache.ResourceEventHandlerRegistration, error) {
	if err == nil {
		t.mu.Lock()
		t.handlers = append(t.handlers, handler{inf, reg})
		t.mu.Unlock()
	}
	return reg, err
}

// termInformer is a shared informer whose new handlers belong to the term.
type termInformer struct {
	cache.Informer
	term *termCache
}

func (i *termInformer) AddEventHandler(h toolscache.ResourceEventHandler) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandler(h)
	return i.term.added(i.Informer, reg, err)
}

func (i *termInformer) AddEventHandlerWithResyncPeriod(h toolscache.ResourceEventHandler, resync time.Duration) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandlerWithResyncPeriod(h, resync)
	return i.term.added(i.Informer, reg, err)
}

func (i *termInformer) AddEventHandlerWithOptions(h toolscache.ResourceEventHandler, opts toolscache.HandlerOptions) (toolscache.ResourceEventHandlerRegistration, error) {
	reg, err := i.Informer.AddEventHandlerWithOptions(h, opts)
	return i.term.added(i.Informer, reg, err)
}

// GetStore and GetIndexer reach the shared informer's store, as code that type-asserts them
// on a cache informer expects (internal/staleness, podgc). Every informer of
// controller-runtime's cache has both; nil only were it ever not so.
func (i *termInformer) GetStore() toolscache.Store {
	if s, ok := i.Informer.(interface{ GetStore() toolscache.Store }); ok {
		return s.GetStore()
	}
	return nil
}

func (i *termInformer) GetIndexer() toolscache.Indexer {
	if s, ok := i.Informer.(interface{ GetIndexer() toolscache.Indexer }); ok {
		return s.GetIndexer()
	}
	return nil
}
