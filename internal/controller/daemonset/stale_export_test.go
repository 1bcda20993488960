package daemonset

// DaemonSetSkips is daemonset_controller_stale_sync_skips_total, for specs that build a
// guard of their own.
var DaemonSetSkips = staleGuard.Skips
