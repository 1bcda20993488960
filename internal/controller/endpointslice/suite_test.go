package endpointslice_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/kcm/kcm/internal/controller/endpointslice"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

// Nodes every spec may put pods on: two zones, equal CPU, Ready.
const (
	nodeA, zoneA = "node-a", "zone-a"
	nodeB, zoneB = "node-b", "zone-b"
)

func TestEndpointSliceController(t *testing.T) {
	testenv.RunSuite(t, "endpointslice-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer(testenv.DualStack)
	Expect(env.StartManager([]string{endpointslice.ControllerName})).To(Succeed())
	ctx := context.Background()
	for name, zone := range map[string]string{nodeA: zoneA, nodeB: zoneB} {
		env.Node(ctx, name, testenv.NodeLabels(map[string]string{corev1.LabelTopologyZone: zone}),
			testenv.NodeCapacity(corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("4")}))
	}
})
