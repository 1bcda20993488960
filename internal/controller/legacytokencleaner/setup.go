package legacytokencleaner

import (
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is legacy-serviceaccount-token-cleaner-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"legacy-service-account-token-cleaner"},
	ClientName: "legacy-service-account-token-cleaner",
	Flags:      []options.Flag{options.LegacyServiceAccountTokenCleanUpPeriod},
	Indexes:    []index.Index{index.SecretsByType},
	Setup:      Setup,
}

// Setup runs the legacy token cleaner with --legacy-service-account-token-clean-up-period
// and upstream's daily sync.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:        cl,
		APIReader:     reader,
		CleanUpPeriod: ctx.Duration(options.LegacyServiceAccountTokenCleanUpPeriod),
		SyncInterval:  DefaultSyncInterval,
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager)
}
