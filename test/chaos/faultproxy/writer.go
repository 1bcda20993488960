package faultproxy

import (
	"context"
	"net/http"
	"strconv"
)

// faultWriter is the response writer of a forwarded request: its writes wait while a
// Blackhole holds, and, for a request drawn for a reset, it breaks the response off after
// part of its body.
type faultWriter struct {
	http.ResponseWriter
	p *Proxy
	// ctx is the client's: a write frozen in a partition waits for its end even when its
	// watch is cut, and gives up only when the client is gone.
	ctx context.Context
	// reset breaks the response off once limit bytes of body are written; limit < 0 until
	// known (from Content-Length, or else from the first write).
	reset   bool
	limit   int64
	written int64
}

func newFaultWriter(p *Proxy, ctx context.Context, w http.ResponseWriter, reset bool) *faultWriter {
	return &faultWriter{ResponseWriter: w, p: p, ctx: ctx, reset: reset, limit: -1}
}

func (w *faultWriter) WriteHeader(code int) {
	if code < http.StatusOK { // informational: not the response yet
		w.ResponseWriter.WriteHeader(code)
		return
	}
	// If the request ends during a Blackhole, the writes that follow fail.
	_ = w.p.waitOpen(w.ctx)
	if w.reset {
		length, err := strconv.ParseInt(w.Header().Get("Content-Length"), 10, 64)
		switch {
		case code == http.StatusNoContent || code == http.StatusNotModified || (err == nil && length < 2):
			// No body to cut: break off before anything is written.
			panic(http.ErrAbortHandler)
		case err == nil:
			w.limit = length / 2
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *faultWriter) Write(b []byte) (int, error) {
	if err := w.p.waitOpen(w.ctx); err != nil {
		return 0, err
	}
	if !w.reset || len(b) == 0 {
		return w.ResponseWriter.Write(b)
	}
	if w.limit < 0 {
		w.limit = max(1, int64(len(b))/2)
	}
	if w.written+int64(len(b)) < w.limit {
		n, err := w.ResponseWriter.Write(b)
		w.written += int64(n)
		return n, err
	}
	_, _ = w.ResponseWriter.Write(b[:w.limit-w.written])
	w.abort()
	return 0, nil // not reached
}

// Flush waits while a Blackhole holds, like Write.
func (w *faultWriter) Flush() {
	if w.p.waitOpen(w.ctx) != nil {
		return
	}
	_ = http.NewResponseController(w.ResponseWriter).Flush()
}

// Unwrap lets http.ResponseController reach the server's writer.
func (w *faultWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// abort sends what was written (the header at least) and breaks the response off: the server closes an HTTP/1.1
// connection and resets an HTTP/2 stream on http.ErrAbortHandler.
func (w *faultWriter) abort() {
	_ = http.NewResponseController(w.ResponseWriter).Flush()
	panic(http.ErrAbortHandler)
}
