package servicelb

import "github.com/kcm/kcm/internal/setup"

// Descriptor is service-lb-controller (cloud-controller-manager's loop, k8s.io/cloud-provider v0.37.1) as
// kcm's registry knows it. Being built (issue 22).
var Descriptor = setup.Descriptor{
	Name:       "service-lb-controller",
	Aliases:    []string{"service"},
	ClientName: "service-controller",
}
