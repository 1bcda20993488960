package groups_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/groups"
	"github.com/kcm/kcm/internal/testenv"
)

// Short durations, as client-go allows (lease > renew deadline > 1.2 × retry): a lost Lease
// stops its term (renew deadline) well before another replica may take it (lease duration).
const (
	leaseDuration = 3 * time.Second
	renewDeadline = 1500 * time.Millisecond
	retryPeriod   = 250 * time.Millisecond
)

// terms records the terms the replicas' RunFuncs run: which replica is active for which group,
// and any two replicas active for one group at once.
type terms struct {
	mu       sync.Mutex
	active   map[string]string // group → the replica running it
	byID     map[string]int    // replica → terms running
	started  map[string]int    // group → terms started, all replicas
	overlaps []string
	// hold, when set for a replica, keeps its RunFuncs from returning until closed.
	hold map[string]chan struct{}
	// stopping: the replicas with a held RunFunc whose context is done.
	stopping map[string]bool
	// fail: the groups whose next term fails at once.
	fail   map[string]bool
	failed map[string]time.Time // group → when its failing term returned
	again  map[string]time.Time // group → when its next term started
}

func newTerms() *terms {
	return &terms{
		active: map[string]string{}, byID: map[string]int{}, started: map[string]int{},
		hold: map[string]chan struct{}{}, stopping: map[string]bool{},
		fail: map[string]bool{}, failed: map[string]time.Time{}, again: map[string]time.Time{},
	}
}

func (t *terms) run(id string) groups.RunFunc {
	return func(ctx context.Context, g groups.Group) error {
		t.mu.Lock()
		if other := t.active[g.Name]; other != "" {
			t.overlaps = append(t.overlaps, fmt.Sprintf("%s started %s while %s ran it", id, g.Name, other))
		}
		t.active[g.Name] = id
		t.byID[id]++
		t.started[g.Name]++
		if _, ok := t.failed[g.Name]; ok {
			if _, ok := t.again[g.Name]; !ok {
				t.again[g.Name] = time.Now()
			}
		}
		fail := t.fail[g.Name]
		delete(t.fail, g.Name)
		t.mu.Unlock()

		var err error
		if fail {
			err = errors.New("the controllers could not start")
		} else {
			<-ctx.Done()
			t.mu.Lock()
			hold := t.hold[id]
			if hold != nil {
				t.stopping[id] = true
			}
			t.mu.Unlock()
			if hold != nil {
				<-hold
			}
		}

		t.mu.Lock()
		defer t.mu.Unlock()
		if t.active[g.Name] == id {
			delete(t.active, g.Name)
		}
		t.byID[id]--
		if fail {
			t.failed[g.Name] = time.Now()
		}
		return err
	}
}

// leaders is which replica runs each group now.
func (t *terms) leaders() map[string]string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return cloneMap(t.active)
}

func cloneMap(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func (t *terms) running(id string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.byID[id]
}

func (t *terms) overlapping() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.overlaps)
}

// replica is one kcm replica's elections, run in this process.
type replica struct {
	id        string
	elections *groups.Elections
	cancel    context.CancelFunc
	done      chan struct{}
	// runningAtReturn: the terms still running when Run returned (must be none).
	runningAtReturn atomic.Int32
	// cut makes every request of the replica fail, as if it were cut off or dead.
	cut *atomic.Bool
}

func groupsNamed(names ...string) []groups.Group {
	var out []groups.Group
	for _, n := range names {
		out = append(out, groups.Group{Name: n, Controllers: []string{n + "-controller", n + "-other-controller"}})
	}
	return out
}

var errCut = errors.New("test: this replica is cut off from the API server")

type cutTransport struct {
	next http.RoundTripper
	cut  *atomic.Bool
}

func (c cutTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if c.cut.Load() {
		return nil, errCut
	}
	return c.next.RoundTrip(r)
}

func startReplica(ns, id string, gs []groups.Group, t *terms, adjust ...func(*groups.Config, kubernetes.Interface)) *replica {
	GinkgoHelper()
	return startReplicaAs(env.Config, ns, id, gs, t, adjust...)
}

// startReplicaAs starts a replica whose requests authenticate as base does.
func startReplicaAs(base *rest.Config, ns, id string, gs []groups.Group, t *terms, adjust ...func(*groups.Config, kubernetes.Interface)) *replica {
	GinkgoHelper()
	r := &replica{id: id, done: make(chan struct{}), cut: &atomic.Bool{}}
	cfg := rest.CopyConfig(base)
	// Leader election's connection is not throttled by the client (kcm gives it its own).
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return cutTransport{next: rt, cut: r.cut} })
	cs, err := kubernetes.NewForConfig(cfg)
	Expect(err).NotTo(HaveOccurred())
	gc := groups.Config{
		Client: cs, Namespace: ns, Name: "kcm", Identity: id,
		LeaseDuration: leaseDuration, RenewDeadline: renewDeadline, RetryPeriod: retryPeriod,
		Groups: gs, Run: t.run(id),
	}
	for _, a := range adjust {
		a(&gc, cs)
	}
	r.elections, err = groups.New(gc)
	Expect(err).NotTo(HaveOccurred())
	ctx, cancel := context.WithCancel(log.IntoContext(context.Background(), GinkgoLogr.WithValues("replica", id)))
	r.cancel = cancel
	go func() {
		defer GinkgoRecover()
		defer close(r.done)
		Expect(r.elections.Run(ctx)).To(Succeed())
		r.runningAtReturn.Store(int32(t.running(id)))
	}()
	DeferCleanup(func() {
		cancel()
		Eventually(r.done).Should(BeClosed())
	})
	return r
}

// stop stops the replica gracefully and waits for Run to return.
func (r *replica) stop() {
	GinkgoHelper()
	r.cancel()
	Eventually(r.done).Should(BeClosed(), "Run of %s did not return", r.id)
	Expect(r.runningAtReturn.Load()).To(BeZero(), "Run of %s returned while RunFuncs still ran", r.id)
}

// split checks that every group is run by exactly one replica, each replica running as many
// as want says, and that each runs what its Lease and its Leading say.
func split(t *terms, want map[*replica]int, all []groups.Group) func(g Gomega) {
	return func(g Gomega) {
		leaders := t.leaders()
		g.Expect(leaders).To(HaveLen(len(all)), "groups run: %v", leaders)
		count := map[string]int{}
		for _, id := range leaders {
			count[id]++
		}
		for r, n := range want {
			g.Expect(count[r.id]).To(Equal(n), "%s runs %d groups, want %d: %v", r.id, count[r.id], n, leaders)
			var mine []string
			for grp, id := range leaders {
				if id == r.id {
					mine = append(mine, grp)
				}
			}
			slices.Sort(mine)
			g.Expect(r.elections.Leading()).To(Equal(mine), "%s's Leading", r.id)
		}
	}
}

func lease(ctx context.Context, ns, name string) func(g Gomega) *coordinationv1.Lease {
	return func(g Gomega) *coordinationv1.Lease {
		l := &coordinationv1.Lease{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, l)).To(Succeed())
		return l
	}
}

func holder(l *coordinationv1.Lease) string {
	if l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

var _ = Describe("Elections", func() {
	var t *terms
	BeforeEach(func() {
		t = newTerms()
		DeferCleanup(func() {
			Expect(t.overlapping()).To(BeEmpty(), "two replicas ran one group at once")
		})
	})

	It("splits six groups over three replicas, two each, and hands a stopped replica's groups over", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "split")
		all := groupsNamed("a", "b", "c", "d", "e", "f")
		a, b, c := startReplica(ns, "host-a_1", all, t), startReplica(ns, "host-b_2", all, t), startReplica(ns, "host-c_3", all, t)
		Eventually(split(t, map[*replica]int{a: 2, b: 2, c: 2}, all)).Should(Succeed())

		By("each group's Lease is held by the replica running it, labelled and annotated with its controllers")
		leaders := t.leaders()
		for _, g := range all {
			l := lease(ctx, ns, "kcm-"+g.Name)(Default)
			Expect(holder(l)).To(Equal(leaders[g.Name]))
			Expect(l.Labels).To(HaveKeyWithValue(groups.GroupLabel, "kcm"))
			Expect(l.Annotations).To(HaveKeyWithValue(groups.ControllersAnnotation, g.Name+"-controller,"+g.Name+"-other-controller"))
		}
		By("each replica holds a candidate Lease")
		for _, r := range []*replica{a, b, c} {
			l := lease(ctx, ns, groups.CandidateLeaseName("kcm", r.id))(Default)
			Expect(holder(l)).To(Equal(r.id))
			Expect(l.Labels).To(HaveKeyWithValue(groups.CandidateLabel, "kcm"))
		}

		By("stopping one replica gracefully: its terms end before Run returns, its Leases are released, the others take its groups")
		var cGroups []string
		for g, id := range leaders {
			if id == c.id {
				cGroups = append(cGroups, g)
			}
		}
		c.stop()
		for _, g := range cGroups {
			l := lease(ctx, ns, "kcm-"+g)(Default)
			// Released (empty holder) or already taken by another: never still c's.
			Expect(holder(l)).NotTo(Equal(c.id), "Lease kcm-%s after c stopped", g)
		}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: groups.CandidateLeaseName("kcm", c.id)}, &coordinationv1.Lease{})).
			To(Satisfy(apierrors.IsNotFound), "c's candidate Lease after it stopped")
		Eventually(split(t, map[*replica]int{a: 3, b: 3}, all)).Should(Succeed())
	})

	It("gives a replica added later its share: the others let their extra groups go, or donate one", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "join")
		all := groupsNamed("a", "b", "c", "d", "e", "f")
		a, b := startReplica(ns, "host-a_1", all, t), startReplica(ns, "host-b_2", all, t)
		Eventually(split(t, map[*replica]int{a: 3, b: 3}, all)).Should(Succeed())
		c := startReplica(ns, "host-c_3", all, t)
		Eventually(split(t, map[*replica]int{a: 2, b: 2, c: 2}, all)).Should(Succeed())

		By("a fourth replica: every share is still two, but the others donate so that it leads one")
		d := startReplica(ns, "host-d_4", all, t)
		Eventually(func(g Gomega) {
			g.Expect(t.leaders()).To(HaveLen(len(all)))
			var counts []int
			for _, r := range []*replica{a, b, c, d} {
				counts = append(counts, len(r.elections.Leading()))
			}
			g.Expect(counts).To(ConsistOf(2, 2, 1, 1), "groups led by a, b, c, d")
			g.Expect(counts[3]).To(Equal(1), "d, the replica that joined, leads one")
		}).Should(Succeed())
	})

	It("keeps a group's Lease while its RunFunc is slow to stop, and hands it over once it returns", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "slow")
		// Three groups over two replicas: one leads two, the other one and would take a second.
		all := groupsNamed("a", "b", "c")
		r1, r2 := startReplica(ns, "host-a_1", all, t), startReplica(ns, "host-b_2", all, t)
		var slow, other *replica
		Eventually(func(g Gomega) {
			n1, n2 := len(r1.elections.Leading()), len(r2.elections.Leading())
			g.Expect([]int{n1, n2}).To(ConsistOf(2, 1))
			slow, other = r1, r2
			if n2 == 2 {
				slow, other = r2, r1
			}
			split(t, map[*replica]int{slow: 2, other: 1}, all)(g)
		}).Should(Succeed())
		slowGroups := slow.elections.Leading()

		hold := make(chan struct{})
		t.mu.Lock()
		t.hold[slow.id] = hold
		t.mu.Unlock()
		slow.cancel()
		Eventually(func() bool { t.mu.Lock(); defer t.mu.Unlock(); return t.stopping[slow.id] }).Should(BeTrue())
		By("for twice the lease duration, the stopping replica's Leases stay its own and the other, below its share, runs none of them")
		Consistently(func(g Gomega) {
			for _, grp := range slowGroups {
				g.Expect(holder(lease(ctx, ns, "kcm-"+grp)(g))).To(Equal(slow.id), "Lease kcm-%s while its RunFunc stops", grp)
			}
			g.Expect(other.elections.Leading()).To(HaveLen(1))
			g.Expect(slow.done).NotTo(BeClosed(), "Run returned before its RunFuncs")
		}).WithTimeout(2 * leaseDuration).Should(Succeed())

		close(hold)
		slow.stop()
		Eventually(split(t, map[*replica]int{other: 3}, all)).Should(Succeed())
	})

	It("lets a replica cut off from the API server lose its groups to the others, and take its share again when it is back", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "crash")
		all := groupsNamed("a", "b", "c", "d", "e", "f")
		a, b, c := startReplica(ns, "host-a_1", all, t), startReplica(ns, "host-b_2", all, t), startReplica(ns, "host-c_3", all, t)
		Eventually(split(t, map[*replica]int{a: 2, b: 2, c: 2}, all)).Should(Succeed())

		By("cutting c off: its renewals fail, its terms end, it releases nothing; the others take over once its Leases expire")
		c.cut.Store(true)
		Eventually(split(t, map[*replica]int{a: 3, b: 3}, all)).Should(Succeed())
		Expect(c.done).NotTo(BeClosed(), "a replica that lost its Leases stays a candidate: Run goes on")
		Expect(c.elections.Leading()).To(BeEmpty())

		By("c back: it renews its candidate Lease, the others let their extras go, c takes its share")
		c.cut.Store(false)
		Eventually(split(t, map[*replica]int{a: 2, b: 2, c: 2}, all)).Should(Succeed())
	})

	It("does not take a free group at its share, and takes it once its share grows", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "share")
		// Another live replica, as its candidate Lease says, which runs no elections: the share
		// of the one replica running is 2 of 4, and nobody else takes the other two.
		now := metav1.NewMicroTime(time.Now())
		ghost := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groups.CandidateLeaseName("kcm", "ghost"), Labels: map[string]string{groups.CandidateLabel: "kcm"}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("ghost"), LeaseDurationSeconds: ptr.To[int32](3600), RenewTime: &now, AcquireTime: &now},
		}
		Expect(env.Client.Create(ctx, ghost)).To(Succeed())
		all := groupsNamed("a", "b", "c", "d")
		a := startReplica(ns, "host-a_1", all, t)
		Eventually(a.elections.Leading).Should(HaveLen(2))
		Consistently(func(g Gomega) {
			g.Expect(a.elections.Leading()).To(HaveLen(2))
			t.mu.Lock()
			defer t.mu.Unlock()
			started := 0
			for _, n := range t.started {
				started += n
			}
			g.Expect(started).To(Equal(2), "terms started: a took a group beyond its share and let it go again")
		}).WithTimeout(2 * leaseDuration).Should(Succeed())

		By("the other replica gone: the share is all four")
		Expect(env.Client.Delete(ctx, ghost)).To(Succeed())
		Eventually(split(t, map[*replica]int{a: 4}, all)).Should(Succeed())
	})

	It("records upstream's leader-election Events on each group Lease", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "events")
		all := groupsNamed("a", "b")
		a := startReplica(ns, "host-a_1", all, t, func(c *groups.Config, cs kubernetes.Interface) {
			b := record.NewBroadcaster(record.WithContext(ctx))
			DeferCleanup(b.Shutdown)
			b.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: cs.CoreV1().Events("")})
			c.EventRecorder = b.NewRecorder(clientgoscheme.Scheme, corev1.EventSource{Component: "kube-controller-manager"})
		})
		Eventually(split(t, map[*replica]int{a: 2}, all)).Should(Succeed())
		for _, g := range all {
			testenv.ExpectEvent(ctx, env.Client, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "kcm-" + g.Name}},
				testenv.Event{Type: corev1.EventTypeNormal, Reason: "LeaderElection", Message: "host-a_1 became leader", Source: "kube-controller-manager"})
		}
	})

	It("needs no more than kubeadm's kube-controller-manager user and the controller-groups component's Role", func(ctx SpecContext) {
		By("applying config/controller-groups/role.yaml as shipped")
		root, err := testenv.RepoRoot()
		Expect(err).NotTo(HaveOccurred())
		raw, err := os.ReadFile(filepath.Join(root, "config", "controller-groups", "role.yaml"))
		Expect(err).NotTo(HaveOccurred())
		for _, doc := range strings.Split(string(raw), "\n---\n") {
			u := &unstructured.Unstructured{}
			Expect(yaml.Unmarshal([]byte(doc), &u.Object)).To(Succeed())
			if len(u.Object) == 0 {
				continue
			}
			if err := env.Client.Create(ctx, u); !apierrors.IsAlreadyExists(err) {
				Expect(err).NotTo(HaveOccurred())
			}
		}
		kubeadm, err := env.KubeadmConfig()
		Expect(err).NotTo(HaveOccurred())

		// The Role covers kube-system only; a resource name of this spec's own keeps its Leases
		// apart from anything else there.
		const ns, name = "kube-system", "kcm-rbac"
		By("a candidate Lease a replica gone long ago left behind")
		old := metav1.NewMicroTime(time.Now().Add(-time.Hour))
		gone := &coordinationv1.Lease{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: groups.CandidateLeaseName(name, "gone"), Labels: map[string]string{groups.CandidateLabel: name}},
			Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("gone"), LeaseDurationSeconds: ptr.To[int32](3), RenewTime: &old, AcquireTime: &old},
		}
		Expect(env.Client.Create(ctx, gone)).To(Succeed())

		all := groupsNamed("x", "y")
		a := startReplicaAs(kubeadm, ns, "host-a_1", all, t, func(c *groups.Config, _ kubernetes.Interface) { c.Name = name })
		Eventually(split(t, map[*replica]int{a: 2}, all)).Should(Succeed())
		for _, g := range all {
			Expect(holder(lease(ctx, ns, name+"-"+g.Name)(Default))).To(Equal(a.id))
		}
		Eventually(func() error {
			return env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: gone.Name}, &coordinationv1.Lease{})
		}).Should(Satisfy(apierrors.IsNotFound), "the stale candidate Lease is deleted")

		By("a graceful stop releases the group Leases and deletes the candidate Lease")
		a.stop()
		for _, g := range all {
			Expect(holder(lease(ctx, ns, name+"-"+g.Name)(Default))).To(BeEmpty(), "Lease %s-%s after the stop", name, g.Name)
		}
		Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: groups.CandidateLeaseName(name, a.id)}, &coordinationv1.Lease{})).
			To(Satisfy(apierrors.IsNotFound))
	})

	It("lets a group whose term fails go, and is a candidate for it again after a retry period", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "fail")
		all := groupsNamed("a", "b")
		t.mu.Lock()
		t.fail["b"] = true
		t.mu.Unlock()
		a := startReplica(ns, "host-a_1", all, t)
		Eventually(split(t, map[*replica]int{a: 2}, all)).Should(Succeed())
		t.mu.Lock()
		failed, again, started := t.failed["b"], t.again["b"], t.started["b"]
		t.mu.Unlock()
		Expect(failed).NotTo(BeZero(), "b's first term did not fail")
		Expect(started).To(Equal(2), "b's terms: the failed one and the one running")
		Expect(again.Sub(failed)).To(BeNumerically(">=", retryPeriod), "b was elected again without waiting a retry period")
	})
})
