package convergence

import (
	"strconv"
	"testing"

	"k8s.io/utils/clock"
)

// The cost of one informer event on a tracker holding 20,000 objects, half of them not
// converged: what the clocks add to each event the controller's own handlers get.
func BenchmarkUpdated(b *testing.B) {
	tracker := NewTracker(Rule{Controller: "bench", Converged: done}, clock.RealClock{}, func(float64) {})
	for i := range 20000 {
		state := "done"
		if i%2 == 0 {
			state = ""
		}
		tracker.Added(object(strconv.Itoa(i), 1, state), false)
	}
	old, working, converged := object("1", 1, "done"), object("1", 2, ""), object("1", 2, "done")
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		tracker.Updated(old, working)
		tracker.Updated(working, converged)
	}
}

// The cost of a scrape's gauges for a tracker with 10,000 objects not converged.
func BenchmarkNotConverged(b *testing.B) {
	tracker := NewTracker(Rule{Controller: "bench", Converged: done}, clock.RealClock{}, func(float64) {})
	for i := range 10000 {
		tracker.Added(object(strconv.Itoa(i), 1, ""), false)
	}
	b.ResetTimer()
	for range b.N {
		tracker.NotConverged()
	}
}
