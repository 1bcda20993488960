// Package patch writes an object's status subresource the one way kcm's controllers write
// status: as upstream's UpdateStatus. The API server's system:controller:<name> roles, which
// a controller acts under with --use-service-account-credentials, grant update, not patch, on
// status subresources (deployments/status, jobs/status, resourcequotas/status, ...).
package patch

import (
	"context"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Status writes obj's status (obj as read, its status changed) with an update of the status
// subresource, at the resourceVersion obj was read at; obj then holds the API server's answer.
//
// Always at that version, never unconditionally: an update of the status subresource writes
// the object's metadata too (the status strategies of the built-in kinds reset only spec), so
// an unconditional update made from a cache that has not yet seen another writer's change to
// labels, annotations, owner references or finalizers takes that change back without a trace.
// (It did: a ReplicaSet patched with a new label while its status was being written lost the
// label, and upstream's "ReplicaSet Replace and Patch" conformance spec, which watches for it,
// never saw the ReplicaSet again.) A conflict (409) means the read was behind: the caller
// requeues and recomputes from the newer copy, which its cache is about to deliver.
func Status(ctx context.Context, c client.Client, obj client.Object) error {
	return c.Status().Update(ctx, obj)
}
