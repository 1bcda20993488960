package serviceaccounttoken

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/fields"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is serviceaccount-token-controller as kcm's registry knows it. It also reads
// --root-ca-file, which the root CA publisher reads too.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"serviceaccount-token"},
	ClientName: "tokens-controller",
	// As upstream: the tokens controller makes the other controllers' tokens, so it cannot
	// wait for one of its own.
	RootCredentials: true,
	Flags:           []options.Flag{options.ConcurrentServiceaccountTokenSyncs, options.ServiceAccountPrivateKeyFile, options.RootCAFile},
	Indexes:         []index.Index{index.TokensByServiceAccount},
	Cache:           tokenSecretsOnly,
	Setup:           Setup,
}

// tokenSecretsOnly: of all Secrets, kcm's controllers need only service account tokens; the
// others (TLS material, Helm releases) can be many and large.
var tokenSecretsOnly = map[client.Object]cache.ByObject{
	&corev1.Secret{}: {Field: fields.OneTermEqualSelector("type", string(corev1.SecretTypeServiceAccountToken))},
}

// Setup runs the tokens controller as upstream does: only with
// --service-account-private-key-file, signing with that key, with --root-ca-file (else the
// kubeconfig's CA) as ca.crt and --concurrent-serviceaccount-token-syncs workers.
//
// Upstream starts it before every other controller so that their tokens exist when they
// start. kcm keeps it first in the registry, so it is set up first and its sources and
// workers are the first runnables the manager starts; the manager's controllers still start
// together, and kcm's own clients do not depend on these tokens.
func Setup(ctx *setup.Context) error {
	logger := log.Log.WithName("controllers").WithValues("controller", ControllerName)
	keyFile := ctx.String(options.ServiceAccountPrivateKeyFile)
	workers := ctx.Workers(options.ConcurrentServiceaccountTokenSyncs)
	// Without any CA configured (an insecure-skip-tls-verify kubeconfig) upstream leaves
	// ca.crt alone; a CA given but unreadable is an error, once the controller runs.
	ca, caErr := ctx.RootCA()
	if keyFile == "" {
		logger.Info("Controller is disabled because there is no private key")
		return setup.SkippedFor("--service-account-private-key-file")
	}
	if workers < 1 {
		logger.Info("Controller not started: no workers", "concurrent-serviceaccount-token-syncs", workers)
		return setup.ErrSkipped
	}
	gen, err := NewGeneratorFromFile(keyFile)
	if err != nil {
		return err
	}
	if caErr != nil {
		return fmt.Errorf("%s: %w", ControllerName, caErr)
	}
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:    cl,
		APIReader: reader,
		Generator: gen,
		RootCA:    ca,
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/serviceaccount/tokens_controller.go:87.
var newQueue = setup.TypedQueue[Request]("serviceaccount_tokens_service")
