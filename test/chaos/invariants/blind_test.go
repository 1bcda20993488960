package invariants

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestBlind: checks that depend on a kind whose watch was broken within their window are
// held while it is broken and dropped after; other kinds' and older breaks do not matter.
func TestBlind(t *testing.T) {
	// An event, a broken watch or a resumed one, at a time.
	type step struct {
		at           float64
		event        *Event
		blind, sight string
	}
	ev := func(e Event) step { return step{at: e.Time.Sub(t0).Seconds(), event: &e} }
	start := []step{ev(added(0, replicaSet("rs", 2, ""))), ev(added(1, rsPod("rs", "a"))), ev(added(1, rsPod("rs", "b")))}
	tests := []struct {
		name     string
		steps    []step
		want     []want
		unjudged int
	}{
		{name: "scale-up held back by a broken ReplicaSet watch", steps: append(start,
			step{at: 9, blind: "ReplicaSet"}, ev(added(10, rsPod("rs", "c"))), step{at: 18, sight: "ReplicaSet"},
			ev(modified(18, replicaSet("rs", 3, "")))), unjudged: 1},
		{name: "a check held while the watch is broken is not judged at Flush", steps: append(start,
			step{at: 9, blind: "ReplicaSet"}, ev(added(10, rsPod("rs", "c")))), unjudged: 1},
		{name: "another kind's broken watch", steps: append(start,
			step{at: 9, blind: "DaemonSet"}, ev(added(10, rsPod("rs", "c")))),
			want: []want{{10, RuleReplicaSetReplicas, "ReplicaSet chaos/rs"}}},
		{name: "a break long over", steps: append(start,
			step{at: 1, blind: "ReplicaSet"}, step{at: 2, sight: "ReplicaSet"}, ev(added(10, rsPod("rs", "c")))),
			want: []want{{10, RuleReplicaSetReplicas, "ReplicaSet chaos/rs"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewChecker(5 * time.Second)
			for _, s := range tt.steps {
				switch {
				case s.event != nil:
					c.Observe(*s.event)
				case s.blind != "":
					c.Blind(s.blind, sec(s.at))
				default:
					c.Sight(s.sight, sec(s.at))
				}
				c.Tick(sec(s.at + 30)) // long past every due time: only held checks wait
			}
			c.Flush()
			var got []want
			for _, v := range c.Violations() {
				got = append(got, want{v.Time.Sub(t0).Seconds(), v.Rule, v.Object})
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
			if c.Unjudged() != tt.unjudged {
				t.Errorf("unjudged %d, want %d", c.Unjudged(), tt.unjudged)
			}
		})
	}
}
