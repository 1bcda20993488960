package pool_test

import (
	"strings"
	"testing"

	cloudprovider "k8s.io/cloud-provider"

	"github.com/kcm/kcm/internal/cloud"
	"github.com/kcm/kcm/internal/cloud/pool"
)

// The provider kcm makes for --cloud-provider=pool: registered by the package, configured from
// --cloud-config's content, serving its class to the service-lb controller, and offering no
// instances, zones, clusters or routes, so the node and route loops do not run with it.
func TestRegisteredAsPool(t *testing.T) {
	if cloud.PoolProviderName != "pool" || !cloudprovider.IsCloudProvider(cloud.PoolProviderName) {
		t.Fatalf("provider %q not registered", cloud.PoolProviderName)
	}
	c, err := cloudprovider.GetCloudProvider("pool", strings.NewReader("loadBalancerClass: example.com/lb\n"))
	if err != nil {
		t.Fatal(err)
	}
	classer, ok := c.(cloud.LoadBalancerClasser)
	if !ok || classer.LoadBalancerClass() != "example.com/lb" {
		t.Errorf("provider is not a LoadBalancerClasser of the configured class: %T", c)
	}
	if c.ProviderName() != "pool" || !c.HasClusterID() {
		t.Errorf("ProviderName %q, HasClusterID %v", c.ProviderName(), c.HasClusterID())
	}
	if _, ok := c.LoadBalancer(); !ok {
		t.Error("no LoadBalancer")
	}
	_, instances := c.Instances()
	_, instancesV2 := c.InstancesV2()
	_, zones := c.Zones()
	_, clusters := c.Clusters()
	_, routes := c.Routes()
	if instances || instancesV2 || zones || clusters || routes {
		t.Errorf("Instances %v, InstancesV2 %v, Zones %v, Clusters %v, Routes %v: want none", instances, instancesV2, zones, clusters, routes)
	}
	if _, err := cloudprovider.GetCloudProvider("pool", strings.NewReader("configMap: [x]\n")); err == nil {
		t.Error("a bad --cloud-config made a provider")
	}
	d, err := cloudprovider.GetCloudProvider("pool", nil)
	if err != nil || d.(cloud.LoadBalancerClasser).LoadBalancerClass() != pool.DefaultLoadBalancerClass {
		t.Errorf("no --cloud-config: %v, %v", d, err)
	}
}
