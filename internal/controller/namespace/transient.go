package namespace

import (
	"errors"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/client-go/discovery"
)

// Why a namespace's retries are capped lower when the API server itself failed.
//
// A namespace's deletion makes a request per resource type (discovery, lists, deletes,
// about fifty), so while the API server answers 429s or 5xx, or drops connections, every pass
// fails. Upstream's queue backs such a namespace off from 5 ms to a minute, and that
// backoff outlives the fault: after 15 s of 5xx (test/chaos) the namespace waited most of a
// minute more before anyone looked at it again. When every error of a pass is one the API
// server's health explains, kcm backs off on its own, doubling from transientBase to at most
// transientCap, and the queue's backoff is reset; any other error (a discovery group that
// fails, a webhook that refuses, a conflict) keeps upstream's backoff.
const (
	transientBase = 100 * time.Millisecond
	transientCap  = 5 * time.Second
)

// transient reports whether err, and every error it aggregates, is the API server's
// momentary failure rather than the namespace's: throttled, a server error or timeout, or a
// connection broken off.
func transient(err error) bool {
	if err == nil {
		return false
	}
	var agg utilerrors.Aggregate
	if errors.As(err, &agg) {
		for _, e := range agg.Errors() {
			if !transient(e) {
				return false
			}
		}
		return len(agg.Errors()) > 0
	}
	// A discovery group that fails is most often an aggregated API that is down for good: not
	// the API server's momentary failure.
	if discovery.IsGroupDiscoveryFailedError(err) {
		return false
	}
	return apierrors.IsTooManyRequests(err) || apierrors.IsInternalError(err) || apierrors.IsServiceUnavailable(err) ||
		apierrors.IsServerTimeout(err) || apierrors.IsTimeout(err) || utilnet.IsProbableEOF(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsConnectionRefused(err) || utilnet.IsHTTP2ConnectionLost(err)
}

// transientBackoff is the per-namespace delay after passes that failed only transiently.
type transientBackoff struct {
	mu       sync.Mutex
	failures map[string]int
}

// next is the delay after one more transient failure of key.
func (b *transientBackoff) next(key string) time.Duration {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.failures == nil {
		b.failures = map[string]int{}
	}
	n := b.failures[key]
	b.failures[key] = n + 1
	d := transientBase
	for range n {
		d *= 2
		if d >= transientCap {
			return transientCap
		}
	}
	return d
}

// forget resets key after a pass that did not fail transiently.
func (b *transientBackoff) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.failures, key)
}
