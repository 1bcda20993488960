package controller

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller/legacytokencleaner"
	"github.com/kcm/kcm/internal/controller/serviceaccounttoken"
	"github.com/kcm/kcm/internal/index"
)

// serviceAccountTokenFlags are the upstream flags only the serviceaccount-token-controller
// reads (it also reads --root-ca-file, shared with the root CA publisher).
var serviceAccountTokenFlags = []string{"concurrent-serviceaccount-token-syncs", "service-account-private-key-file", "root-ca-file"}

// setupServiceAccountToken runs the tokens controller as upstream does: only with
// --service-account-private-key-file, signing with that key, with --root-ca-file (else the
// kubeconfig's CA) as ca.crt and --concurrent-serviceaccount-token-syncs workers.
//
// Upstream starts it before every other controller so that their tokens exist when they
// start. kcm keeps it first in the registry, so it is set up first and its sources and
// workers are the first runnables the manager starts; the manager's controllers still start
// together, and kcm's own clients do not depend on these tokens.
func setupServiceAccountToken(ctx *Context) error {
	logger := log.Log.WithName("controllers").WithValues("controller", serviceaccounttoken.ControllerName)
	keyFile := ctx.Options.FlagSet().Lookup("service-account-private-key-file").Value.String()
	if keyFile == "" {
		logger.Info("Controller is disabled because there is no private key")
		return nil
	}
	workers := ctx.Workers("concurrent-serviceaccount-token-syncs", 5)
	if workers < 1 {
		logger.Info("Controller not started: no workers", "concurrent-serviceaccount-token-syncs", workers)
		return nil
	}
	gen, err := serviceaccounttoken.NewGeneratorFromFile(keyFile)
	if err != nil {
		return err
	}
	var ca []byte
	// Without any CA configured upstream leaves ca.crt alone; a CA given but unreadable is an
	// error.
	if ctx.Options.RootCAFile != "" || len(ctx.Config.CAData) > 0 || ctx.Config.CAFile != "" {
		if ca, err = rootCA(ctx); err != nil {
			return fmt.Errorf("%s: %w", serviceaccounttoken.ControllerName, err)
		}
	}
	if err := ctx.Index(&corev1.Secret{}, index.TokenServiceAccount, index.TokenServiceAccountOf); err != nil {
		return err
	}
	cl, err := ctx.Client("tokens-controller")
	if err != nil {
		return err
	}
	r := &serviceaccounttoken.Reconciler{
		Client:    cl,
		APIReader: ctx.Manager.GetAPIReader(),
		Generator: gen,
		RootCA:    ca,
	}
	return r.SetupWithManager(ctx.Manager, workers)
}

// setupLegacyTokenCleaner runs the legacy token cleaner with
// --legacy-service-account-token-clean-up-period and upstream's daily sync.
func setupLegacyTokenCleaner(ctx *Context) error {
	if err := ctx.Index(&corev1.Secret{}, index.SecretType, index.SecretTypeOf); err != nil {
		return err
	}
	cl, err := ctx.Client("legacy-service-account-token-cleaner")
	if err != nil {
		return err
	}
	r := &legacytokencleaner.Reconciler{
		Client:        cl,
		APIReader:     ctx.Manager.GetAPIReader(),
		CleanUpPeriod: ctx.Options.Duration("legacy-service-account-token-clean-up-period"),
		SyncInterval:  legacytokencleaner.DefaultSyncInterval,
	}
	return r.SetupWithManager(ctx.Manager)
}
