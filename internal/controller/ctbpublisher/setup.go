package ctbpublisher

import (
	"fmt"

	certificatesv1 "k8s.io/api/certificates/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is kube-apiserver-serving-clustertrustbundle-publisher-controller as kcm's
// registry knows it: on wherever ClusterTrustBundle is (GA and on by default in v1.37).
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.ClusterTrustBundle},
	ClientName:   "kube-apiserver-serving-clustertrustbundle-publisher",
	Flags:        []options.Flag{options.RootCAFile},
	Setup:        Setup,
}

// Setup runs the publisher for the CA that verifies the API server: --root-ca-file, else
// the kubeconfig's CA, as upstream. Like upstream, it does not start without a CA, nor when
// the API server does not serve ClusterTrustBundles.
func Setup(ctx *setup.Context) error {
	logger := log.Log.WithName("controllers").WithValues("controller", ControllerName)
	rootCA, err := ctx.RootCA()
	if err != nil {
		return err
	}
	if len(rootCA) == 0 {
		logger.Info("No CA to publish: no --root-ca-file, and the kubeconfig names no certificate authority; not starting")
		return setup.ErrSkipped
	}
	served, err := servesClusterTrustBundles(ctx.Manager.GetRESTMapper())
	if err != nil {
		return err
	}
	if !served {
		// Upstream also publishes through certificates.k8s.io/v1beta1 or v1alpha1 on an API
		// server serving only those. The skew policy puts kcm (v1.37) only before API servers
		// of v1.37 or newer, which serve v1 whenever they serve ClusterTrustBundles at all,
		// unless v1 alone was turned off with --runtime-config.
		logger.Info("The API server does not serve certificates.k8s.io/v1 clustertrustbundles; not starting")
		return setup.ErrSkipped
	}
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, SignerName: SignerName, CABundle: string(rootCA)}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager)
}

// servesClusterTrustBundles asks the API server's discovery (through the manager's REST
// mapper) whether it serves certificates.k8s.io/v1 clustertrustbundles, as upstream asks
// before choosing a version.
func servesClusterTrustBundles(mapper meta.RESTMapper) (bool, error) {
	gk := certificatesv1.SchemeGroupVersion.WithKind("ClusterTrustBundle").GroupKind()
	_, err := mapper.RESTMapping(gk, certificatesv1.SchemeGroupVersion.Version)
	switch {
	case err == nil:
		return true, nil
	case meta.IsNoMatchError(err):
		return false, nil
	default:
		return false, fmt.Errorf("discovery failed for ClusterTrustBundle: %w", err)
	}
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/certificates/clustertrustbundlepublisher/publisher.go:303.
var newQueue = setup.Queue("ca_cert_publisher_cluster_trust_bundles")
