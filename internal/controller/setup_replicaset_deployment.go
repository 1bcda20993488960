package controller

import (
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"

	"github.com/kcm/kcm/internal/controller/deployment"
	"github.com/kcm/kcm/internal/controller/replicaset"
	"github.com/kcm/kcm/internal/index"
)

func setupReplicaSet(ctx *Context) error {
	return setupReplicas(ctx, replicaset.ReplicaSetKind, "replicaset-controller", "concurrent-replicaset-syncs")
}

func setupReplicationController(ctx *Context) error {
	return setupReplicas(ctx, replicaset.ReplicationControllerKind, "replication-controller", "concurrent-rc-syncs")
}

func setupReplicas(ctx *Context, kind replicaset.Kind, clientName, workersFlag string) error {
	if err := ctx.Index(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	cl, err := ctx.Client(clientName)
	if err != nil {
		return err
	}
	r := &replicaset.Reconciler{
		Kind:      kind,
		Client:    cl,
		APIReader: ctx.Manager.GetAPIReader(),
		Recorder:  ctx.Recorder(kind.ControllerName),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers(workersFlag, 5))
}

func setupDeployment(ctx *Context) error {
	if err := ctx.Index(&appsv1.ReplicaSet{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	if err := ctx.Index(&corev1.Pod{}, index.ControllerUID, index.ControllerUIDOf); err != nil {
		return err
	}
	cl, err := ctx.Client("deployment-controller")
	if err != nil {
		return err
	}
	r := &deployment.Reconciler{
		Client:    cl,
		APIReader: ctx.Manager.GetAPIReader(),
		Recorder:  ctx.Recorder(deployment.ControllerName),
	}
	return r.SetupWithManager(ctx.Manager, ctx.Workers("concurrent-deployment-syncs", 5))
}
