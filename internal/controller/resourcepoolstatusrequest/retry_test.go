package resourcepoolstatusrequest

import (
	"context"
	"errors"
	"testing"
)

// TestRetryBudget: as upstream's queue, a request failing is retried maxRetries times, then
// dropped; a success in between starts the count again, and each request has its own.
func TestRetryBudget(t *testing.T) {
	r := &Reconciler{failures: map[string]int{}}
	ctx := context.Background()
	boom := errors.New("incomplete pools detected, requeueing")
	for i := range maxRetries {
		if err := r.retry(ctx, "a", boom); err == nil {
			t.Fatalf("failure %d dropped, want a retry", i+1)
		}
	}
	if err := r.retry(ctx, "b", boom); err == nil {
		t.Fatalf("another request's first failure dropped")
	}
	if err := r.retry(ctx, "a", boom); err != nil {
		t.Fatalf("failure %d retried, want it dropped after %d retries", maxRetries+1, maxRetries)
	}
	if err := r.retry(ctx, "a", boom); err == nil {
		t.Fatalf("the next failure after a drop is not retried")
	}
	if err := r.retry(ctx, "a", nil); err != nil {
		t.Fatalf("success returned %v", err)
	}
	for i := range maxRetries {
		if err := r.retry(ctx, "a", boom); err == nil {
			t.Fatalf("after a success, failure %d dropped", i+1)
		}
	}
}
