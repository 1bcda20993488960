package servicecidr_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/servicecidr"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestServiceCIDRController(t *testing.T) {
	testenv.RunSuite(t, "service-cidr-controller suite")
}

// failPrefix names the ServiceCIDRs whose status writes fail, for the Warning Event.
const failPrefix = "fail-"

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{servicecidr.ControllerName}, nil,
		setup.OverrideFor[servicecidr.Reconciler](servicecidr.ControllerName, func(r *servicecidr.Reconciler) {
			r.Client = &failingStatus{Client: r.Client}
		}))).To(Succeed())
})

// failingStatus fails the status writes of ServiceCIDRs named failPrefix*.
type failingStatus struct{ client.Client }

func (c *failingStatus) Status() client.SubResourceWriter { return statusWriter{c.Client.Status()} }

type statusWriter struct{ client.SubResourceWriter }

func (w statusWriter) Patch(ctx context.Context, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
	if strings.HasPrefix(obj.GetName(), failPrefix) {
		return errors.New("status write refused by the test")
	}
	return w.SubResourceWriter.Patch(ctx, obj, patch, opts...)
}
