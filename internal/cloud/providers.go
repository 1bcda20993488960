package cloud

// The providers compiled into kcm. Each package registers its provider under its name with
// cloudprovider.RegisterCloudProvider in its init(), and --cloud-provider=<that name> then
// selects it (its --cloud-config is handed to its factory). To compile in another provider
// (any k8s.io/cloud-provider Interface), add one more blank import of its package here.
import (
	// "pool": kcm's own, addresses for LoadBalancer Services from pools in a ConfigMap.
	_ "github.com/kcm/kcm/internal/cloud/pool"
)
