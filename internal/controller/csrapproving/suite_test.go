package csrapproving_test

import (
	"testing"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/csrapproving"
	"github.com/kcm/kcm/internal/testenv"
)

var env *testenv.Env

func TestCSRApproving(t *testing.T) {
	testenv.RunSuite(t, "certificatesigningrequest-approving-controller suite")
}

// requesters is a group the suite gives to every user it impersonates, allowed to create
// CertificateSigningRequests (system:node-bootstrapper, as kubeadm binds it for its bootstrap
// tokens), so that what the approval depends on is only the nodeclient and selfnodeclient
// permissions.
const requesters = "csr-requesters"

var _ = BeforeSuite(func(ctx SpecContext) {
	env = testenv.MustStartAPIServer()
	// kubeadm's bindings: bootstrap tokens may have new node client certificates approved,
	// nodes their own renewals. The ClusterRoles are the API server's own.
	bind(ctx, "kubeadm:node-autoapprove-bootstrap", "system:certificates.k8s.io:certificatesigningrequests:nodeclient", "system:bootstrappers")
	bind(ctx, "kubeadm:node-autoapprove-certificate-rotation", "system:certificates.k8s.io:certificatesigningrequests:selfnodeclient", "system:nodes")
	bind(ctx, "csr-requesters", "system:node-bootstrapper", requesters)
	Expect(env.StartManager([]string{csrapproving.ControllerName})).To(Succeed())
})
