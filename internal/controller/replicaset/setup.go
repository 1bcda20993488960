package replicaset

import (
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// What replicaset-controller's own client does (reads of the shared cache run as kcm's
// identity): a live get of the ReplicaSet before adopting, the status update, pods created
// with a blocking owner reference, adopted or released by patch, and deleted.
//
// +kubebuilder:rbac:groups=apps,resources=replicasets,verbs=get
// +kubebuilder:rbac:groups=apps,resources=replicasets/status,verbs=update
// +kubebuilder:rbac:groups=apps,resources=replicasets/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=create;delete;patch

// ReplicaSetDescriptor is replicaset-controller as kcm's registry knows it.
var ReplicaSetDescriptor = setup.Descriptor{
	Name:        ReplicaSetKind.ControllerName,
	Aliases:     []string{"replicaset"},
	ClientName:  "replicaset-controller",
	Flags:       []options.Flag{options.ConcurrentReplicasetSyncs},
	Indexes:     []index.Index{index.PodsByController, index.ReplicaSetsByController},
	Convergence: &Convergence,
	Setup:       func(ctx *setup.Context) error { return run(ctx, ReplicaSetKind, options.ConcurrentReplicasetSyncs) },
}

// What replicationcontroller-controller's own client (replication-controller) does: the
// same requests on ReplicationControllers.
//
// +kubebuilder:rbac:groups="",resources=replicationcontrollers,verbs=get
// +kubebuilder:rbac:groups="",resources=replicationcontrollers/status,verbs=update
// +kubebuilder:rbac:groups="",resources=replicationcontrollers/finalizers,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=create;delete;patch

// ReplicationControllerDescriptor is replicationcontroller-controller: the same code,
// through the ReplicationController adapter.
var ReplicationControllerDescriptor = setup.Descriptor{
	Name:       ReplicationControllerKind.ControllerName,
	Aliases:    []string{"replicationcontroller"},
	ClientName: "replication-controller",
	Flags:      []options.Flag{options.ConcurrentRCSyncs},
	Indexes:    []index.Index{index.PodsByController},
	Setup:      func(ctx *setup.Context) error { return run(ctx, ReplicationControllerKind, options.ConcurrentRCSyncs) },
}

func run(ctx *setup.Context, kind Kind, workersFlag options.Int32Flag) error {
	workers := ctx.Workers(workersFlag)
	registerMetrics()
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	// status.terminatingReplicas: ReplicaSets only, with DeploymentReplicaSetTerminatingReplicas.
	kind.TerminatingReplicas = kind.TerminatingReplicas && ctx.Enabled(features.DeploymentReplicaSetTerminatingReplicas)
	r := &Reconciler{
		Kind:         kind,
		DeletionCost: ctx.Enabled(features.PodDeletionCost),
		Client:       cl,
		APIReader:    reader,
		Recorder:     ctx.Recorder(kind.EventSource),
	}
	if kind.GVK == ReplicaSetKind.GVK && ctx.Enabled(features.StaleControllerConsistencyReplicaSet) {
		r.Stale = staleGuard.Guard(ctx.Manager.GetCache())
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}

// newQueue names each kind's work queue as upstream names its own ("replicaset",
// pkg/controller/replicaset/replica_set.go:190; "replicationmanager",
// pkg/controller/replication/replication_controller.go:61).
var newQueue = map[string]func(string, workqueue.TypedRateLimiter[reconcile.Request]) workqueue.TypedRateLimitingInterface[reconcile.Request]{
	ReplicaSetKind.ControllerName:            setup.Queue("replicaset"),
	ReplicationControllerKind.ControllerName: setup.Queue("replicationmanager"),
}
