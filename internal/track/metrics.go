package track

import (
	"sort"
	"sync"
	"unsafe"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
)

// kcm's own families (never upstream's names), so that the views' memory is measured where
// kcm's memory is: in kcm's /metrics.
var (
	viewsDesc = metrics.NewDesc("kcm_object_views",
		"Objects a controller holds a per-object view of (/debug/controllers/<controller>/objects/...).",
		[]string{"controller"}, nil, metrics.ALPHA, "")
	viewsBytesDesc = metrics.NewDesc("kcm_object_views_bytes",
		"Estimated memory of a controller's per-object views: the views, their map entries and the error texts they keep.",
		[]string{"controller"}, nil, metrics.ALPHA, "")

	registerOnce sync.Once
)

// register registers the families in the legacy registry kcm's /metrics serves, once.
func register() {
	registerOnce.Do(func() { legacyregistry.CustomMustRegister(&collector{}) })
}

// objectBytes is the fixed size of one view: the object, the map's key and pointer, and the
// map's own overhead per entry (about a word per slot, at its load factor), without the key's
// strings, which are the request's (the informer's object holds the same).
const objectBytes = int64(unsafe.Sizeof(object{})) + int64(unsafe.Sizeof(types.NamespacedName{})) + 8 + 16

// Bytes is the estimated memory of the controller's views.
func (c *Controller) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.bytesLocked()
}

// errsSize is the size of an object's error texts once a sync of it failed, without the
// texts themselves (errorBytes counts those).
const errsSize = int64(unsafe.Sizeof([ringSize]string{}))

// errsBytes is what an object's error texts add to errorBytes.
func errsBytes(errs *[ringSize]string) int64 {
	if errs == nil {
		return 0
	}
	n := errsSize
	for _, e := range errs {
		n += int64(len(e))
	}
	return n
}

func (c *Controller) bytesLocked() int64 {
	return int64(len(c.objects))*objectBytes + c.errorBytes
}

type collector struct {
	metrics.BaseStableCollector
}

func (*collector) DescribeWithStability(ch chan<- *metrics.Desc) {
	ch <- viewsDesc
	ch <- viewsBytesDesc
}

func (*collector) CollectWithStability(ch chan<- metrics.Metric) {
	mu.Lock()
	names := make([]string, 0, len(controllers))
	for name := range controllers {
		names = append(names, name)
	}
	sort.Strings(names)
	all := make([]*Controller, 0, len(names))
	for _, name := range names {
		all = append(all, controllers[name])
	}
	mu.Unlock()
	for _, c := range all {
		c.mu.Lock()
		tracked, n, b := c.tracked, len(c.objects), c.bytesLocked()
		c.mu.Unlock()
		if !tracked {
			continue
		}
		ch <- metrics.NewLazyConstMetric(viewsDesc, metrics.GaugeValue, float64(n), c.name)
		ch <- metrics.NewLazyConstMetric(viewsBytesDesc, metrics.GaugeValue, float64(b), c.name)
	}
}
