package cloudnodelifecycle_test

import (
	"io"
	"sync"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	cloudprovider "k8s.io/cloud-provider"

	"github.com/kcm/kcm/internal/testenv"
)

// providerName is the name the suite's provider is registered under, for --cloud-provider.
const providerName = "kcm-test-instances"

var (
	env *testenv.Env
	// provider is what the registered factory hands the next manager.
	provider *instancesCloud
	mu       sync.Mutex
)

func TestCloudNodeLifecycle(t *testing.T) {
	testenv.RunSuite(t, "cloud-node-lifecycle-controller suite")
}

func init() {
	cloudprovider.RegisterCloudProvider(providerName, func(io.Reader) (cloudprovider.Interface, error) {
		mu.Lock()
		defer mu.Unlock()
		return provider, nil
	})
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
})

// useProvider makes c the provider the next manager gets.
func useProvider(c *instancesCloud) *instancesCloud {
	mu.Lock()
	defer mu.Unlock()
	provider = c
	return c
}
