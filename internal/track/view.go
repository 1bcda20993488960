// Package track is each controller's own view of the objects it works on, per object: what
// its work queue holds for the key (queued, waiting to be requeued, backing off), its last
// syncs, the expectations and stale-cache waits it holds for the key, the time it spent on
// its client's token bucket for the key, and whether the object has converged by the
// controller's own rule. The leader serves it at
// /debug/controllers/<controller>/objects/<namespace>/<name>, and `kcm explain` shows it.
//
// Nothing here is a second queue or informer: the view is recorded by the hooks every
// controller already passes through (setup.TypedQueue's work queue, the controller's client
// and its token bucket, the manager's logger), and the controllers that hold per-key state
// (expectations, staleness guards, convergence rules) register a function that reads it.
package track

import (
	"time"
)

// View is one controller's view of one object (its work-queue key), as the debug path
// serves it in JSON.
type View struct {
	// Controller is the controller-runtime controller's name (upstream's controller name).
	Controller string `json:"controller"`
	// Key is the work-queue key: "namespace/name", or "name" for a cluster-scoped object.
	Key string `json:"key"`
	// Queue is what the work queue holds for the key now.
	Queue Queue `json:"queue"`
	// Syncs are the last syncs of the key, oldest first (a small ring).
	Syncs []Sync `json:"syncs"`
	// Expectations are the creations and deletions the controller still waits to observe
	// before it syncs the key again (replicaset, daemonset, job...).
	Expectations *Expectations `json:"expectations,omitempty"`
	// Stale is the stale-cache wait: the controller wrote a child at a resourceVersion its
	// cache has not shown yet, and waits rather than act on an old view.
	Stale *Stale `json:"stale,omitempty"`
	// RateLimiterWaitSeconds is the time the controller's syncs of this key spent waiting on
	// the client's token bucket (--kube-api-qps/--kube-api-burst), in total.
	RateLimiterWaitSeconds float64 `json:"rateLimiterWaitSeconds"`
	// Convergence is whether the object has converged by the controller's own rule, for the
	// controllers that have one (the convergence SLIs).
	Convergence *Convergence `json:"convergence,omitempty"`
}

// Queue states of a key.
const (
	// Idle: the key is not in the queue and not being synced.
	Idle = "Idle"
	// Queued: the key waits for a worker.
	Queued = "Queued"
	// Syncing: a worker is syncing the key now.
	Syncing = "Syncing"
	// Waiting: the key is to be requeued at RequeueAt (a RequeueAfter, a periodic resync).
	Waiting = "Waiting"
	// BackingOff: the last sync failed (or asked to be retried); the next attempt is at
	// NextAttempt, after Retries failures in a row.
	BackingOff = "BackingOff"
)

// Queue is what the work queue holds for a key.
type Queue struct {
	// State is one of Idle, Queued, Syncing, Waiting, BackingOff.
	State string `json:"state"`
	// QueuedSince is when the key was added and not yet picked by a worker (Queued).
	QueuedSince *time.Time `json:"queuedSince,omitempty"`
	// RequeueAt is when a key Waiting is due.
	RequeueAt *time.Time `json:"requeueAt,omitempty"`
	// Retries is the number of failed syncs in a row (the rate limiter's count).
	Retries int `json:"retries"`
	// NextAttempt is when a key BackingOff is tried again.
	NextAttempt *time.Time `json:"nextAttempt,omitempty"`
}

// Sync results.
const (
	Success      = "Success"
	Error        = "Error"
	Requeue      = "Requeue"
	RequeueAfter = "RequeueAfter"
)

// Sync is one sync of the key.
type Sync struct {
	Start           time.Time `json:"start"`
	DurationSeconds float64   `json:"durationSeconds"`
	// Result is Success, Error, Requeue (retried with backoff) or RequeueAfter.
	Result string `json:"result"`
	// Error is the error the sync returned, for Error.
	Error string `json:"error,omitempty"`
	// RequeueAfterSeconds is the delay asked for, for RequeueAfter.
	RequeueAfterSeconds float64 `json:"requeueAfterSeconds,omitempty"`
}

// Expectations are the creations and deletions a controller waits to observe for an owner.
type Expectations struct {
	Creations int       `json:"creations"`
	Deletions int       `json:"deletions"`
	Since     time.Time `json:"since"`
}

// Stale is a stale-cache wait: the controller wrote Kind at resourceVersion Written and its
// cache shows Seen.
type Stale struct {
	Resource string    `json:"resource"`
	Written  string    `json:"written"`
	Seen     string    `json:"seen"`
	Since    time.Time `json:"since"`
}

// Convergence is an object's convergence by the controller's own rule.
type Convergence struct {
	Converged bool `json:"converged"`
	// Rule says in words what converged means for this controller.
	Rule string `json:"rule"`
	// Since is when the object was first seen not converged after its last change (when
	// not converged).
	Since *time.Time `json:"since,omitempty"`
	// LastSeconds is how long the object took to converge the last time it did.
	LastSeconds *float64 `json:"lastSeconds,omitempty"`
}
