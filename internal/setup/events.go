package setup

import (
	"context"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/record"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/recorder"
)

// Recorder returns the controller's EventRecorder. Events are written as upstream's
// controllers write them: core/v1 Events whose source.component (and reportingController)
// is source — upstream's event source of the controller, not always its name
// ("node-controller", "controllermanager", "persistentvolume-controller") — created with
// the controller's own identity and token bucket (RESTConfig), through client-go's event
// broadcaster and its correlator, which aggregates similar Events and drops an object's
// Events beyond a burst of 25 (one more every 5 minutes), so that churn cannot flood the
// API server. Events are also logged at -v=3, as upstream's.
//
// The returned recorder has controller-runtime's interface (events.k8s.io's Eventf), which
// kcm's controllers are written against; action and related, which core/v1 Events written
// by upstream's recorders never carry, are dropped.
func (c *Context) Recorder(source string) recorder.EventRecorder {
	log := ctrl.Log.WithName("events").WithValues("controller", c.Controller.Name)
	cfg, err := c.connection()
	if err != nil {
		// Setup has usually built the controller's clients already, and failed then; if not,
		// Events still reach the API server with kcm's identity rather than being lost.
		log.Error(err, "Events are written with kcm's own identity: the controller's credentials are unavailable")
		cfg = c.Config
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		log.Error(err, "Events of this controller are only logged")
	}
	var sink corev1client.EventInterface
	if cs != nil {
		sink = cs.CoreV1().Events("")
	}
	b, rec := newRecorder(sink, c.Manager.GetScheme(), source)
	if err := c.Manager.Add(broadcasterShutdown{b}); err != nil {
		log.Error(err, "the event broadcaster will not be shut down with the manager")
	}
	return rec
}

// newRecorder starts a broadcaster writing to sink (nil: logging only) and returns it with
// a recorder reporting as source.
func newRecorder(sink corev1client.EventInterface, scheme *runtime.Scheme, source string) (record.EventBroadcaster, recorder.EventRecorder) {
	b := record.NewBroadcaster()
	b.StartStructuredLogging(3)
	if sink != nil {
		b.StartRecordingToSink(&corev1client.EventSinkImpl{Interface: sink})
	}
	return b, coreRecorder{b.NewRecorder(scheme, corev1.EventSource{Component: source})}
}

// broadcasterShutdown flushes and stops an event broadcaster when the manager stops,
// leader or not (a standby's controllers record nothing, but the broadcaster exists).
type broadcasterShutdown struct{ b record.EventBroadcaster }

func (s broadcasterShutdown) Start(ctx context.Context) error {
	<-ctx.Done()
	s.b.Shutdown()
	return nil
}

func (broadcasterShutdown) NeedLeaderElection() bool { return false }

var _ manager.LeaderElectionRunnable = broadcasterShutdown{}

// coreRecorder gives a core/v1 recorder controller-runtime's EventRecorder interface.
type coreRecorder struct{ rec record.EventRecorder }

func (r coreRecorder) Eventf(regarding, _ runtime.Object, eventtype, reason, _, note string, args ...any) {
	if len(args) == 0 {
		// A note is a message, not a format: a '%' in a name must stay as it is.
		r.rec.Event(regarding, eventtype, reason, note)
		return
	}
	r.rec.Eventf(regarding, eventtype, reason, note, args...)
}

func (r coreRecorder) AnnotatedEventf(regarding, _ runtime.Object, annotations map[string]string, eventtype, reason, _, note string, args ...any) {
	r.rec.AnnotatedEventf(regarding, annotations, eventtype, reason, note, args...)
}
