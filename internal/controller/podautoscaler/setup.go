package podautoscaler

import (
	"context"
	"fmt"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/scale"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/staleness"
)

// ClientName is upstream's client name (and ServiceAccount) of the controller.
const ClientName = "horizontal-pod-autoscaler"

// Source is the component upstream's Events name.
const Source = "horizontal-pod-autoscaler"

// Descriptor is horizontal-pod-autoscaler-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"horizontalpodautoscaling"},
	ClientName: ClientName,
	Flags: []options.Flag{
		options.ConcurrentHorizontalPodAutoscalerSyncs,
		options.HorizontalPodAutoscalerSyncPeriod,
		options.HorizontalPodAutoscalerDownscaleStabilization,
		options.HorizontalPodAutoscalerTolerance,
		options.HorizontalPodAutoscalerCPUInitializationPeriod,
		options.HorizontalPodAutoscalerInitialReadinessDelay,
	},
	Setup: Setup,
}

// Setup runs horizontal-pod-autoscaler-controller as upstream's constructor: /scale read and
// written through client-go's scale client (kinds resolved by discovery, so any resource
// with a scale subresource can be a target), metrics read through the metrics APIs, both
// with the controller's own identity, and --concurrent-horizontal-pod-autoscaler-syncs
// workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentHorizontalPodAutoscalerSyncs)
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	cfg, err := ctx.RESTConfig()
	if err != nil {
		return err
	}
	disc, err := discovery.NewDiscoveryClientForConfig(rest.CopyConfig(cfg))
	if err != nil {
		return fmt.Errorf("building the discovery client of %s: %w", ControllerName, err)
	}
	mapper := ctx.Manager.GetRESTMapper()
	// Not a cached discovery: the resolver caches itself, and must re-read when asked.
	scales, err := scale.NewForConfig(rest.CopyConfig(cfg), mapper, dynamic.LegacyAPIPathResolverFunc, scale.NewDiscoveryScaleKindResolver(disc))
	if err != nil {
		return fmt.Errorf("failed to init HPA scale client: %w", err)
	}
	metricsClient, err := NewRESTMetricsClient(rest.CopyConfig(cfg), mapper)
	if err != nil {
		return fmt.Errorf("building the metrics client of %s: %w", ControllerName, err)
	}
	syncPeriod := ctx.Duration(options.HorizontalPodAutoscalerSyncPeriod)
	// The custom metrics API's version is discovered again every sync period, as upstream's
	// PeriodicallyInvalidate beside the controller.
	if err := ctx.Manager.Add(manager.RunnableFunc(func(c context.Context) error {
		metricsClient.Run(c, syncPeriod)
		return nil
	})); err != nil {
		return err
	}
	registerMetrics()
	r := &Reconciler{
		Client:                  cl,
		Scales:                  scales,
		Mapper:                  mapper,
		Metrics:                 metricsClient,
		Recorder:                ctx.Recorder(Source),
		SyncPeriod:              syncPeriod,
		DownscaleStabilization:  ctx.Duration(options.HorizontalPodAutoscalerDownscaleStabilization),
		Tolerance:               ctx.Float64(options.HorizontalPodAutoscalerTolerance),
		CPUInitializationPeriod: ctx.Duration(options.HorizontalPodAutoscalerCPUInitializationPeriod),
		InitialReadinessDelay:   ctx.Duration(options.HorizontalPodAutoscalerInitialReadinessDelay),
		ScaleToZero:             ctx.Enabled(features.HPAScaleToZero),
		ConfigurableTolerance:   ctx.Enabled(features.HPAConfigurableTolerance),
		Generation:              ctx.Enabled(features.HPAGeneration),
		PodLevelResources:       ctx.Enabled(features.PodLevelResources),
	}
	if ctx.Enabled(features.StaleControllerConsistencyHPA) {
		r.Stale = staleness.NewGuard(staleSkips, map[schema.GroupResource]func() string{
			hpaResource: staleness.StoreVersion(ctx.Manager.GetCache(), &autoscalingv2.HorizontalPodAutoscaler{}),
		})
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/podautoscaler/horizontal.go:177.
var newQueue = setup.Queue("horizontalpodautoscaler")
