package noderoute_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"sync"

	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

// routesCloud is k8s.io/cloud-provider's fake provider with what the specs need to look at
// or steer: the name hints CreateRoute was given, and CIDRs whose creation it refuses.
type routesCloud struct {
	*fakecloud.Cloud
	mu     sync.Mutex
	hints  map[string]string // DestinationCIDR -> nameHint
	refuse map[string]bool   // DestinationCIDR -> CreateRoute fails
}

func newRoutesCloud(routes ...*cloudprovider.Route) *routesCloud {
	c := &routesCloud{
		Cloud:  &fakecloud.Cloud{RouteMap: map[string]*fakecloud.Route{}},
		hints:  map[string]string{},
		refuse: map[string]bool{},
	}
	for _, r := range routes {
		c.RouteMap[r.Name] = &fakecloud.Route{ClusterName: "kubernetes", Route: *r}
	}
	return c
}

// Routes is the wrapper's own, so that the controller's calls go through it.
func (c *routesCloud) Routes() (cloudprovider.Routes, bool) { return c, !c.DisableRoutes }

func (c *routesCloud) CreateRoute(ctx context.Context, clusterName, nameHint string, route *cloudprovider.Route) error {
	c.mu.Lock()
	refused := c.refuse[route.DestinationCIDR]
	c.hints[route.DestinationCIDR] = nameHint
	c.mu.Unlock()
	if refused {
		return errors.New("quota exceeded")
	}
	return c.Cloud.CreateRoute(ctx, clusterName, nameHint, route)
}

func (c *routesCloud) setRefused(cidr string, refused bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.refuse[cidr] = refused
}

func (c *routesCloud) hint(cidr string) string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.hints[cidr]
}

// routes lists the provider's routes as sorted "node cidr" lines.
func (c *routesCloud) routes() []string {
	c.Lock.Lock()
	defer c.Lock.Unlock()
	var out []string
	for _, r := range c.RouteMap {
		out = append(out, fmt.Sprintf("%s %s", r.Route.TargetNode, r.Route.DestinationCIDR))
	}
	sort.Strings(out)
	return out
}

// called reports whether the provider was called with desc (e.g. "list-routes").
func (c *routesCloud) called(desc string) bool {
	c.Lock.Lock()
	defer c.Lock.Unlock()
	for _, call := range c.Calls {
		if call == desc {
			return true
		}
	}
	return false
}
