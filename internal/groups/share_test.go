package groups

import (
	"slices"
	"testing"
)

func TestShare(t *testing.T) {
	for _, c := range []struct {
		groups, live, want int
	}{
		{groups: 6, live: 3, want: 2},
		{groups: 6, live: 4, want: 2},
		{groups: 7, live: 3, want: 3},
		{groups: 6, live: 1, want: 6},
		{groups: 6, live: 0, want: 6},  // a replica counts itself: never below 1
		{groups: 6, live: -2, want: 6}, // nor a bad count
		{groups: 2, live: 5, want: 1},  // more replicas than groups: one each, some idle
		{groups: 0, live: 3, want: 0},
		{groups: 12, live: 5, want: 3},
	} {
		if got := Share(c.groups, c.live); got != c.want {
			t.Errorf("Share(%d groups, %d live) = %d, want %d", c.groups, c.live, got, c.want)
		}
		// The shares of the live replicas cover every group.
		if live := max(c.live, 1); Share(c.groups, c.live)*live < c.groups {
			t.Errorf("Share(%d, %d) × %d replicas leaves groups unled", c.groups, c.live, live)
		}
	}
}

func TestMayTake(t *testing.T) {
	for _, c := range []struct {
		leading, share int
		want           bool
	}{
		{leading: 0, share: 2, want: true},
		{leading: 1, share: 2, want: true},
		{leading: 2, share: 2, want: false}, // at its share
		{leading: 3, share: 2, want: false}, // above it
		{leading: 0, share: 0, want: false},
	} {
		if got := MayTake(c.leading, c.share); got != c.want {
			t.Errorf("MayTake(leading %d, share %d) = %v, want %v", c.leading, c.share, got, c.want)
		}
	}
}

func TestGiveUp(t *testing.T) {
	six := []string{"a", "b", "c", "d", "e", "f"}
	for _, c := range []struct {
		name     string
		leading  []string
		share    int
		wantLen  int
		identity string
	}{
		{name: "at share", leading: []string{"a", "b"}, share: 2, wantLen: 0},
		{name: "below share", leading: []string{"a"}, share: 2, wantLen: 0},
		{name: "none led", share: 2, wantLen: 0},
		{name: "one above", leading: []string{"a", "b", "c"}, share: 2, wantLen: 1},
		{name: "all but two", leading: six, share: 2, wantLen: 4},
		{name: "share zero gives all", leading: six, share: 0, wantLen: 6},
		{name: "negative share gives all", leading: six, share: -1, wantLen: 6},
	} {
		t.Run(c.name, func(t *testing.T) {
			for _, id := range []string{"host-a_1", "host-b_2", "host-c_3"} {
				got := GiveUp(id, c.leading, c.share)
				if len(got) != c.wantLen {
					t.Fatalf("%s: GiveUp(%v, share %d) = %v, want %d groups", id, c.leading, c.share, got, c.wantLen)
				}
				for _, g := range got {
					if !slices.Contains(c.leading, g) {
						t.Fatalf("%s: gives up %q, which it does not lead (%v)", id, g, c.leading)
					}
				}
				// Deterministic: whatever order the groups are listed in.
				rev := slices.Clone(c.leading)
				slices.Reverse(rev)
				again := GiveUp(id, rev, c.share)
				if !slices.Equal(got, again) {
					t.Fatalf("%s: GiveUp depends on the order of the groups: %v, then %v", id, got, again)
				}
				// What it keeps is what it ranks highest: giving up from a smaller share gives up
				// a superset.
				if c.share > 0 {
					more := GiveUp(id, c.leading, c.share-1)
					for _, g := range got {
						if !slices.Contains(more, g) {
							t.Fatalf("%s: at share %d it gives up %v, at share %d %v (not a superset)", id, c.share, got, c.share-1, more)
						}
					}
				}
			}
		})
	}
	// Replicas rank groups differently, so that two replicas above their share do not all let
	// the same groups go (a witness: some pair of identities disagrees on six groups).
	a, b := GiveUp("host-a_1", six, 3), GiveUp("host-b_2", six, 3)
	slices.Sort(a)
	slices.Sort(b)
	if slices.Equal(a, b) {
		t.Logf("host-a_1 and host-b_2 give up the same groups %v; trying a third identity", a)
		c := GiveUp("host-c_3", six, 3)
		slices.Sort(c)
		if slices.Equal(a, c) {
			t.Fatalf("three identities give up the same groups %v: the ranking ignores the identity", a)
		}
	}
}

func TestDonations(t *testing.T) {
	for _, c := range []struct {
		name    string
		leading map[string]int
		live    []string
		groups  int
		want    map[string]int // by identity; absent: 0
	}{
		{name: "even", leading: map[string]int{"a": 2, "b": 2, "c": 2}, live: []string{"a", "b", "c"}, groups: 6},
		{name: "four replicas, six groups, one idle: the two first of the fullest give one each",
			leading: map[string]int{"a": 2, "b": 2, "c": 2}, live: []string{"a", "b", "c", "d"}, groups: 6,
			want: map[string]int{"a": 1}},
		{name: "two idle of four: floor one each, two donations",
			leading: map[string]int{"a": 3, "b": 3}, live: []string{"a", "b", "c", "d"}, groups: 6,
			want: map[string]int{"a": 1, "b": 1}},
		{name: "free groups cover the idle replica: nothing donated",
			leading: map[string]int{"a": 2, "b": 2, "c": 1}, live: []string{"a", "b", "c", "d"}, groups: 6},
		{name: "free groups cover part of it",
			leading: map[string]int{"a": 3, "b": 2}, live: []string{"a", "b", "c", "d", "e", "f"}, groups: 6,
			want: map[string]int{"a": 2, "b": 1}},
		{name: "more replicas than groups: floor zero, nothing to donate",
			leading: map[string]int{"a": 1, "b": 1}, live: []string{"a", "b", "c"}, groups: 2},
		{name: "a dead replica's groups count as held, not donated by the live",
			leading: map[string]int{"a": 2, "b": 2, "dead": 2}, live: []string{"a", "b", "c"}, groups: 6},
		{name: "no live replica listed", leading: map[string]int{"a": 6}, groups: 6},
	} {
		for _, id := range append(c.live, "outsider") {
			if got := Donations(id, c.leading, c.live, c.groups); got != c.want[id] {
				t.Errorf("%s: Donations(%s) = %d, want %d", c.name, id, got, c.want[id])
			}
		}
	}
}
