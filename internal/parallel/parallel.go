// Package parallel runs a bounded number of similar API calls at once, as upstream's
// controllers do with workqueue.ParallelizeUntil, and collects every failure.
package parallel

import (
	"context"
	"errors"
	"sync"

	"k8s.io/client-go/util/workqueue"
)

// Do calls fn(i) for i = 0..n-1, at most limit at a time, and returns every error joined
// (nil when all succeed). A cancelled ctx stops handing out new calls.
func Do(ctx context.Context, n, limit int, fn func(ctx context.Context, i int) error) error {
	var (
		mu   sync.Mutex
		errs []error
	)
	workqueue.ParallelizeUntil(ctx, max(limit, 1), n, func(i int) {
		if err := fn(ctx, i); err != nil {
			mu.Lock()
			errs = append(errs, err)
			mu.Unlock()
		}
	})
	return errors.Join(errs...)
}
