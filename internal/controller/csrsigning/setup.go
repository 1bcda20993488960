package csrsigning

import (
	"errors"
	"fmt"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is certificatesigningrequest-signing-controller as kcm's registry knows it.
// Upstream signs with the client (and ServiceAccount) certificate-controller, which the
// approving and cleaner controllers share.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"csrsigning"},
	ClientName: "certificate-controller",
	Flags: []options.Flag{
		options.ClusterSigningCertFile, options.ClusterSigningKeyFile, options.ClusterSigningDuration,
		options.ClusterSigningKubeletServingCertFile, options.ClusterSigningKubeletServingKeyFile,
		options.ClusterSigningKubeletClientCertFile, options.ClusterSigningKubeletClientKeyFile,
		options.ClusterSigningKubeApiserverClientCertFile, options.ClusterSigningKubeApiserverClientKeyFile,
		options.ClusterSigningLegacyUnknownCertFile, options.ClusterSigningLegacyUnknownKeyFile,
	},
	Setup: Setup,
}

// workers is upstream's fixed worker count for each signer.
const workers = 5

// files is a cert/key pair from the command line.
type files struct{ cert, key string }

func (f files) set() bool { return f.cert != "" || f.key != "" }

// signing is what the --cluster-signing-* flags say.
type signing struct {
	shared    files
	perSigner map[string]files
}

// errBothKinds is upstream's startup error for the shared pair given with per-signer ones.
var errBothKinds = errors.New("cannot specify default and per controller certs at the same time")

// signerFiles decides which signers run and from which files, as upstream: with no complete
// shared pair and no per-signer file, none (the controller is skipped); the shared pair and
// per-signer files together are an error; per-signer files run exactly the signers they
// name (a half pair fails when loaded); else the shared pair runs all four.
func signerFiles(s signing) (map[string]files, error) {
	anySpecific := false
	for _, f := range s.perSigner {
		anySpecific = anySpecific || f.set()
	}
	sharedComplete := s.shared.cert != "" && s.shared.key != ""
	switch {
	case !sharedComplete && !anySpecific:
		return nil, nil
	case sharedComplete && anySpecific:
		return nil, errBothKinds
	}
	out := map[string]files{}
	for _, name := range signers {
		f := s.shared
		if anySpecific {
			f = s.perSigner[name]
		}
		if f.set() {
			out[name] = f
		}
	}
	return out, nil
}

// signers in upstream's start order, each with the name upstream gives its loop (its
// workqueue's name).
var signers = []string{KubeletServing, KubeAPIServerClientKubelet, KubeAPIServerClient, LegacyUnknown}

var loopNames = map[string]string{
	KubeletServing:             "csrsigning-kubelet-serving",
	KubeAPIServerClientKubelet: "csrsigning-kubelet-client",
	KubeAPIServerClient:        "csrsigning-kube-apiserver-client",
	LegacyUnknown:              "csrsigning-legacy-unknown",
}

// Setup runs one signing loop per signer the flags give files for, each with its own CA
// re-read from its files, signing for at most --cluster-signing-duration.
func Setup(ctx *setup.Context) error {
	logger := log.Log.WithName("controllers").WithValues("controller", ControllerName)
	s := signing{
		shared: files{ctx.String(options.ClusterSigningCertFile), ctx.String(options.ClusterSigningKeyFile)},
		perSigner: map[string]files{
			KubeletServing:             {ctx.String(options.ClusterSigningKubeletServingCertFile), ctx.String(options.ClusterSigningKubeletServingKeyFile)},
			KubeAPIServerClientKubelet: {ctx.String(options.ClusterSigningKubeletClientCertFile), ctx.String(options.ClusterSigningKubeletClientKeyFile)},
			KubeAPIServerClient:        {ctx.String(options.ClusterSigningKubeApiserverClientCertFile), ctx.String(options.ClusterSigningKubeApiserverClientKeyFile)},
			LegacyUnknown:              {ctx.String(options.ClusterSigningLegacyUnknownCertFile), ctx.String(options.ClusterSigningLegacyUnknownKeyFile)},
		},
	}
	maxTTL := ctx.Duration(options.ClusterSigningDuration)
	run, err := signerFiles(s)
	if err != nil {
		return err
	}
	if run == nil {
		logger.Info("Skipping CSR signer controller because no csr cert/key was specified")
		return setup.SkippedFor("--cluster-signing-cert-file and --cluster-signing-key-file")
	}
	// Every CA is loaded before any loop is registered: one bad pair fails the start.
	cas := map[string]*CA{}
	for _, name := range signers {
		f, ok := run[name]
		if !ok {
			logger.Info("Skipping CSR signer controller because specific files were specified for other signers and not this one", "signer", name)
			continue
		}
		ca, err := NewCA(f.cert, f.key)
		if err != nil {
			return fmt.Errorf("failed to init %s certificate controller: %w", name, err)
		}
		cas[name] = ca
	}
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	for _, name := range signers {
		ca, ok := cas[name]
		if !ok {
			continue
		}
		r := &Reconciler{Client: cl, SignerName: name, CA: ca, MaxTTL: maxTTL, Now: time.Now}
		setup.Apply(ctx, r)
		if err := ctx.Manager.Add(manager.RunnableFunc(ca.Run)); err != nil {
			return err
		}
		if err := r.SetupWithManager(ctx.Manager, loopNames[name], workers); err != nil {
			return err
		}
	}
	return nil
}

// newQueue names the work queue of name as upstream names its own:
// pkg/controller/certificates/certificate_controller.go:74.
var newQueue = setup.Queue("certificate")
