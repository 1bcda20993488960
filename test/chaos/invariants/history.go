package invariants

import "time"

// history is the values one number (a spec field) took, with when each was first seen, so
// that a bound can be read over a window rather than at one instant.
type history struct {
	points []point
}

type point struct {
	at time.Time
	v  int
}

// set records v as seen at at; a repeated value is not a new point.
func (h *history) set(at time.Time, v int) {
	if n := len(h.points); n > 0 && h.points[n-1].v == v {
		return
	}
	h.points = append(h.points, point{at, v})
}

// known reports whether any value was recorded.
func (h *history) known() bool { return len(h.points) > 0 }

// last is the latest value, 0 if none.
func (h *history) last() int {
	if len(h.points) == 0 {
		return 0
	}
	return h.points[len(h.points)-1].v
}

// maxIn is the highest value in effect at any time in [from, to]: the one in effect at from
// and every one set after it up to to. Before the first value was seen nothing is known, so
// a window that starts earlier takes the first value as in effect, even if it came after to.
func (h *history) maxIn(from, to time.Time) (int, bool) {
	if len(h.points) == 0 {
		return 0, false
	}
	first := 0
	for first+1 < len(h.points) && !h.points[first+1].at.After(from) {
		first++
	}
	best := h.points[first].v
	for _, p := range h.points[first+1:] {
		if p.at.After(to) {
			break
		}
		best = max(best, p.v)
	}
	return best, true
}

// prune forgets values no window starting at or after before can need: all but the last
// one set before it.
func (h *history) prune(before time.Time) {
	i := 0
	for i+1 < len(h.points) && !h.points[i+1].at.After(before) {
		i++
	}
	h.points = h.points[i:]
}
