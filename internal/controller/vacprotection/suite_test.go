package vacprotection_test

import (
	"context"
	"sync/atomic"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/vacprotection"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// blind makes the controller's cache find no claim or volume by class, as a cache that
	// has not yet seen them would: only the live check can then keep a class.
	blind atomic.Bool
)

func TestVACProtectionController(t *testing.T) {
	testenv.RunSuite(t, "volumeattributesclass-protection-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{vacprotection.ControllerName}, nil,
		setup.OverrideFor[vacprotection.Reconciler](vacprotection.ControllerName, func(r *vacprotection.Reconciler) {
			r.Client = &blindClient{Client: r.Client}
		}))).To(Succeed())
})

// blindClient answers the lists by class with nothing while blind is set.
type blindClient struct{ client.Client }

func (c *blindClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := c.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	if blind.Load() {
		switch l := list.(type) {
		case *corev1.PersistentVolumeClaimList:
			l.Items = nil
		case *corev1.PersistentVolumeList:
			l.Items = nil
		}
	}
	return nil
}
