package storageversiongc

import (
	apiserverinternalv1alpha1 "k8s.io/api/apiserverinternal/v1alpha1"
	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/storageversion"
)

const (
	// IdentityLabel is the label of an API server's identity Lease naming its component.
	IdentityLabel = "apiserver.kubernetes.io/identity"
	// KubeAPIServer is IdentityLabel's value on a kube-apiserver's Lease: only those vouch
	// for a storage version entry.
	KubeAPIServer = "kube-apiserver"
)

// IsAPIServerIdentity reports whether lease is a kube-apiserver's identity Lease: in
// kube-system, labelled as one.
func IsAPIServerIdentity(lease *coordinationv1.Lease) bool {
	return lease != nil && lease.Namespace == metav1.NamespaceSystem && lease.Labels[IdentityLabel] == KubeAPIServer
}

// Without returns the entries whose API server is not stale, in order, and whether any was
// dropped.
func Without(entries []apiserverinternalv1alpha1.ServerStorageVersion, stale func(apiServerID string) bool) (kept []apiserverinternalv1alpha1.ServerStorageVersion, dropped bool) {
	for _, e := range entries {
		if stale(e.APIServerID) {
			dropped = true
			continue
		}
		kept = append(kept, e)
	}
	return kept, dropped
}

// Pruned is sv with only the kept entries, its common encoding version and
// AllEncodingVersionsEqual condition recomputed as the API servers themselves compute them
// (k8s.io/apiserver's storageversion.SetCommonEncodingVersion), or nil when no entry is
// left: the StorageVersion is then deleted, as upstream.
func Pruned(sv *apiserverinternalv1alpha1.StorageVersion, kept []apiserverinternalv1alpha1.ServerStorageVersion) *apiserverinternalv1alpha1.StorageVersion {
	if len(kept) == 0 {
		return nil
	}
	out := sv.DeepCopy()
	out.Status.StorageVersions = kept
	storageversion.SetCommonEncodingVersion(out)
	return out
}
