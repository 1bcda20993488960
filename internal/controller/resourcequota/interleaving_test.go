package resourcequota_test

import (
	"context"
	"sync"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/controller/resourcequota"
	"github.com/kcm/kcm/internal/setup"
)

// These specs provoke, deterministically, the interleavings of a quota's sync with the
// events and caches it depends on: each stands in for a lag a loaded machine produces now
// and then.
var _ = Describe("resourcequota-controller under interleavings", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "rqi") })

	It("counts a new quota in its own resourcequotas usage while the other caches have not seen it", func() {
		// Another quota has the controller watch resourcequotas already.
		create(ctx, newQuota(env.Namespace(ctx, "rqi"), "first", rl("resourcequotas", "3")))
		lag := &lagging{hidden: map[string]bool{"self": true}}
		restartManagerWith(setup.OverrideFor[resourcequota.Reconciler](resourcequota.ControllerName, func(r *resourcequota.Reconciler) {
			lag.Cache = r.Counts
			r.Counts = lag
		}))
		rq := newQuota(ns, "self", rl("resourcequotas", "3", "count/resourcequotas", "3"))
		create(ctx, rq)
		Eventually(func(g Gomega) {
			g.Expect(used(ctx, g, rq)).To(HaveKey(corev1.ResourceQuotas))
		}).Should(Succeed())
		// The count cache delivers the quota now; nothing else happens in the namespace.
		lag.show("self")
		expectUsed(ctx, rq, "resourcequotas", "1", "count/resourcequotas", "1")

		// Other quotas come and go: counted from the same cache, and recounted on deletion.
		second := newQuota(ns, "second", rl("pods", "1"))
		create(ctx, second)
		expectUsed(ctx, rq, "resourcequotas", "2", "count/resourcequotas", "2")
		Expect(env.Client.Delete(ctx, second)).To(Succeed())
		expectUsed(ctx, rq, "resourcequotas", "1", "count/resourcequotas", "1")
	})

	It("charges a pod admitted uncharged while the quota's first status was being written", func() {
		// Between the first count and its write, admission sees no status.hard and charges
		// nothing: a creation there (or while admission's own cache lags the write) is
		// charged by no one but the controller.
		inWindow, release := make(chan struct{}), make(chan struct{})
		var once sync.Once
		restartManagerWith(setup.OverrideFor[resourcequota.Reconciler](resourcequota.ControllerName, func(r *resourcequota.Reconciler) {
			resourcequota.SetBeforeWrite(r, func(_ context.Context, rq *corev1.ResourceQuota) {
				if rq.Namespace != ns || rq.Name != "late" {
					return
				}
				once.Do(func() {
					close(inWindow)
					<-release
				})
			})
		}))
		create(ctx, newPod(ns, "before", ""))
		rq := newQuota(ns, "late", rl("pods", "5"))
		create(ctx, rq)
		Eventually(inWindow).Should(BeClosed())
		create(ctx, newPod(ns, "uncharged", ""))
		Expect(used(ctx, Default, rq)).To(BeEmpty(), "the quota had status before the pod was created: the window was missed")
		close(release)
		expectUsed(ctx, rq, "pods", "2")
		settle(ctx, rq, "pods", "2")
	})

	It("recounts from its own last write while the cache still shows the version that write replaced", func() {
		stale := &staleReads{}
		restartManagerWith(setup.OverrideFor[resourcequota.Reconciler](resourcequota.ControllerName, func(r *resourcequota.Reconciler) {
			stale.Client = r.Client
			r.Client = stale
		}))
		rq := newQuota(ns, "stale", rl("pods", "5"))
		create(ctx, rq)
		expectUsed(ctx, rq, "pods", "0")
		create(ctx, newPod(ns, "a", ""))
		create(ctx, newPod(ns, "b", ""))
		// Bound to a node that does not exist, a deleted pod stays, charged, for its grace.
		d := newPod(ns, "d", "")
		d.Spec.NodeName = "kcm-test-no-such-node"
		d.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
		create(ctx, d)
		expectUsed(ctx, rq, "pods", "3")
		settle(ctx, rq, "pods", "3")

		// From now on the controller's cache shows the quota as it is now (pods 3), and its
		// next pod list lacks b: the recount that d's deletion brings writes pods 2, and the
		// recount after it reads the version that write replaced, whose pods 3 equal the
		// true count.
		cur := &corev1.ResourceQuota{}
		Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rq), cur)).To(Succeed())
		stale.freeze(cur, "b")
		Expect(env.Client.Delete(ctx, d)).To(Succeed())
		Eventually(stale.hid).Should(BeTrue())
		// The undercount written (witness of the interleaving), then corrected by the
		// recheck that a lowered usage brings.
		expectUsed(ctx, rq, "pods", "2")
		expectUsed(ctx, rq, "pods", "3")
		settle(ctx, rq, "pods", "3")
	})
})

// restartManagerWith restarts the manager with overrides, and the default manager after
// the spec.
func restartManagerWith(overrides ...setup.Override) {
	GinkgoHelper()
	DeferCleanup(func() { restartManager() })
	Expect(env.StopManager()).To(Succeed())
	Expect(env.StartManagerWith([]string{resourcequota.ControllerName}, nil, overrides...)).To(Succeed())
}

// lagging is a count cache that has not delivered some quotas yet.
type lagging struct {
	cache.Cache
	mu     sync.Mutex
	hidden map[string]bool
}

func (l *lagging) show(name string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	delete(l.hidden, name)
}

func (l *lagging) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := l.Cache.List(ctx, list, opts...); err != nil {
		return err
	}
	meta, ok := list.(*metav1.PartialObjectMetadataList)
	if !ok || meta.GetObjectKind().GroupVersionKind().Kind != "ResourceQuotaList" {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	kept := meta.Items[:0]
	for _, item := range meta.Items {
		if !l.hidden[item.Name] {
			kept = append(kept, item)
		}
	}
	meta.Items = kept
	return nil
}

// staleReads is a cache that, once frozen, keeps showing a quota as it was, and misses a
// pod in its next pod list.
type staleReads struct {
	client.Client
	mu        sync.Mutex
	quota     *corev1.ResourceQuota
	hide      string
	hidDone   bool
	hideArmed bool
}

func (s *staleReads) freeze(rq *corev1.ResourceQuota, hidePod string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.quota, s.hide, s.hideArmed = rq.DeepCopy(), hidePod, true
}

func (s *staleReads) hid() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hidDone
}

func (s *staleReads) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	s.mu.Lock()
	frozen := s.quota
	s.mu.Unlock()
	if rq, ok := obj.(*corev1.ResourceQuota); ok && frozen != nil && key == client.ObjectKeyFromObject(frozen) {
		frozen.DeepCopyInto(rq)
		return nil
	}
	return s.Client.Get(ctx, key, obj, opts...)
}

func (s *staleReads) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	if err := s.Client.List(ctx, list, opts...); err != nil {
		return err
	}
	pods, ok := list.(*corev1.PodList)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.hideArmed {
		return nil
	}
	kept := pods.Items[:0]
	for _, p := range pods.Items {
		if p.Name == s.hide && p.Namespace == s.quota.Namespace {
			s.hideArmed, s.hidDone = false, true
			continue
		}
		kept = append(kept, p)
	}
	pods.Items = kept
	return nil
}
