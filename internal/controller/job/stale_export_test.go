package job

// JobSkips is job_controller_stale_sync_skips_total, for specs that build a guard of their
// own.
var JobSkips = staleGuard.Skips
