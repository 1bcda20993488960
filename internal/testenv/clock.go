package testenv

import (
	"sync/atomic"
	"time"
)

// OffsetClock is the real clock moved on by an offset a spec sets: for a controller that
// judges an object's age, since the API server sets creationTimestamp itself and the ages
// judged (minutes, days) cannot be waited for. Time still passes as usual, so the
// controller's waits (RequeueAfter) are real. Its zero value reads the real time.
type OffsetClock struct{ offset atomic.Int64 }

// Now is the real time plus the offset.
func (c *OffsetClock) Now() time.Time { return time.Now().Add(time.Duration(c.offset.Load())) }

// Since is how long before Now t was.
func (c *OffsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Set makes the clock read the real time plus d from now on.
func (c *OffsetClock) Set(d time.Duration) { c.offset.Store(int64(d)) }
