package tokencleaner

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

// Descriptor is token-cleaner-controller as kcm's registry knows it: off by default, as
// upstream (kubeadm enables it with --controllers=*,bootstrapsigner,tokencleaner). Upstream
// gives it no flags: the namespace is fixed.
//
// Its own identity only deletes token Secrets; upstream's bootstrap policy grants that in a
// Role of kube-system, not a ClusterRole.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=delete,namespace=kube-system
var Descriptor = setup.Descriptor{
	Name:              ControllerName,
	Aliases:           []string{"tokencleaner"},
	DisabledByDefault: true,
	KubeadmEnables:    true,
	ClientName:        "token-cleaner",
	Setup:             Setup,
}

// workers is upstream's: one worker.
const workers = 1

// Setup runs token-cleaner-controller. It reads from a cache of its own holding only
// kube-system's bootstrap token Secrets, which the shared cache's restriction (service
// account token Secrets) leaves out; the deletes go through the controller's own connection.
func Setup(ctx *setup.Context) error {
	narrow, err := ctx.OwnCache(map[client.Object]cache.ByObject{
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
// pkg/controller/bootstrap/tokencleaner.go:85.
var newQueue = setup.Queue("token_cleaner")
