package cloudnode

import "github.com/kcm/kcm/internal/setup"

// Descriptor is cloud-node-controller (cloud-controller-manager's loop, k8s.io/cloud-provider v0.37.1) as
// kcm's registry knows it. Being built (issue 22).
var Descriptor = setup.Descriptor{
	Name:       "cloud-node-controller",
	Aliases:    []string{"cloud-node"},
	ClientName: "node-controller",
}
