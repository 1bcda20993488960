package attachdetach_test

import (
	"context"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/testenv"
)

const (
	driver        = "attach.example.com"
	noAttachDrver = "noattach.example.com"
)

var (
	env *testenv.Env
	// clk is the controller's clock: a spec moves it past the maximum wait for unmount.
	clk = &testenv.OffsetClock{}
)

func TestAttachDetachController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume-attach-detach-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	ctx := context.Background()
	Expect(env.Client.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}})).To(Succeed())
	Expect(env.Client.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: noAttachDrver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(false)}})).To(Succeed())
	Expect(startManager()).To(Succeed())
})
