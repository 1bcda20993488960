// Package slowstart makes many similar API calls the way upstream's controllers create pods:
// in batches of 1, 2, 4, ..., each batch in parallel, stopping after the first batch with a
// failure. A call that fails (quota, admission) usually fails for all, and this spares the
// API server a storm of doomed calls while a healthy burst still finishes in log2(n) rounds.
package slowstart

import "sync"

// Run calls fn(i) for i = 0..count-1 in slow-start batches and returns how many calls
// succeeded and the first error; calls after the failing batch are not made.
func Run(count int, fn func(i int) error) (int, error) {
	successes, next := 0, 0
	for batch := min(count, 1); batch > 0; batch = min(2*batch, count-next) {
		errs := make(chan error, batch)
		var wg sync.WaitGroup
		for i := next; i < next+batch; i++ {
			wg.Go(func() {
				if err := fn(i); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		next += batch
		successes += batch - len(errs)
		if len(errs) > 0 {
			return successes, <-errs
		}
	}
	return successes, nil
}
