package invariants

import "time"

// A watch that breaks (the API server restarting, etcd away) holds back its kind's events:
// once it resumes, they arrive late, all at once. A pod created meanwhile would then be
// judged without the ReplicaSet scale-up that caused it, and reported for nothing. So the
// observer says when a kind's watch broke (Blind) and when its events flow again (Sight);
// a check that depends on that kind is held while the watch is broken within its window,
// and dropped, as unjudged, if the window overlapped the break.

// span is a time a kind's watch was broken; to is zero while it still is.
type span struct{ from, to time.Time }

// Blind records that kind's events (e.g. "ReplicaSet") may be late from at on: its watch
// broke. It stays blind until Sight.
func (c *Checker) Blind(kind string, at time.Time) {
	s := c.blind[kind]
	if n := len(s); n > 0 && s[n-1].to.IsZero() {
		return
	}
	c.blind[kind] = append(s, span{from: at})
}

// Sight records that kind's events flow again at at: the first event after its watch
// broke, or a limit after which the observer takes the kind as idle.
func (c *Checker) Sight(kind string, at time.Time) {
	if s := c.blind[kind]; len(s) > 0 && s[len(s)-1].to.IsZero() {
		s[len(s)-1].to = at
	}
}

// Unjudged counts the checks not judged because a watch they depend on was broken within
// their window.
func (c *Checker) Unjudged() int { return c.unjudged }

// depends lists the kinds whose events a check is judged by (besides pods, whose own
// events come in order through one watch).
func depends(ck check) []string {
	switch {
	case ck.lost:
		return []string{"ReplicaSet", "Namespace"}
	case ck.scaled != "":
		return []string{"Deployment"}
	}
	switch ck.pod.ownerKind {
	case "ReplicaSet":
		return []string{"ReplicaSet", "Deployment"}
	case "Job":
		return []string{"Job"}
	case "DaemonSet":
		return []string{"DaemonSet"}
	}
	return nil
}

// blindness says whether a check must wait (a watch it depends on is broken within its
// window) or cannot be judged (one was).
func (c *Checker) blindness(ck check) (held, dropped bool) {
	from, to := c.window(ck.at)
	for _, kind := range depends(ck) {
		for _, s := range c.blind[kind] {
			switch {
			case s.from.After(to):
			case s.to.IsZero():
				held = true
			case !s.to.Before(from):
				dropped = true
			}
		}
	}
	return held, dropped
}
