package explain_test

import (
	"os"
	"path/filepath"
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/testenv"
)

// One API server for the package: the command runs against it with kubeconfigs written
// for its users, as a user would run it; no controllers run, the specs write the states.
var (
	env *testenv.Env
	// admin is a kubeconfig of a system:masters user; nobody's user has no rights.
	admin, nobody string
)

func TestExplain(t *testing.T) {
	testenv.RunSuite(t, "explain")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	dir := GinkgoT().TempDir()
	admin = writeKubeconfig(dir, envtest.User{Name: "admin", Groups: []string{"system:masters"}})
	nobody = writeKubeconfig(dir, envtest.User{Name: "nobody"})
})

func writeKubeconfig(dir string, user envtest.User) string {
	GinkgoHelper()
	u, err := env.Environment.AddUser(user, nil)
	Expect(err).NotTo(HaveOccurred())
	b, err := u.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(dir, user.Name+".kubeconfig")
	Expect(os.WriteFile(path, b, 0o600)).To(Succeed())
	return path
}
