package tokencleaner

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
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
	ClientName:        "token-cleaner",
	Setup:             Setup,
}

// workers is upstream's: one worker.
const workers = 1

// Setup runs token-cleaner-controller. It reads from a cache of its own holding only
// kube-system's bootstrap token Secrets: the shared cache holds only service account token
// Secrets (serviceaccount-token-controller's restriction), and widening it would cache
// every Secret of the cluster. That cache reads with kcm's own identity, as upstream's shared
// informers do; the deletes go through the controller's own connection.
func Setup(ctx *setup.Context) error {
	narrow, err := cache.New(rest.CopyConfig(ctx.Config), cache.Options{
		Scheme: ctx.Manager.GetScheme(),
		Mapper: ctx.Manager.GetRESTMapper(),
		ByObject: map[client.Object]cache.ByObject{
			&corev1.Secret{}: {Namespaces: map[string]cache.Config{
				metav1.NamespaceSystem: {FieldSelector: fields.OneTermEqualSelector("type", string(bootstrapapi.SecretTypeBootstrapToken))},
			}},
		},
		ReaderFailOnMissingInformer: true,
	})
	if err != nil {
		return err
	}
	if err := ctx.Manager.Add(narrow); err != nil {
		return err
	}
	cfg, err := ctx.RESTConfig()
	if err != nil {
		return err
	}
	writer, err := ctx.NewClient(cfg, false)
	if err != nil {
		return err
	}
	r := &Reconciler{Cache: narrow, Client: writer, Clock: clock.RealClock{}}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}
