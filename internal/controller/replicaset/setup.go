package replicaset

import (
	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// ReplicaSetDescriptor is replicaset-controller as kcm's registry knows it.
var ReplicaSetDescriptor = setup.Descriptor{
	Name:       ReplicaSetKind.ControllerName,
	Aliases:    []string{"replicaset"},
	ClientName: "replicaset-controller",
	Flags:      []options.Flag{options.ConcurrentReplicasetSyncs},
	Indexes:    []index.Index{index.PodsByController},
	Setup:      func(ctx *setup.Context) error { return run(ctx, ReplicaSetKind, options.ConcurrentReplicasetSyncs) },
}

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
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	reader, err := ctx.APIReader()
	if err != nil {
		return err
	}
	r := &Reconciler{
		Kind:      kind,
		Client:    cl,
		APIReader: reader,
		Recorder:  ctx.Recorder(kind.ControllerName),
	}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager, workers)
}
