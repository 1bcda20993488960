package replicaset

// ReplicaSetSkips is replicaset_controller_stale_sync_skips_total, for specs that build a
// guard of their own.
var ReplicaSetSkips = staleGuard.Skips
