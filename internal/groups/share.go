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
