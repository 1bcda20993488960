package csrapproving_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/csrapproving"
)

// conditions reads the request's conditions from the API server.
func conditions(ctx context.Context, name string) func(Gomega) []certificatesv1.CertificateSigningRequestCondition {
	return func(g Gomega) []certificatesv1.CertificateSigningRequestCondition {
		csr := &certificatesv1.CertificateSigningRequest{}
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: name}, csr)).To(Succeed())
		return csr.Status.Conditions
	}
}

// approvedWith matches exactly one Approved condition, upstream's.
func approvedWith(message string) OmegaMatcher {
	return ConsistOf(And(
		HaveField("Type", certificatesv1.CertificateApproved),
		HaveField("Status", corev1.ConditionTrue),
		HaveField("Reason", csrapproving.ApprovedReason),
		HaveField("Message", message),
	))
}

var _ = Describe("certificatesigningrequest-approving-controller", func() {
	It("approves a new node's client certificate requested with a bootstrap token", func(ctx SpecContext) {
		name := create(ctx, as("system:bootstrap:abcdef", "system:bootstrappers"), kubeletClient("n1"))
		Eventually(conditions(ctx, name)).Should(approvedWith(
			"Auto approving kubelet client certificate after SubjectAccessReview."))
	})

	It("approves a node's renewal of its own client certificate", func(ctx SpecContext) {
		name := create(ctx, as("system:node:n1", "system:nodes"), kubeletClient("n1"))
		Eventually(conditions(ctx, name)).Should(approvedWith(
			"Auto approving self kubelet client certificate after SubjectAccessReview."))
	})

	It("leaves pending what the requester may not have approved, and approves it once allowed", func(ctx SpecContext) {
		// A node asking for another node's certificate: no renewal, and nodes may not have new
		// node client certificates approved. A bootstrap user without the bootstrappers' binding.
		otherNode := create(ctx, as("system:node:n1", "system:nodes"), kubeletClient("n2"))
		unbound := create(ctx, as("system:bootstrap:zzzzzz"), kubeletClient("n3"))
		witness := create(ctx, as("system:bootstrap:abcdef", "system:bootstrappers"), kubeletClient("n4"))

		Eventually(conditions(ctx, witness)).Should(approvedWith(csrapproving.NodeClientMessage))
		Consistently(func(g Gomega) {
			g.Expect(conditions(ctx, otherNode)(g)).To(BeEmpty())
			g.Expect(conditions(ctx, unbound)(g)).To(BeEmpty())
		}).Should(Succeed())

		// The permission granted later: the refused request is retried, and approved.
		crb := &rbacv1.ClusterRoleBinding{
			ObjectMeta: metav1.ObjectMeta{Name: "late-nodeclient"},
			RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "system:certificates.k8s.io:certificatesigningrequests:nodeclient"},
			Subjects:   []rbacv1.Subject{{APIGroup: rbacv1.GroupName, Kind: rbacv1.UserKind, Name: "system:bootstrap:zzzzzz"}},
		}
		Expect(env.Client.Create(ctx, crb)).To(Succeed())
		DeferCleanup(env.Client.Delete, crb)
		Eventually(conditions(ctx, unbound)).Should(approvedWith(csrapproving.NodeClientMessage))
	})

	It("leaves pending requests that are not kubelet client certificates", func(ctx SpecContext) {
		bootstrap := as("system:bootstrap:abcdef", "system:bootstrappers")
		withServerAuth := kubeletClient("n5")
		withServerAuth.usages = append(withServerAuth.usages, certificatesv1.UsageServerAuth)
		masters := kubeletClient("n5")
		masters.organizations = []string{"system:masters"}
		notANode := kubeletClient("n5")
		notANode.commonName = "admin"
		withDNS := kubeletClient("n5")
		withDNS.dnsNames = []string{"n5.example.com"}
		otherSigner := kubeletClient("n5")
		otherSigner.signer = certificatesv1.KubeAPIServerClientSignerName

		var names []string
		for _, r := range []request{withServerAuth, masters, notANode, withDNS, otherSigner} {
			names = append(names, create(ctx, bootstrap, r))
		}
		witness := create(ctx, bootstrap, kubeletClient("n5"))

		Eventually(conditions(ctx, witness)).Should(approvedWith(csrapproving.NodeClientMessage))
		Consistently(func(g Gomega) {
			for _, name := range names {
				g.Expect(conditions(ctx, name)(g)).To(BeEmpty(), name)
			}
		}).Should(Succeed())
	})
})
