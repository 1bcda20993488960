package rootcapublisher

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is root-ca-certificate-publisher-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"root-ca-cert-publisher"},
	ClientName: "root-ca-cert-publisher",
	Flags:      []options.Flag{options.RootCAFile},
	// Of all ConfigMaps, kcm's controllers need only the root CA bundles; caching every
	// ConfigMap of the cluster would cost memory for nothing.
	Cache: map[client.Object]cache.ByObject{
		&corev1.ConfigMap{}: {Field: fields.OneTermEqualSelector("metadata.name", ConfigMapName)},
	},
	Setup: Setup,
}

// workers is upstream's fixed worker count.
const workers = 1

// Setup runs root-ca-certificate-publisher-controller, publishing --root-ca-file (else the
// kubeconfig's CA). Without any CA it still runs, as upstream, publishing an empty ca.crt:
// the pods of the cluster then cannot verify the API server through kube-root-ca.crt, which
// the warning says.
func Setup(ctx *setup.Context) error {
	rootCA, err := ctx.RootCA()
	if err != nil {
		return err
	}
	if len(rootCA) == 0 {
		log.Log.WithName("controllers").WithValues("controller", ControllerName).Info(
			"No root CA to publish: no --root-ca-file, and the kubeconfig names no certificate authority; kube-root-ca.crt gets an empty ca.crt, as upstream's")
	}
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	syncs.Register()
	r := &Reconciler{Client: cl, RootCA: rootCA}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/certificates/rootcacertpublisher/publisher.go:62.
var newQueue = setup.Queue("root_ca_cert_publisher")
