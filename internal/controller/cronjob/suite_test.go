package cronjob_test

import (
	"sync"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"

	"github.com/kcm/kcm/internal/controller/cronjob"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	clk = &shiftedClock{}
)

func TestCronJobController(t *testing.T) {
	testenv.RunSuite(t, "cronjob-controller suite")
}

// shiftedClock is the real clock moved forward by an offset the specs increase: time passes
// as usual, so the controller's waits (RequeueAfter) are real, but a spec need not wait a
// minute for the next "* * * * *" run.
type shiftedClock struct {
	mu     sync.Mutex
	offset time.Duration
}

func (c *shiftedClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return time.Now().Add(c.offset)
}

func (c *shiftedClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// jumpTo moves the clock forward so that it reads t now.
func (c *shiftedClock) jumpTo(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	offset := time.Until(t)
	Expect(offset).To(BeNumerically(">=", c.offset), "the clock only moves forward")
	c.offset = offset
}

// BeforeSuite runs cronjob-controller through its own Setup, with the shifted clock.
var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{cronjob.ControllerName}, nil,
		setup.OverrideFor(cronjob.ControllerName, func(r *cronjob.Reconciler) { r.Clock = clk }))).To(Succeed())
})
