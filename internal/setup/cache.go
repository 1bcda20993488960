package setup

import (
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// OwnCache builds a cache of the controller's own holding only the objects byObject names
// (by namespace and selector), started with the manager. It is for a controller that reads
// a few objects the shared cache leaves out: the shared cache holds one restriction per
// kind (CacheRestrictions), and widening one would cache every object of that kind in the
// cluster. Like the shared cache it reads with kcm's own identity, as upstream's shared
// informers do; reading a kind byObject does not name fails rather than starting an
// informer for all of it.
func (c *Context) OwnCache(byObject map[client.Object]cache.ByObject) (cache.Cache, error) {
	own, err := cache.New(rest.CopyConfig(c.Config), cache.Options{
		Scheme:                      c.Manager.GetScheme(),
		Mapper:                      c.Manager.GetRESTMapper(),
		ByObject:                    byObject,
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return nil, err
	}
	if err := c.Manager.Add(own); err != nil {
		return nil, err
	}
	return own, nil
}
