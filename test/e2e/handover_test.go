//go:build e2e && linux

package e2e_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/cluster"
)

// Upstream's defaults, which kubeadm does not change and both managers use; client-go's
// candidates retry every retryPeriod to retryPeriod*(1+1.2) (its jitter).
const (
	leaseName     = "kube-controller-manager"
	leaseDuration = 15 * time.Second
	retryPeriod   = 2 * time.Second
	maxRetryGap   = retryPeriod * 22 / 10
)

// An operator replaces upstream kube-controller-manager with kcm on a running cluster, in the
// order the README gives: kcm stands by on upstream's Lease, then upstream is stopped; and rolls
// back the same way, upstream standing by on kcm's Lease. Both specs reuse the suite's cluster
// and leave a kcm leading it for the specs after them.
var _ = Describe("Hand-over between upstream kube-controller-manager and kcm", Serial, func() {
	It("upstream -> kcm: kcm stands by on the Lease, takes over within the lease duration once upstream stops, and finishes a rolling update in flight with no pod over maxSurge and no duplicate", func(ctx SpecContext) {
		// Whatever happens here, the specs after this one need a kcm leading the cluster.
		DeferCleanup(func() {
			if kcm.Exited() {
				replaceKCM(startKCM())
			}
		})

		By("stopping the suite's kcm: it releases the Lease")
		suiteKCMHolder := leaseHolder(ctx, leaseName)
		Expect(suiteKCMHolder).NotTo(BeEmpty(), "the suite's kcm leads")
		kcmManager().stop(kcm)

		By("upstream kube-controller-manager starts as kubeadm starts it and takes the Lease")
		upstream := upstreamManager()
		leader := upstream.start()
		var upstreamHolder string
		Eventually(ctx, func(g Gomega) {
			g.Expect(leader.Exited()).To(BeFalse(), "%s", leader.State())
			upstreamHolder = leaseHolder(ctx, leaseName)
			g.Expect(upstreamHolder).NotTo(BeEmpty())
			g.Expect(upstreamHolder).NotTo(Equal(suiteKCMHolder))
		}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "upstream took no Lease; %s", leader.State())
		lease := getLease(ctx, leaseName)
		Expect(lease.Spec.LeaseDurationSeconds).To(HaveValue(BeEquivalentTo(leaseDuration/time.Second)), "upstream's default --leader-elect-lease-duration")

		handOverMidRollout(ctx, upstream, leader, upstreamHolder, kcmManager())
	}, SpecTimeout(5*time.Minute))

	It("kcm -> upstream: upstream stands by on kcm's Lease, takes it at once when kcm stops (kcm releases it), and finishes kcm's rolling update with kcm's ReplicaSets, no pod over maxSurge and no duplicate", func(ctx SpecContext) {
		// Upstream is stopped first (its DeferCleanup runs before this one); the kcm started
		// then waits for upstream's Lease to expire, and leads before the next spec.
		DeferCleanup(func(ctx SpecContext) {
			if !kcm.Exited() {
				return
			}
			logStart := logSize(filepath.Join(local.Dir, kcmManager().name+".log"))
			p := startKCM()
			replaceKCM(p)
			Eventually(func() string { return logSince(p.LogPath, logStart) }).WithContext(ctx).
				WithTimeout(leaseDuration+4*maxRetryGap+10*time.Second).WithPolling(200*time.Millisecond).
				Should(ContainSubstring("Successfully acquired lease"), "the restarted kcm does not lead; %s", p.State())
		}, NodeTimeout(2*time.Minute))

		holder := leaseHolder(ctx, leaseName)
		Expect(holder).NotTo(BeEmpty(), "the suite's kcm leads")
		Expect(kcm.Exited()).To(BeFalse(), "%s", kcm.State())
		handOverMidRollout(ctx, kcmManager(), kcm, holder, upstreamManager())
	}, SpecTimeout(5*time.Minute))
})

// manager is one of the two kube-controller-managers, as a hand-over starts and stops it.
type manager struct {
	// name is the process's and its log's, <local.Dir>/<name>.log.
	name string
	// start starts it as kubeadm does, as a candidate for the Lease.
	start func() *cluster.Process
	// stop sends it SIGTERM, as the kubelet does to a static pod whose manifest was moved away
	// or to a Deployment's pod scaled away.
	stop func(*cluster.Process)
	// releases reports whether it gives the Lease up when it stops.
	releases bool
	// running is a log line it writes only once it leads and its Deployment controller runs.
	running string
}

// kcmManager is kcm, started as the suite's kcm. It releases the Lease when it stops
// (controller-runtime's LeaderElectionReleaseOnCancel).
func kcmManager() manager {
	return manager{
		name: "kcm",
		start: func() *cluster.Process {
			p := startKCM()
			replaceKCM(p)
			return p
		},
		stop: func(p *cluster.Process) {
			components = without(components, p)
			p.Stop(30 * time.Second)
		},
		releases: true,
		running:  "Starting workers",
	}
}

// upstreamManager is kube-controller-manager v1.37.1, stopped when the spec ends. It does not
// release the Lease on exit: without the alpha gate ControllerManagerReleaseLeaderElectionLockOnExit
// (off by default) it does not even handle SIGTERM, and dies of it as of SIGKILL.
func upstreamManager() manager {
	GinkgoHelper()
	binary := envOr("UPSTREAM_KCM", filepath.Join(root, "bin", "k8s", "1.37.1", "kube-controller-manager"))
	Expect(binary).To(BeAnExistingFile(), "`make e2e` builds it")
	return manager{
		name: "kube-controller-manager",
		start: func() *cluster.Process {
			GinkgoHelper()
			p, err := local.StartProcess("kube-controller-manager", binary, local.KubeadmArgs(fmt.Sprintf("--secure-port=%d", freePort()))...)
			Expect(err).NotTo(HaveOccurred())
			DeferCleanup(p.Stop, 30*time.Second)
			return p
		},
		stop:     func(p *cluster.Process) { p.Stop(30 * time.Second) },
		releases: false,
		running:  `"Starting controller" controller="deployment"`,
	}
}

// handOverMidRollout hands the cluster over from the leading manager from (process leader,
// Lease holder leaderHolder) to a standby of manager to, in the middle of a rolling update: the
// leader begins it, the standby waits on the Lease and runs no controller, the leader is
// stopped after its first step, and the standby takes the Lease and finishes the update with
// the leader's ReplicaSets, never over maxSurge, creating no ReplicaSet and no pod in excess.
func handOverMidRollout(ctx context.Context, from manager, leader *cluster.Process, leaderHolder string, to manager) {
	GinkgoHelper()
	const (
		replicas = 6
		maxSurge = 1
		// Each new pod counts as available only minReadySeconds after KWOK makes it Ready
		// (at once): six steps of at least 3s each, so that the leader is stopped mid-way.
		minReadySeconds = 3
		oldImage        = pauseImage
		newImage        = "registry.k8s.io/pause:3.9"
	)
	ns := newNamespace(ctx)
	labels := map[string]string{"app": "handover"}
	w := watchRollout(ctx, ns, replicas+maxSurge)
	DeferCleanup(w.Stop)

	By(fmt.Sprintf("%s rolls out a Deployment, then starts a rolling update of its template", from.name))
	d := newDeployment(ns, "handover", replicas)
	d.Spec.MinReadySeconds = minReadySeconds
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type: appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{
			MaxSurge:       ptr.To(intstr.FromInt32(maxSurge)),
			MaxUnavailable: ptr.To(intstr.FromInt32(0)),
		},
	}
	Expect(cl.Create(ctx, d)).To(Succeed())
	d = waitDeploymentComplete(ctx, ns, d.Name, replicas)
	patch := client.MergeFrom(d.DeepCopy())
	d.Spec.Template.Spec.Containers[0].Image = newImage
	Expect(cl.Patch(ctx, d, patch)).To(Succeed())

	By(fmt.Sprintf("%s starts as a standby: %s keeps the Lease, the standby waits for it and runs no controller", to.name, from.name))
	logStart := logSize(filepath.Join(local.Dir, to.name+".log"))
	standby := to.start()
	Eventually(func() string { return logSince(standby.LogPath, logStart) }).
		WithTimeout(30*time.Second).WithPolling(200*time.Millisecond).Should(ContainSubstring("Attempting to acquire leader lease"), "%s", standby.State())
	// The leader takes one step of the rollout while the standby stands by: the first new
	// pod has become available and the old ReplicaSet is scaled down.
	Eventually(ctx, func(g Gomega) {
		sets := replicaSets(g, ns, labels)
		g.Expect(sets).To(HaveLen(2))
		for _, rs := range sets {
			if rs.Spec.Template.Spec.Containers[0].Image == oldImage {
				g.Expect(*rs.Spec.Replicas).To(BeNumerically("<", replicas), "the old ReplicaSet scaled down")
			}
		}
	}).WithTimeout(time.Minute).WithPolling(200*time.Millisecond).Should(Succeed(), "%s did not roll out; logs in %s", from.name, logDir)
	Expect(leaseHolder(ctx, leaseName)).To(Equal(leaderHolder), "%s still leads", from.name)
	standbyLog := logSince(standby.LogPath, logStart)
	Expect(standbyLog).NotTo(ContainSubstring("Successfully acquired lease"))
	Expect(standbyLog).NotTo(ContainSubstring(to.running), "the standby runs controllers")
	leaderSets := w.ReplicaSets()
	Expect(leaderSets).To(HaveLen(2), "%s's old and new ReplicaSets", from.name)

	By(fmt.Sprintf("SIGTERM to %s, as the kubelet stops a static pod whose manifest was moved away", from.name))
	before := getLease(ctx, leaseName)
	stoppedAt := time.Now()
	from.stop(leader)
	GinkgoWriter.Printf("%s exited %s after SIGTERM: %s\n", from.name, time.Since(stoppedAt).Round(time.Millisecond), leader.State())
	after := getLease(ctx, leaseName)
	Expect(after.Spec.RenewTime).NotTo(BeNil())
	Expect(after.Spec.RenewTime.Time).NotTo(BeTemporally("<", before.Spec.RenewTime.Time))
	if from.releases {
		// Released: no holder (or already the standby's), renewTime the time of release.
		Expect(ptr.Deref(after.Spec.HolderIdentity, "")).NotTo(Equal(leaderHolder), "%s kept the Lease", from.name)
	} else {
		Expect(ptr.Deref(after.Spec.HolderIdentity, "")).To(Equal(leaderHolder), "%s released the Lease", from.name)
	}
	lastRenew := after.Spec.RenewTime.Time

	By(fmt.Sprintf("%s takes the Lease: %s", to.name, map[bool]string{true: "at once, it was released", false: "once the leader's has expired"}[from.releases]))
	var took *coordinationv1.Lease
	Eventually(ctx, func(g Gomega) {
		took = getLease(ctx, leaseName)
		h := ptr.Deref(took.Spec.HolderIdentity, "")
		g.Expect(h).NotTo(BeEmpty())
		g.Expect(h).NotTo(Equal(leaderHolder))
	}).WithTimeout(leaseDuration+4*maxRetryGap).WithPolling(100*time.Millisecond).Should(Succeed(), "nobody took the Lease over")
	wall := time.Since(stoppedAt)
	atTakeover := w.Snapshot()
	Expect(took.Spec.AcquireTime).NotTo(BeNil())
	handover := took.Spec.AcquireTime.Sub(lastRenew)
	AddReportEntry(fmt.Sprintf("hand-over %s -> %s: acquireTime after the last renewTime", from.name, to.name), handover.Round(time.Millisecond).String())
	AddReportEntry(fmt.Sprintf("hand-over %s -> %s: the standby leads after SIGTERM", from.name, to.name), wall.Round(time.Millisecond).String())
	GinkgoWriter.Printf("%s took the Lease %s after %s's last renewal, %s after SIGTERM\n",
		to.name, handover.Round(time.Millisecond), from.name, wall.Round(time.Millisecond))
	if from.releases {
		// A released Lease is free at once: the standby's next retry takes it, at worst one
		// (jittered) retry late.
		Expect(handover).To(BeNumerically("<=", 2*maxRetryGap+time.Second), "taken over too late")
	} else {
		// Not before the Lease expired, counted from the last renewal the standby saw; at
		// worst it saw that renewal one (jittered) retry late and retries one late again.
		Expect(handover).To(BeNumerically(">=", leaseDuration-100*time.Millisecond), "taken before the leader's Lease expired")
		Expect(handover).To(BeNumerically("<=", leaseDuration+2*maxRetryGap+time.Second), "taken over too late")
	}
	Eventually(func() string { return logSince(standby.LogPath, logStart) }).
		WithTimeout(5*time.Second).Should(ContainSubstring("Successfully acquired lease"), "the Lease is held by another than %s", to.name)
	if ptr.Deref(after.Spec.HolderIdentity, "") != ptr.Deref(took.Spec.HolderIdentity, "") {
		Expect(took.Spec.LeaseTransitions).To(HaveValue(Equal(*after.Spec.LeaseTransitions + 1)))
	}
	// The rollout was in flight: the leader had begun it, and not all new pods existed.
	Expect(atTakeover.Live[atTakeover.hashOf(newImage)]).To(BeNumerically(">=", 1), "%s's new pods: %+v", from.name, atTakeover)
	Expect(atTakeover.Live[atTakeover.hashOf(newImage)]).To(BeNumerically("<", replicas), "the rollout was over before %s took over: %+v", to.name, atTakeover)

	By(fmt.Sprintf("%s finishes the rollout with %s's ReplicaSets", to.name, from.name))
	Eventually(ctx, func(g Gomega) {
		// A broken bound fails at once, with what broke it, rather than as a rollout that
		// never ends.
		if s := w.Snapshot(); len(s.Violations) > 0 {
			StopTrying("the rolling update broke its bounds").Attach("violations", s.Violations).Now()
		}
		g.Expect(standby.Exited()).To(BeFalse(), "%s", standby.State())
		g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
		s := d.Status
		g.Expect(s.ObservedGeneration).To(Equal(d.Generation), "observedGeneration")
		g.Expect([]int32{s.Replicas, s.UpdatedReplicas, s.ReadyReplicas, s.AvailableReplicas}).To(HaveEach(BeEquivalentTo(replicas)),
			"replicas, updated, ready, available")
		g.Expect(deploymentCondition(d, appsv1.DeploymentAvailable)).To(Equal(corev1.ConditionTrue), "Available")
		pods := livePods(g, ns, labels)
		g.Expect(pods).To(HaveLen(replicas))
		for _, p := range pods {
			g.Expect(p.Spec.Containers[0].Image).To(Equal(newImage), "pod %s", p.Name)
			g.Expect(p.Status.Phase).To(Equal(corev1.PodRunning), "pod %s", p.Name)
		}
	}).WithTimeout(2*time.Minute).WithPolling(500*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
	expectRolloutStatus(ctx, ns, d.Name)
	end := w.Snapshot()
	w.Stop()
	GinkgoWriter.Printf("pods and ReplicaSets seen: %+v\n", end)
	Expect(end.Violations).To(BeEmpty())
	Expect(end.MaxLive).To(BeNumerically("<=", replicas+maxSurge))
	// The standby adopted the leader's ReplicaSets and created none (the same
	// pod-template-hash, hence the same ReplicaSet); every pod was created once: replicas of
	// the old template, replicas of the new, none in excess.
	Expect(w.ReplicaSets()).To(Equal(leaderSets), "the Deployment's ReplicaSets (UID by pod-template-hash)")
	Expect(end.Created).To(Equal(map[string]int{end.hashOf(oldImage): replicas, end.hashOf(newImage): replicas}), "pods created per template")
}

// replaceKCM makes p the suite's kcm, checked after every spec and by AfterSuite.
func replaceKCM(p *cluster.Process) {
	components = append(without(components, kcm), p)
	kcm = p
}

// without is a new list of the processes but p.
func without(processes []*cluster.Process, p *cluster.Process) []*cluster.Process {
	var rest []*cluster.Process
	for _, q := range processes {
		if q != p {
			rest = append(rest, q)
		}
	}
	return rest
}

func getLease(ctx context.Context, name string) *coordinationv1.Lease {
	GinkgoHelper()
	lease := &coordinationv1.Lease{}
	Expect(cl.Get(ctx, client.ObjectKey{Namespace: "kube-system", Name: name}, lease)).To(Succeed())
	return lease
}

func leaseHolder(ctx context.Context, name string) string {
	GinkgoHelper()
	return ptr.Deref(getLease(ctx, name).Spec.HolderIdentity, "")
}

// logSize is the size of the log at path, 0 if the process was never started.
func logSize(path string) int64 {
	GinkgoHelper()
	info, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0
	}
	Expect(err).NotTo(HaveOccurred())
	return info.Size()
}

// logSince is what was written to the log at path after its first offset bytes.
func logSince(path string, offset int64) string {
	GinkgoHelper()
	data, err := os.ReadFile(path)
	Expect(err).NotTo(HaveOccurred())
	return string(data[min(offset, int64(len(data))):])
}

// rolloutWatch follows every pod and ReplicaSet of a namespace, from before the Deployment
// exists, and checks on each event what a rolling update promises: never more live pods than
// bound (replicas + maxSurge; terminating pods excluded, as the Deployment controller excludes
// them), never two ReplicaSets for one template.
type rolloutWatch struct {
	bound  int
	cancel context.CancelFunc
	done   sync.WaitGroup

	mu sync.Mutex
	// live pods by UID, with their pod-template-hash.
	live map[types.UID]string
	// created counts the pods ever seen, by pod-template-hash.
	created map[string]int
	seen    map[types.UID]bool
	sets    map[types.UID]*appsv1.ReplicaSet
	// images maps a template's image to its pod-template-hash.
	images     map[string]string
	maxLive    int
	violations []string
}

// rolloutSnapshot is what the watch has seen so far.
type rolloutSnapshot struct {
	// Live is the number of live pods by pod-template-hash; Created the number ever created.
	Live, Created map[string]int
	MaxLive       int
	Violations    []string
	Images        map[string]string
}

func (s rolloutSnapshot) hashOf(image string) string { return s.Images[image] }

func watchRollout(ctx context.Context, ns string, bound int) *rolloutWatch {
	GinkgoHelper()
	cs, err := kubernetes.NewForConfig(local.Config)
	Expect(err).NotTo(HaveOccurred())
	w := &rolloutWatch{bound: bound, live: map[types.UID]string{}, created: map[string]int{}, seen: map[types.UID]bool{},
		sets: map[types.UID]*appsv1.ReplicaSet{}, images: map[string]string{}}
	ctx, w.cancel = context.WithCancel(context.WithoutCancel(ctx))

	pods, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(pods.Items).To(BeEmpty())
	sets, err := cs.AppsV1().ReplicaSets(ns).List(ctx, metav1.ListOptions{})
	Expect(err).NotTo(HaveOccurred())
	Expect(sets.Items).To(BeEmpty())
	// A RetryWatcher resumes from the last resourceVersion should the API server end a watch.
	podWatch, err := watchtools.NewRetryWatcherWithContext(ctx, pods.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.CoreV1().Pods(ns).Watch(ctx, o)
		}})
	Expect(err).NotTo(HaveOccurred())
	setWatch, err := watchtools.NewRetryWatcherWithContext(ctx, sets.ResourceVersion, &cache.ListWatch{
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			return cs.AppsV1().ReplicaSets(ns).Watch(ctx, o)
		}})
	Expect(err).NotTo(HaveOccurred())
	w.done.Add(2)
	go w.follow(podWatch, w.pod)
	go w.follow(setWatch, w.replicaSet)
	return w
}

func (w *rolloutWatch) follow(rw *watchtools.RetryWatcher, handle func(watch.EventType, any)) {
	defer GinkgoRecover()
	defer w.done.Done()
	defer rw.Stop()
	for ev := range rw.ResultChan() {
		w.mu.Lock()
		switch ev.Type {
		case watch.Added, watch.Modified, watch.Deleted:
			handle(ev.Type, ev.Object)
		case watch.Error:
			w.violations = append(w.violations, fmt.Sprintf("the watch broke: %v", ev.Object))
		}
		w.mu.Unlock()
	}
}

func (w *rolloutWatch) pod(t watch.EventType, obj any) {
	p := obj.(*corev1.Pod)
	hash := p.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	if !w.seen[p.UID] {
		w.seen[p.UID] = true
		w.created[hash]++
	}
	if t == watch.Deleted || p.DeletionTimestamp != nil || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
		delete(w.live, p.UID)
		return
	}
	w.live[p.UID] = hash
	w.maxLive = max(w.maxLive, len(w.live))
	if len(w.live) > w.bound {
		w.violations = append(w.violations, fmt.Sprintf("%d live pods at resourceVersion %s (pod %s), more than replicas+maxSurge %d",
			len(w.live), p.ResourceVersion, p.Name, w.bound))
	}
}

func (w *rolloutWatch) replicaSet(t watch.EventType, obj any) {
	rs := obj.(*appsv1.ReplicaSet)
	if t == watch.Deleted {
		w.violations = append(w.violations, fmt.Sprintf("ReplicaSet %s deleted", rs.Name))
		return
	}
	hash := rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]
	w.images[rs.Spec.Template.Spec.Containers[0].Image] = hash
	for uid, other := range w.sets {
		if uid == rs.UID {
			continue
		}
		if other.Labels[appsv1.DefaultDeploymentUniqueLabelKey] == hash {
			w.violations = append(w.violations, fmt.Sprintf("ReplicaSets %s and %s have one pod-template-hash %s", other.Name, rs.Name, hash))
		}
		if equality.Semantic.DeepEqual(withoutHash(other.Spec.Template), withoutHash(rs.Spec.Template)) {
			w.violations = append(w.violations, fmt.Sprintf("ReplicaSets %s and %s have one template", other.Name, rs.Name))
		}
	}
	w.sets[rs.UID] = rs
}

// withoutHash is the template without the label the Deployment controller adds to it.
func withoutHash(t corev1.PodTemplateSpec) corev1.PodTemplateSpec {
	t = *t.DeepCopy()
	delete(t.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return t
}

// ReplicaSets maps each ReplicaSet's pod-template-hash to its UID.
func (w *rolloutWatch) ReplicaSets() map[string]types.UID {
	w.mu.Lock()
	defer w.mu.Unlock()
	sets := map[string]types.UID{}
	for uid, rs := range w.sets {
		sets[rs.Labels[appsv1.DefaultDeploymentUniqueLabelKey]] = uid
	}
	return sets
}

func (w *rolloutWatch) Snapshot() rolloutSnapshot {
	w.mu.Lock()
	defer w.mu.Unlock()
	s := rolloutSnapshot{Live: map[string]int{}, Created: map[string]int{}, MaxLive: w.maxLive,
		Violations: slices.Clone(w.violations), Images: map[string]string{}}
	for _, hash := range w.live {
		s.Live[hash]++
	}
	for hash, n := range w.created {
		s.Created[hash] = n
	}
	for image, hash := range w.images {
		s.Images[image] = hash
	}
	return s
}

// Stop ends the watches; safe to call twice.
func (w *rolloutWatch) Stop() {
	w.cancel()
	w.done.Wait()
}
