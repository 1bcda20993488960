package validatingadmissionpolicystatus

import (
	"fmt"

	"k8s.io/client-go/discovery"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is validatingadmissionpolicy-status-controller as kcm's registry knows it: no
// aliases, no feature gate, on by default, as upstream.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	ClientName: ClientName,
	Flags:      []options.Flag{options.ConcurrentValidatingAdmissionPolicyStatusSyncs},
	Setup:      Setup,
}

// Setup runs validatingadmissionpolicy-status-controller with
// --concurrent-validating-admission-policy-status-syncs workers. The type checker reads
// schemas through a discovery client of the controller's own identity, as upstream's, and
// resolves matched resources to kinds through the manager's REST mapper, which loads a group
// the first time it is asked for it, so that a CRD created later resolves.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	cfg, err := ctx.RESTConfig()
	if err != nil {
		return err
	}
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s: discovery client: %w", ControllerName, err)
	}
	r := &Reconciler{Client: cl, Checker: NewTypeChecker(disco, ctx.Manager.GetRESTMapper())}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, ctx.Workers(options.ConcurrentValidatingAdmissionPolicyStatusSyncs))
}
