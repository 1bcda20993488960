package faultproxy

import (
	"context"
	"io"
	"net/http"
	"sync/atomic"
	"time"
)

// watch is a watch stream in flight.
type watch struct {
	// cut is set before cancel, so that the stream ends cleanly (endCutWatchCleanly).
	cut    atomic.Bool
	cancel context.CancelFunc
}

type watchKey struct{}

// trackWatch registers a watch stream whose request context is ctx, cancelled by cancel. It
// returns the context to forward the request with and a func that unregisters it.
func (p *Proxy) trackWatch(ctx context.Context, cancel context.CancelFunc) (context.Context, func()) {
	w := &watch{cancel: cancel}
	p.mu.Lock()
	p.watches[w] = struct{}{}
	p.mu.Unlock()
	return context.WithValue(ctx, watchKey{}, w), func() {
		p.mu.Lock()
		delete(p.watches, w)
		p.mu.Unlock()
	}
}

// CutWatches ends every watch stream in flight now: the upstream request is cancelled and the
// client sees its stream end, as when the API server ends a watch at its timeout.
func (p *Proxy) CutWatches() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for w := range p.watches {
		w.cut.Store(true)
		w.cancel()
		delete(p.watches, w)
		p.stats.WatchesCut++
	}
}

// startCutterLocked stops the goroutine cutting watches, if any, and starts one cutting every
// period if period > 0. p.mu is held.
func (p *Proxy) startCutterLocked(period time.Duration) {
	if p.stopCutter != nil {
		close(p.stopCutter)
		p.stopCutter = nil
	}
	if period <= 0 {
		return
	}
	stop := make(chan struct{})
	p.stopCutter = stop
	p.serving.Go(func() {
		tick := time.NewTicker(period)
		defer tick.Stop()
		for {
			select {
			case <-tick.C:
				p.CutWatches()
			case <-stop:
				return
			}
		}
	})
}

// endCutWatchCleanly makes a cut watch's body end with io.EOF rather than the cancellation
// error, so that the proxy ends the response normally (the last chunk on HTTP/1.1,
// END_STREAM on HTTP/2) instead of breaking the connection.
func endCutWatchCleanly(res *http.Response) error {
	if w, ok := res.Request.Context().Value(watchKey{}).(*watch); ok {
		res.Body = &cutBody{ReadCloser: res.Body, cut: &w.cut}
	}
	return nil
}

type cutBody struct {
	io.ReadCloser
	cut *atomic.Bool
}

func (b *cutBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if err != nil && b.cut.Load() {
		err = io.EOF
	}
	return n, err
}
