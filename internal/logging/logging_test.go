package logging

import (
	"strings"
	"sync"
	"testing"

	logsapi "k8s.io/component-base/logs/api/v1"
	"k8s.io/klog/v2"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/kcm/kcm/internal/features"
)

// lockedBuffer is a log stream the test reads after the loggers wrote to it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return strings.Count(l.b.String(), `] "`+msg+`"`)
}

// A burst of identical messages, as a controller logs one per object when a thousand change
// at once, comes out whole: klog does not sample. (controller-runtime's zap logger, below -v=2,
// keeps the first 100 of a message per second and then one in a hundred: about 109 of 1,000.)
func TestEveryRepeatedMessageIsWritten(t *testing.T) {
	out := &lockedBuffer{}
	c := logsapi.NewLoggingConfiguration()
	c.Verbosity = 1
	if err := apply(c, &logsapi.LoggingOptions{ErrorStream: out, InfoStream: out}, features.New().Gate()); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = logsapi.ResetForTest(nil) })

	const n = 1000
	for i := range n {
		// As a controller logs, through controller-runtime's logger...
		ctrl.Log.WithName("test").Info("Same message", "i", i)
		ctrl.Log.V(1).Info("Same message at V(1)")
		ctrl.Log.V(2).Info("Same message at V(2)")
		// ... and as client-go logs, through klog.
		klog.Background().V(1).Info("Same klog message at V(1)")
		klog.InfoS("Same klog message")
	}
	klog.Flush()
	for msg, want := range map[string]int{
		"Same message": n, "Same message at V(1)": n, "Same klog message at V(1)": n, "Same klog message": n,
		// -v=1 applies: the witness that the counts above are of a filtered stream.
		"Same message at V(2)": 0,
	} {
		if got := out.count(msg); got != want {
			t.Errorf("%q written %d times, want %d", msg, got, want)
		}
	}
}
