package slowstart

import (
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestRun(t *testing.T) {
	tests := []struct {
		name          string
		count         int
		failFrom      int // calls numbered from 1; 0 never fails
		wantCalls     int
		wantSuccesses int
	}{
		{name: "all succeed", count: 10, wantCalls: 10, wantSuccesses: 10},
		{name: "none", count: 0},
		{name: "first fails: one call only", count: 500, failFrom: 1, wantCalls: 1},
		// Batches 1, 2, 4: the 4th call fails, its batch (calls 4-7) completes, then it stops.
		{name: "stops after the failing batch", count: 500, failFrom: 4, wantCalls: 7, wantSuccesses: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var calls atomic.Int32
			got, err := Run(tt.count, func(int) error {
				if n := int(calls.Add(1)); tt.failFrom > 0 && n >= tt.failFrom {
					return errors.New("quota")
				}
				return nil
			})
			if int(calls.Load()) != tt.wantCalls || got != tt.wantSuccesses {
				t.Errorf("calls = %d, successes = %d; want %d, %d", calls.Load(), got, tt.wantCalls, tt.wantSuccesses)
			}
			if (err != nil) != (tt.failFrom > 0) {
				t.Errorf("err = %v", err)
			}
		})
	}
}

func TestRunCallsEachIndexOnceInGrowingBatches(t *testing.T) {
	var mu sync.Mutex
	inFlight, peaks, seen := 0, []int{}, map[int]int{}
	n, err := Run(20, func(i int) error {
		mu.Lock()
		inFlight++
		peaks = append(peaks, inFlight)
		seen[i]++
		mu.Unlock()
		time.Sleep(5 * time.Millisecond)
		mu.Lock()
		inFlight--
		mu.Unlock()
		return nil
	})
	if n != 20 || err != nil || len(seen) != 20 {
		t.Fatalf("n = %d, err = %v, indexes = %d", n, err, len(seen))
	}
	for i, c := range seen {
		if c != 1 || i < 0 || i >= 20 {
			t.Errorf("index %d called %d times", i, c)
		}
	}
	if m := slices.Max(peaks); m > 8 {
		t.Errorf("at most 8 calls run together for 20 (batches 1,2,4,8,5), saw %d", m)
	}
}
