package statefulset

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/staleness"
)

// Descriptor is statefulset-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"statefulset"},
	ClientName: ControllerName,
	Flags:      []options.Flag{options.ConcurrentStatefulsetSyncs},
	Indexes:    []index.Index{index.PodsByController, index.RevisionsByController},
	Setup:      Setup,
}

// Setup runs statefulset-controller with --concurrent-statefulset-syncs workers.
func Setup(ctx *setup.Context) error {
	workers := ctx.Workers(options.ConcurrentStatefulsetSyncs)
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Client:                     cl,
		APIReader:                  reader,
		Recorder:                   ctx.Recorder(ControllerName),
		SemanticRevisionComparison: ctx.Enabled(features.StatefulSetSemanticRevisionComparison),
		MaxUnavailable:             ctx.Enabled(features.MaxUnavailableStatefulSet),
	}
	if ctx.Enabled(features.StaleControllerConsistencyStatefulSet) {
		r.Stale = staleGuard.Guard(ctx.Manager.GetCache())
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/statefulset/stateful_set.go:172.
var newQueue = setup.Queue("statefulset")

// The StaleControllerConsistencyStatefulSet guard, counted in
// statefulset_controller_stale_sync_skips_total: a StatefulSet's sync waits for the cache to
// show its own writes, the pods and claims it created or updated, and its status.
var (
	podsResource         = staleness.Pods
	claimsResource       = schema.GroupResource{Resource: "persistentvolumeclaims"}
	statefulSetsResource = schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	staleGuard           = staleness.ForOwner("statefulset_controller", "StatefulSet",
		staleness.Watched{Resource: podsResource, Object: &corev1.Pod{}},
		staleness.Watched{Resource: claimsResource, Object: &corev1.PersistentVolumeClaim{}},
		staleness.Watched{Resource: statefulSetsResource, Object: &appsv1.StatefulSet{}})
)
