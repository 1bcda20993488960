package pod

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	endpointsliceutil "k8s.io/endpointslice/util"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServicesToSync are the Services of a pod's namespace whose endpoints a pod event may
// change, as the endpoints and endpointslice controllers decide it upstream
// (k8s.io/endpointslice's pod projection): none for an update that changed neither the
// pod's endpoint nor its labels, hostname or subdomain; on a label change only the Services
// it joined or left, unless its endpoint changed too. old is nil for a creation, cur nil for
// a deletion.
func ServicesToSync(reader client.Reader, old, cur *corev1.Pod) ([]types.NamespacedName, error) {
	var oldObj, curObj any
	if old != nil {
		oldObj = old
	}
	if cur != nil {
		curObj = cur
	}
	keys, err := endpointsliceutil.GetServicesToUpdate(serviceLister{reader},
		endpointsliceutil.GetPodUpdateProjectionKey(oldObj, curObj))
	if err != nil {
		return nil, err
	}
	out := make([]types.NamespacedName, 0, len(keys))
	for _, key := range sets.List(keys) {
		ns, name, err := cache.SplitMetaNamespaceKey(key)
		if err != nil {
			return nil, err
		}
		out = append(out, types.NamespacedName{Namespace: ns, Name: name})
	}
	return out, nil
}

// serviceLister reads Services from controller-runtime's cache for the library, which
// takes client-go's lister.
type serviceLister struct{ reader client.Reader }

var _ corelisters.ServiceLister = serviceLister{}

func (l serviceLister) List(selector labels.Selector) ([]*corev1.Service, error) {
	return l.list(selector)
}

func (l serviceLister) Services(namespace string) corelisters.ServiceNamespaceLister {
	return serviceNamespaceLister{l, namespace}
}

func (l serviceLister) list(selector labels.Selector, opts ...client.ListOption) ([]*corev1.Service, error) {
	list := &corev1.ServiceList{}
	opts = append(opts, client.MatchingLabelsSelector{Selector: selector})
	if err := l.reader.List(context.Background(), list, opts...); err != nil {
		return nil, err
	}
	out := make([]*corev1.Service, len(list.Items))
	for i := range list.Items {
		out[i] = &list.Items[i]
	}
	return out, nil
}

type serviceNamespaceLister struct {
	serviceLister
	namespace string
}

func (l serviceNamespaceLister) List(selector labels.Selector) ([]*corev1.Service, error) {
	return l.list(selector, client.InNamespace(l.namespace))
}

func (l serviceNamespaceLister) Get(name string) (*corev1.Service, error) {
	svc := &corev1.Service{}
	if err := l.reader.Get(context.Background(), types.NamespacedName{Namespace: l.namespace, Name: name}, svc); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, apierrors.NewNotFound(corev1.Resource("service"), name)
		}
		return nil, err
	}
	return svc, nil
}
