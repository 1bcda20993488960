package podcertificaterequestcleaner_test

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/podcertificaterequestcleaner"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

var (
	env *testenv.Env
	// clk is the cleaner's clock: the real time moved on by an offset the specs set, since
	// the API server sets creationTimestamp itself.
	clk = &offsetClock{}
	rec *recorder
)

func TestPodCertificateRequestCleaner(t *testing.T) {
	testenv.RunSuite(t, "podcertificaterequest-cleaner-controller suite")
}

var _ = BeforeSuite(func() {
	env = testenv.MustStartAPIServer()
	Expect(env.StartManagerWith([]string{podcertificaterequestcleaner.ControllerName}, nil,
		setup.OverrideFor(podcertificaterequestcleaner.ControllerName, func(r *podcertificaterequestcleaner.Reconciler) {
			r.Clock = clk
			rec = &recorder{Client: r.Client, read: map[string]string{}, deleted: map[string][]string{}}
			r.Client = rec
		}))).To(Succeed())
})

type offsetClock struct{ offset atomic.Int64 }

func (c *offsetClock) Now() time.Time                  { return time.Now().Add(time.Duration(c.offset.Load())) }
func (c *offsetClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }
func (c *offsetClock) set(d time.Duration)             { c.offset.Store(int64(d)) }

// recorder notes, per request, the resourceVersion each sync read and the versions of the
// requests deleted: which version a deletion was decided on.
type recorder struct {
	client.Client
	mu      sync.Mutex
	read    map[string]string
	deleted map[string][]string
}

func (r *recorder) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Client.Get(ctx, key, obj, opts...)
	if err == nil {
		r.mu.Lock()
		r.read[key.Name] = obj.GetResourceVersion()
		r.mu.Unlock()
	}
	return err
}

func (r *recorder) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	r.mu.Lock()
	r.deleted[obj.GetName()] = append(r.deleted[obj.GetName()], obj.GetResourceVersion())
	r.mu.Unlock()
	return r.Client.Delete(ctx, obj, opts...)
}

func (r *recorder) lastRead(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read[name]
}

func (r *recorder) deletions(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.deleted[name]...)
}
