package ctbpublisher

import (
	"crypto/sha256"
	"fmt"
	"strings"

	certificatesv1 "k8s.io/api/certificates/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// BundleName is upstream's name for a signer's bundle: the signer name with '/' as ':', a
// ':', and the first 12 bytes of the bundle's SHA-256 in hex. A new CA thus gets a new
// object, and the old one is deleted.
func BundleName(signerName, bundle string) string {
	sum := sha256.Sum256([]byte(bundle))
	return fmt.Sprintf("%s:%x", strings.ReplaceAll(signerName, "/", ":"), sum[:12])
}

// plan is what one sync does: create or update the signer's bundle (at most one of them),
// and delete the signer's other bundles.
type plan struct {
	create *certificatesv1.ClusterTrustBundle
	update *certificatesv1.ClusterTrustBundle
	delete []string
}

// decide compares the signer's bundles (existing, all of signerName) with the one that
// should be published.
func decide(existing []certificatesv1.ClusterTrustBundle, signerName, bundle string) plan {
	name := BundleName(signerName, bundle)
	var p plan
	found := false
	for i := range existing {
		ctb := &existing[i]
		if ctb.Name != name {
			p.delete = append(p.delete, ctb.Name)
			continue
		}
		found = true
		if ctb.Spec.TrustBundle != bundle {
			p.update = ctb.DeepCopy()
			p.update.Spec.TrustBundle = bundle
		}
	}
	if !found {
		p.create = &certificatesv1.ClusterTrustBundle{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec:       certificatesv1.ClusterTrustBundleSpec{SignerName: signerName, TrustBundle: bundle},
		}
	}
	return p
}
