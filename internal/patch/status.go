// Package patch writes an object's status subresource the one way kcm's controllers write
// status: as upstream's UpdateStatus. The API server's system:controller:<name> roles, which
// a controller acts under with --use-service-account-credentials, grant update, not patch, on
// status subresources (deployments/status, jobs/status, resourcequotas/status, ...).
package patch

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Locking says whether a status write carries the resourceVersion it was computed from.
// Every caller chooses, and says why beside the call:
//
//   - Optimistic: the new status depends on the old one or on state the next sync cannot
//     recompute (quota usage checked against admission's charges, node conditions and
//     taint timestamps, namespace deletion progress, a CronJob's last schedule time, a PDB's
//     disrupted pods). A concurrent writer's change must not be overwritten: a conflict (409)
//     is returned, and the request requeues to recompute from a fresh read.
//   - LastWriteWins: the status is recomputed whole from the children every sync (replica
//     counts of ReplicaSets, DaemonSets, StatefulSets), and each write's watch event brings
//     another sync, so a stale write is corrected at once; a lock would only turn the normal
//     cache lag into conflict retries. The update is unconditional (no resourceVersion).
type Locking bool

const (
	Optimistic    Locking = true
	LastWriteWins Locking = false
)

// Status writes obj's status (obj as read, its status changed) with an update of the status
// subresource; obj then holds the API server's answer.
func Status(ctx context.Context, c client.Client, obj client.Object, l Locking) error {
	if l == LastWriteWins {
		obj.SetResourceVersion("")
	}
	return c.Status().Update(ctx, obj)
}

// From is the merge patch from orig with the chosen locking, for writes other than status
// that make the same choice (where the controller's role grants patch).
func From(orig client.Object, l Locking) client.Patch {
	if l == Optimistic {
		return client.MergeFromWithOptions(orig, client.MergeFromWithOptimisticLock{})
	}
	return client.MergeFrom(orig)
}
