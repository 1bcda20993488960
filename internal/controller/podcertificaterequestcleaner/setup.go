package podcertificaterequestcleaner

import (
	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is podcertificaterequest-cleaner-controller as kcm's registry knows it: it runs
// only with PodCertificateRequest (GA and on in v1.37), as upstream.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.PodCertificateRequest},
	ClientName:   "podcertificaterequestcleaner",
	Setup:        Setup,
}

// Setup runs podcertificaterequest-cleaner-controller with upstream's fixed threshold.
func Setup(ctx *setup.Context) error {
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, Threshold: DefaultThreshold}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager)
}
