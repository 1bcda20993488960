package faultproxy

import (
	"encoding/json"
	"net/http"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Fault is what the proxy does to the requests it sees. The zero Fault forwards everything
// untouched. The three fractions are shares of all requests and are exclusive: with Throttle
// 0.2, ServerErrors 0.1 and Resets 0.1, a request is throttled, failed or reset with
// probabilities 0.2, 0.1 and 0.1, and forwarded intact otherwise. Their sum should not
// exceed 1.
type Fault struct {
	// Throttle is the fraction of requests answered 429 with Retry-After: 1 and a
	// TooManyRequests Status, as API Priority and Fairness rejects a request; client-go waits
	// and retries them.
	Throttle float64
	// ServerErrors is the fraction of requests answered 500 (InternalError) or 503
	// (ServiceUnavailable), alternately, with a Status body and no Retry-After.
	ServerErrors float64
	// Resets is the fraction of requests forwarded whose response is then broken off after its
	// header and part of its body (a closed connection on HTTP/1.1, a reset stream on HTTP/2);
	// a response with no body to cut is broken off before anything is written.
	Resets float64
	// Latency delays every request before it is answered or forwarded.
	Latency time.Duration
	// CutWatchesEvery, when set, ends every watch stream in flight at that period, as
	// CutWatches does.
	CutWatchesEvery time.Duration
	// Blackhole partitions kcm from the API server: new requests get no answer until the
	// fault is lifted, and are then dropped (their connection or stream broken); responses in
	// flight, watch streams included, stop delivering bytes until it is lifted and then go on.
	Blackhole bool
}

// Stats counts requests since the proxy started or since ResetStats.
type Stats struct {
	// Requests is every request seen; ByVerb splits it by verb (VerbGet, VerbList, ...).
	Requests int64
	ByVerb   map[string]int64
	// Forwarded counts requests sent upstream, Resets included.
	Forwarded int64
	// Throttled (429), ServerErrors (500 or 503) and Held (blackholed) were never forwarded.
	Throttled    int64
	ServerErrors int64
	Held         int64
	// Resets counts forwarded requests whose response was broken off.
	Resets int64
	// WatchesCut counts watch streams ended by CutWatches or Fault.CutWatchesEvery.
	WatchesCut int64
}

// action is a request's fate.
type action int

const (
	forward action = iota
	hold
	throttle
	serverError
)

// decision is what the proxy does with one request, read from the fault when it arrived.
type decision struct {
	action action
	// status is the code of a serverError: 500 or 503.
	status int
	// reset breaks off the forwarded response.
	reset bool
	// latency delays the answer.
	latency time.Duration
	// healed is closed when the partition holding this request is lifted.
	healed <-chan struct{}
}

// decide reads the fault for r and counts it. One random draw per request (none when held)
// keeps a sequence of requests repeatable with the same Options.Seed.
func (p *Proxy) decide(r *http.Request) decision {
	p.mu.Lock()
	defer p.mu.Unlock()
	f := p.fault
	p.stats.Requests++
	p.stats.ByVerb[verbOf(r)]++
	if f.Blackhole {
		p.stats.Held++
		return decision{action: hold, healed: p.healed}
	}
	d := decision{latency: f.Latency}
	u := p.rng.Float64()
	switch {
	case u < f.Throttle:
		d.action = throttle
		p.stats.Throttled++
	case u < f.Throttle+f.ServerErrors:
		d.action = serverError
		d.status = http.StatusInternalServerError
		if p.stats.ServerErrors%2 == 1 {
			d.status = http.StatusServiceUnavailable
		}
		p.stats.ServerErrors++
	default:
		d.action = forward
		p.stats.Forwarded++
		if u < f.Throttle+f.ServerErrors+f.Resets {
			d.reset = true
			p.stats.Resets++
		}
	}
	return d
}

// Statuses the proxy answers with, as kube-apiserver words them.
var (
	statusType = metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}

	tooManyRequests = &metav1.Status{
		TypeMeta: statusType, Status: metav1.StatusFailure, Code: http.StatusTooManyRequests, Reason: metav1.StatusReasonTooManyRequests,
		Message: "Too many requests, please try again later.",
		Details: &metav1.StatusDetails{RetryAfterSeconds: 1},
	}
	internalError = &metav1.Status{
		TypeMeta: statusType, Status: metav1.StatusFailure, Code: http.StatusInternalServerError, Reason: metav1.StatusReasonInternalError,
		Message: "Internal error occurred: injected by faultproxy",
	}
	serviceUnavailable = &metav1.Status{
		TypeMeta: statusType, Status: metav1.StatusFailure, Code: http.StatusServiceUnavailable, Reason: metav1.StatusReasonServiceUnavailable,
		Message: "The server is currently unable to handle the request (injected by faultproxy)",
	}
)

// writeStatus answers with s as JSON; a Status with RetryAfterSeconds sets Retry-After too,
// which client-go honours by waiting and retrying.
func writeStatus(w http.ResponseWriter, s *metav1.Status) {
	body, err := json.Marshal(s)
	if err != nil {
		panic(err) // a Status always marshals
	}
	w.Header().Set("Content-Type", "application/json")
	if s.Details != nil && s.Details.RetryAfterSeconds > 0 {
		w.Header().Set("Retry-After", strconv.Itoa(int(s.Details.RetryAfterSeconds)))
	}
	w.WriteHeader(int(s.Code))
	_, _ = w.Write(body)
}
