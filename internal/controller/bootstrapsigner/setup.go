package bootstrapsigner

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is bootstrap-signer-controller as kcm's registry knows it: off by default, as
// upstream (kubeadm enables it with --controllers=*,bootstrapsigner,tokencleaner). Upstream
// gives it no flags: the namespaces and the ConfigMap are fixed.
//
// Its own identity only updates cluster-info; upstream's bootstrap policy grants that in a
// Role of kube-public, not a ClusterRole.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=update,resourceNames=cluster-info,namespace=kube-public
var Descriptor = setup.Descriptor{
	Name:              ControllerName,
	Aliases:           []string{"bootstrapsigner"},
	DisabledByDefault: true,
	KubeadmEnables:    true,
	ClientName:        "bootstrap-signer",
	Setup:             Setup,
}

// workers is upstream's: one worker, for the one ConfigMap.
const workers = 1

// Setup runs bootstrap-signer-controller. It reads from a cache of its own holding only
// kube-public/cluster-info and kube-system's bootstrap token Secrets, which the shared
// cache's restrictions (kube-root-ca.crt ConfigMaps, service account token Secrets) leave
// out; the update goes through the controller's own connection.
func Setup(ctx *setup.Context) error {
	narrow, err := ctx.OwnCache(map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Namespaces: map[string]cache.Config{
			metav1.NamespacePublic: {FieldSelector: fields.OneTermEqualSelector("metadata.name", bootstrapapi.ConfigMapClusterInfo)},
		}},
		&corev1.Secret{}: {Namespaces: map[string]cache.Config{
			metav1.NamespaceSystem: {FieldSelector: fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken))},
		}},
	})
	if err != nil {
		return err
	}
	writer, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Cache: narrow, Client: writer, Clock: clock.RealClock{}}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/bootstrap/bootstrapsigner.go:110.
var newQueue = setup.Queue("bootstrap_signer_queue")
