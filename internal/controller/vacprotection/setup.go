package vacprotection

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/component-base/featuregate"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is volumeattributesclass-protection-controller as kcm's registry knows it: no
// aliases, on by default, and only with the VolumeAttributesClass gate (GA in v1.37), as
// upstream.
var Descriptor = setup.Descriptor{
	Name:         ControllerName,
	FeatureGates: []featuregate.Feature{features.VolumeAttributesClass},
	ClientName:   ClientName,
	Indexes:      []index.Index{ClaimsByClass, VolumesByClass},
	Setup:        Setup,
}

// ClassName indexes claims and volumes by the VolumeAttributesClasses they refer to
// (ClaimReferences, VolumeReferences), as upstream's informer indexes them.
const ClassName = "vacprotection.volumeAttributesClassName"

// The cache's indexes this controller lists by.
var (
	ClaimsByClass = index.Index{Object: &corev1.PersistentVolumeClaim{}, Field: ClassName,
		Extract: func(o client.Object) []string { return ClaimReferences(o.(*corev1.PersistentVolumeClaim)) }}
	VolumesByClass = index.Index{Object: &corev1.PersistentVolume{}, Field: ClassName,
		Extract: func(o client.Object) []string { return VolumeReferences(o.(*corev1.PersistentVolume)) }}
)

// workers is upstream's fixed worker count.
const workers = 1

// Setup runs volumeattributesclass-protection-controller.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{Client: cl, APIReader: reader}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/volume/vacprotection/vac_protection_controller.go:111.
var newQueue = setup.Queue("vacprotection")
