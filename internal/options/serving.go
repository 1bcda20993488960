package options

import (
	"github.com/spf13/pflag"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	cmoptions "k8s.io/controller-manager/options"
)

// kubeControllerManagerPort is upstream's --secure-port default (k8s.io/kubernetes
// pkg/cluster/ports.KubeControllerManagerPort).
const kubeControllerManagerPort = 10257

// addServingFlags registers the secure port's options as upstream's
// NewKubeControllerManagerOptions sets them up and its Flags adds them: k8s.io/apiserver's
// secure serving, delegated authentication and authorization, and k8s.io/controller-manager's
// debugging options. Their flags, defaults and help are upstream's by construction.
func (o *Options) addServingFlags(fs *pflag.FlagSet) {
	o.SecureServing = apiserveroptions.NewSecureServingOptions()
	o.Authentication = apiserveroptions.NewDelegatingAuthenticationOptions()
	o.Authorization = apiserveroptions.NewDelegatingAuthorizationOptions()
	o.Debugging = cmoptions.RecommendedDebuggingOptions()

	// Outside a cluster and without --authentication-kubeconfig/--authorization-kubeconfig,
	// upstream serves anyway: every token is anonymous, and only the always-allowed paths
	// and groups pass authorization.
	o.Authentication.RemoteKubeConfigFileOptional = true
	o.Authorization.RemoteKubeConfigFileOptional = true

	// No certificate directory: without --tls-cert-file the self-signed pair stays in memory.
	o.SecureServing.ServerCert.CertDirectory = ""
	o.SecureServing.ServerCert.PairName = "kube-controller-manager"
	o.SecureServing.BindPort = kubeControllerManagerPort

	o.SecureServing.AddFlags(fs)
	o.Authentication.AddFlags(fs)
	o.Authorization.AddFlags(fs)
	o.Debugging.AddFlags(fs)
}

// validateServing is upstream's validation of the same options.
func (o *Options) validateServing() []error {
	var errs []error
	errs = append(errs, o.SecureServing.Validate()...)
	errs = append(errs, o.Authentication.Validate()...)
	errs = append(errs, o.Authorization.Validate()...)
	errs = append(errs, o.Debugging.Validate()...)
	return errs
}
