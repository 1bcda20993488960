package procmetrics

import (
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	toolscache "k8s.io/client-go/tools/cache"
)

// informerName is the name upstream's shared informer factory reports its informers under
// (cmd/kube-controller-manager/app/controllermanager.go:546).
const informerName = "kube-controller-manager"

// InformerNames names the informers of kcm's shared cache as upstream names those of its
// shared informer factory, so that client-go reports them in informer_queued_items,
// informer_processing_latency_seconds and informer_store_resource_version (component-base's
// provider) with upstream's labels. Upstream's metadata-only and dynamic informers (garbage
// collector, quota) are unnamed and report nothing; so are kcm's.
type InformerNames struct {
	scheme *runtime.Scheme
	// name is nil when another holder in the process has it (tests run several managers):
	// that manager's informers then report nothing rather than share series.
	name *toolscache.InformerName
}

// NewInformerNames takes the name for the informers of one cache, whose typed objects
// scheme knows. Release gives it back.
func NewInformerNames(scheme *runtime.Scheme) *InformerNames {
	name, err := toolscache.NewInformerName(informerName)
	if err != nil {
		name = nil
	}
	return &InformerNames{scheme: scheme, name: name}
}

// NewInformer is controller-runtime's cache.Options.NewInformer: client-go's shared index
// informer, as controller-runtime's default makes it, with upstream's identity.
func (n *InformerNames) NewInformer(lw toolscache.ListerWatcher, obj runtime.Object, resync time.Duration, indexers toolscache.Indexers) toolscache.SharedIndexInformer {
	opts := toolscache.SharedIndexInformerOptions{ResyncPeriod: resync, Indexers: indexers}
	if gvr, ok := n.resource(obj); ok {
		opts.Identifier = n.name.WithResource(gvr)
	}
	return toolscache.NewSharedIndexInformerWithOptions(lw, obj, opts)
}

// resource is the identity upstream's generated informer for obj's type reports: its group
// and version, and the lower-cased kind plus "s" (client-go's informers say "endpointss" and
// "ingressclasss", and so does informer_*'s resource label upstream). Metadata-only and
// unstructured informers have none.
func (n *InformerNames) resource(obj runtime.Object) (schema.GroupVersionResource, bool) {
	switch obj.(type) {
	case *metav1.PartialObjectMetadata, *unstructured.Unstructured:
		return schema.GroupVersionResource{}, false
	}
	if n.name == nil {
		return schema.GroupVersionResource{}, false
	}
	gvks, _, err := n.scheme.ObjectKinds(obj)
	if err != nil || len(gvks) == 0 {
		return schema.GroupVersionResource{}, false
	}
	gvk := gvks[0]
	return gvk.GroupVersion().WithResource(strings.ToLower(gvk.Kind) + "s"), true
}

// Release frees the name: this cache's informers stop reporting, and another cache may take
// it.
func (n *InformerNames) Release() { n.name.Release() }
