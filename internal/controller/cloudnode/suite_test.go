package cloudnode_test

import (
	"io"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"

	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestCloudNodeController(t *testing.T) {
	testenv.RunSuite(t, "cloud-node-controller suite")
}

// Providers the suite registers with k8s.io/cloud-provider, each a fake: testProvider looks
// instances up through InstancesV2 in the suite's own table (instances); noInstancesProvider
// has neither InstancesV2 nor Instances.
const (
	testProvider        = "cloudnode-test"
	noInstancesProvider = "cloudnode-test-noinstances"
)

var (
	cloud = &instances{byNode: map[string]cloudprovider.InstanceMetadata{}, lookups: map[string]int{}}
	// noInstancesMade counts the no-instances providers made: a witness that the controller
	// got that provider and decided from it.
	noInstancesMade atomic.Int32
)

func init() {
	// One fake for every manager of the suite, the table behind it.
	withInstances := &fake.Cloud{EnableInstancesV2: true, Provider: testProvider, OverrideInstanceMetadata: cloud.metadata}
	cloudprovider.RegisterCloudProvider(testProvider, func(io.Reader) (cloudprovider.Interface, error) {
		return withInstances, nil
	})
	cloudprovider.RegisterCloudProvider(noInstancesProvider, func(io.Reader) (cloudprovider.Interface, error) {
		noInstancesMade.Add(1)
		return &fake.Cloud{DisableInstances: true, Provider: noInstancesProvider}, nil
	})
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
})
