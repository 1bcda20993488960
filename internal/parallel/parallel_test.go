package parallel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
)

func TestDoBoundsConcurrencyAndJoinsErrors(t *testing.T) {
	var running, peak, calls atomic.Int32
	block := make(chan struct{})
	done := make(chan error)
	go func() {
		done <- Do(context.Background(), 10, 3, func(_ context.Context, i int) error {
			calls.Add(1)
			if n := running.Add(1); n > peak.Load() {
				peak.Store(n)
			}
			<-block
			running.Add(-1)
			if i%4 == 0 {
				return errors.New("boom")
			}
			return nil
		})
	}()
	close(block)
	err := <-done
	if calls.Load() != 10 {
		t.Errorf("calls = %d, want 10", calls.Load())
	}
	if peak.Load() > 3 {
		t.Errorf("peak concurrency %d, want at most 3", peak.Load())
	}
	var joined interface{ Unwrap() []error }
	if !errors.As(err, &joined) || len(joined.Unwrap()) != 3 {
		t.Errorf("err = %v, want the 3 failures (i = 0, 4, 8) joined", err)
	}
	if err := Do(context.Background(), 5, 2, func(context.Context, int) error { return nil }); err != nil {
		t.Errorf("all succeeded: err = %v", err)
	}
}
