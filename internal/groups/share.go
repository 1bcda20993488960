package groups

import (
	"cmp"
	"hash/fnv"
	"slices"
)

// Share is the most groups one replica leads while live replicas are candidates:
// ceil(groups / live). A replica always counts itself, so live is at least 1. The shares of all
// live replicas cover every group, so no group is left without a replica willing to lead it.
func Share(groups, live int) int {
	if live < 1 {
		live = 1
	}
	return (groups + live - 1) / live
}

// MayTake says whether a replica that leads leading groups may take one more: only below its
// share. Renewing a group it leads is never refused.
func MayTake(leading, share int) bool {
	return leading < share
}

// GiveUp returns which of the groups a replica leads it lets go to come down to its share, in
// the order to let them go; none when it is at or below its share. The choice is
// deterministic (rendezvous hashing of the replica's identity with each group's name): a replica
// keeps the groups it ranks highest, so a replica that joins and leaves again does not move the
// same groups back and forth among the others by chance, and a test can predict it.
func GiveUp(identity string, leading []string, share int) []string {
	if share < 0 {
		share = 0
	}
	if len(leading) <= share {
		return nil
	}
	ranked := slices.Clone(leading)
	slices.SortFunc(ranked, func(a, b string) int {
		ra, rb := rank(identity, a), rank(identity, b)
		switch {
		case ra > rb:
			return -1
		case ra < rb:
			return 1
		}
		return cmp.Compare(a, b)
	})
	return ranked[share:]
}

// rank is how much identity wants to keep group: a hash of both.
func rank(identity, group string) uint64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte(identity))
	_, _ = h.Write([]byte{0})
	_, _ = h.Write([]byte(group))
	return h.Sum64()
}

// Donations is how many of the groups it leads the replica identity lets go, within its
// share, so that no live replica leads fewer than floor(groups / live) while another leads
// more: with six groups and four replicas every share is two, and three replicas at two would
// leave the fourth none. leading counts the groups each replica holds by the group Leases;
// live lists the live replicas' identities, identity among them. Groups nobody holds go to the
// replicas below the floor first (they may take them), so only what those cannot cover is
// donated, one group at a time from the replicas that lead the most (ties by identity): every
// replica computes the same donations from the same Leases.
func Donations(identity string, leading map[string]int, live []string, groups int) int {
	if len(live) == 0 {
		return 0
	}
	floor := groups / len(live)
	held := 0
	for _, n := range leading {
		held += n
	}
	needed := held - groups // minus the groups nobody holds
	for _, id := range live {
		if leading[id] < floor {
			needed += floor - leading[id]
		}
	}
	if needed <= 0 {
		return 0
	}
	donors := slices.Clone(live)
	slices.SortFunc(donors, func(a, b string) int {
		if c := cmp.Compare(leading[b], leading[a]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	give := map[string]int{}
	for needed > 0 {
		gave := false
		for _, d := range donors {
			if needed > 0 && leading[d]-give[d] > floor {
				give[d]++
				needed--
				gave = true
			}
		}
		if !gave {
			break
		}
	}
	return give[identity]
}
