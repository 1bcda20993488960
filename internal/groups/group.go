package groups

import "context"

// Group is one set of controllers one replica leads at a time, under its own Lease.
type Group struct {
	// Name is a DNS-1123 label; the group's Lease is "<leader-elect-resource-name>-<Name>".
	Name string
	// Controllers are upstream's controller names (never aliases), sorted.
	Controllers []string
}

// RunFunc runs a group's controllers under ctx, for one term: it returns once ctx is done and
// every one of them has stopped, or earlier with an error if they could not be started (the
// term then ends and the group's Lease is released for another replica).
type RunFunc func(ctx context.Context, g Group) error
