package cloudnodelifecycle_test

import (
	"context"
	"sync"

	corev1 "k8s.io/api/core/v1"
	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

// instancesCloud is k8s.io/cloud-provider's fake provider answering InstancesV2 per node:
// which instances are gone or shut down, and how often each node was asked about.
type instancesCloud struct {
	*fakecloud.Cloud
	// noInstances: neither Instances nor InstancesV2 (as kcm's pool provider).
	noInstances bool

	mu       sync.Mutex
	gone     map[string]bool
	shutdown map[string]bool
	asked    map[string]int
}

func newInstancesCloud() *instancesCloud {
	return &instancesCloud{Cloud: &fakecloud.Cloud{}, gone: map[string]bool{}, shutdown: map[string]bool{}, asked: map[string]int{}}
}

func (c *instancesCloud) Instances() (cloudprovider.Instances, bool) { return c.Cloud, !c.noInstances }

func (c *instancesCloud) InstancesV2() (cloudprovider.InstancesV2, bool) { return c, !c.noInstances }

func (c *instancesCloud) InstanceExists(_ context.Context, node *corev1.Node) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.asked[node.Name]++
	return !c.gone[node.Name], nil
}

func (c *instancesCloud) InstanceShutdown(_ context.Context, node *corev1.Node) (bool, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.shutdown[node.Name], nil
}

func (c *instancesCloud) setGone(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.gone[node] = true
}

func (c *instancesCloud) setShutdown(node string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.shutdown[node] = true
}

// timesAsked is how often the provider was asked whether node's instance exists.
func (c *instancesCloud) timesAsked(node string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.asked[node]
}
