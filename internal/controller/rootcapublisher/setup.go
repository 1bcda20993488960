package rootcapublisher

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

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
// kubeconfig's CA).
func Setup(ctx *setup.Context) error {
	rootCA, err := ctx.RootCA()
	if err != nil {
		return err
	}
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, Recorder: ctx.Recorder(ControllerName), RootCA: rootCA}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}
