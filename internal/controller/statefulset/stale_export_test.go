package statefulset

// StatefulSetSkips is statefulset_controller_stale_sync_skips_total, for specs that build a
// guard of their own.
var StatefulSetSkips = staleGuard.Skips
