package validatingadmissionpolicystatus

import (
	"fmt"

	"k8s.io/client-go/discovery"
	"k8s.io/client-go/util/flowcontrol"

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

// Upstream's discovery clients' rate limits.
const (
	discoveryQPS   = 20
	discoveryBurst = 200
)

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
	// Upstream's discovery clients have a bucket of their own at 20 QPS, burst 200
	// (k8s.io/controller-manager's ClientBuilder.DiscoveryClient): each check asks for the
	// OpenAPI v3 index and a group-version's document per matched kind.
	cfg.QPS, cfg.Burst = discoveryQPS, discoveryBurst
	cfg.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(cfg.QPS, cfg.Burst)
	disco, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("%s: discovery client: %w", ControllerName, err)
	}
	r := &Reconciler{Client: cl, Checker: NewTypeChecker(disco, ctx.Manager.GetRESTMapper())}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, ctx.Workers(options.ConcurrentValidatingAdmissionPolicyStatusSyncs))
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/validatingadmissionpolicystatus/controller.go:81.
var newQueue = setup.Queue("validatingadmissionpolicy-status")
