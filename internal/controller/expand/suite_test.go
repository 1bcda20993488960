package expand_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/controller/expand"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestExpandController(t *testing.T) {
	testenv.RunSuite(t, "persistentvolume-expander-controller suite")
}

// class allows expansion: the API server's PersistentVolumeClaimResize admission refuses a
// larger request otherwise.
const class = "expandable"

var _ = BeforeSuite(func(ctx SpecContext) {
	env = testenv.MustStart([]string{expand.ControllerName})
	sc := &storagev1.StorageClass{
		ObjectMeta:           metav1.ObjectMeta{Name: class},
		Provisioner:          "csi.example.com",
		AllowVolumeExpansion: ptr.To(true),
	}
	Expect(env.Client.Create(ctx, sc)).To(Succeed())
})
