package track

import (
	"context"

	"github.com/go-logr/logr"
	"k8s.io/apimachinery/pkg/types"
)

// Logger wraps the manager's logger (manager.Options.Logger) so that its sink knows which
// controller and key a logger, and so a sync's context, belongs to. It is the one hook that
// reaches every sync of every controller with no change to them: controller-runtime's builder
// derives each controller's logger from the manager's with WithValues("controller", name,
// "controllerGroup", group, "controllerKind", kind), then each request's with
// WithValues(kind, ref, "namespace", ns, "name", name) and WithValues("reconcileID", id); it
// puts that logger in the context Reconcile gets, and logs a sync's error on it as
// "Reconciler error". So the sink records that error in the key's current sync, and the
// controller's client (Client) and token bucket (RateLimiter) find the key from their
// context (keyOf).
//
// The key is fixed at "reconcileID", which controller-runtime adds right after the request's
// namespace and name: a reconciler's own WithValues("name", ...) later does not change it.
// Loggers derived from it only copy the sink (a few words), once per reconcile.
func Logger(l logr.Logger) logr.Logger {
	if l.GetSink() == nil {
		return l
	}
	// Through WithValues: controller-runtime's delegating root sink (ctrl.Log) cannot be told
	// of the frame this sink adds, the sink it derives once the logger is set (klog's) can.
	return l.WithSink(wrap(&sink{}, l.GetSink().WithValues()))
}

type sink struct {
	inner logr.LogSink
	// depth: inner was told of the frame this sink adds.
	depth bool

	c           *Controller
	kind, group string
	ns, name    string
	key         types.NamespacedName
	keyed       bool
}

// reconcilerError is the message controller-runtime logs a sync's error with.
const reconcilerError = "Reconciler error"

// wrap returns a copy of s around inner, telling inner (once) of the frame the sink adds so
// that the log line's caller stays the caller's.
func wrap(s *sink, inner logr.LogSink) *sink {
	n := *s
	n.inner = inner
	if !n.depth {
		if cd, ok := inner.(logr.CallDepthLogSink); ok {
			n.inner, n.depth = cd.WithCallDepth(1), true
		}
	}
	return &n
}

func (s *sink) Init(info logr.RuntimeInfo) {
	if !s.depth {
		info.CallDepth++
	}
	s.inner.Init(info)
}

func (s *sink) Enabled(level int) bool { return s.inner.Enabled(level) }

func (s *sink) Info(level int, msg string, kv ...any) { s.inner.Info(level, msg, kv...) }

func (s *sink) Error(err error, msg string, kv ...any) {
	if msg == reconcilerError && s.keyed && err != nil {
		s.c.syncErrorOf(s.key, err)
	}
	s.inner.Error(err, msg, kv...)
}

func (s *sink) WithName(name string) logr.LogSink { return wrap(s, s.inner.WithName(name)) }

func (s *sink) WithValues(kv ...any) logr.LogSink {
	n := wrap(s, s.inner.WithValues(kv...))
	for i := 0; i+1 < len(kv); i += 2 {
		k, _ := kv[i].(string)
		switch k {
		case "controller":
			if name, ok := kv[i+1].(string); ok {
				n.c, n.keyed = For(name), false
			}
		case "controllerKind":
			n.kind, _ = kv[i+1].(string)
		case "controllerGroup":
			n.group, _ = kv[i+1].(string)
		case "namespace":
			if !n.keyed {
				n.ns, _ = kv[i+1].(string)
			}
		case "name":
			if !n.keyed {
				n.name, _ = kv[i+1].(string)
			}
		case "reconcileID":
			if n.c != nil && !n.keyed && n.name != "" {
				n.key, n.keyed = types.NamespacedName{Namespace: n.ns, Name: n.name}, true
			}
		}
	}
	return n
}

func (s *sink) WithCallDepth(depth int) logr.LogSink {
	if cd, ok := s.inner.(logr.CallDepthLogSink); ok {
		n := *s
		n.inner = cd.WithCallDepth(depth)
		return &n
	}
	return s
}

// keyOf is the controller and key of the sync ctx belongs to, from its logger.
func keyOf(ctx context.Context) (*sink, bool) {
	l, err := logr.FromContext(ctx)
	if err != nil {
		return nil, false
	}
	s, ok := l.GetSink().(*sink)
	if !ok || !s.keyed {
		return nil, false
	}
	return s, true
}
