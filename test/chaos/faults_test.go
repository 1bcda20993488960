//go:build chaos && linux

package chaos_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/test/chaos/faultproxy"
	"github.com/kcm/kcm/test/chaos/invariants"
	"github.com/kcm/kcm/test/cluster"
)

// Upstream's leader-election defaults, which kubeadm keeps and both managers use.
const (
	leaseName     = "kube-controller-manager"
	renewDeadline = 10 * time.Second
	// convergeWithin is the bound once a fault ends; upstream is given longer, and
	// whatever it takes is reported.
	convergeWithin, upstreamWaits = 60 * time.Second, 3 * time.Minute
	// quietCores is the most CPU a converged manager may use: no hot loop.
	quietCores = 0.05
	// rssGrowth is how far above its pre-fault RSS a manager may stay once converged.
	rssGrowth = 1.2
)

// manager is a controller manager binary under test.
type manager struct {
	Name   string
	Binary string
	// Holds says whether the invariants are asserted (kcm's promise) or only reported.
	Holds bool
}

func managerNamed(name string) manager {
	switch name {
	case "kcm":
		return manager{Name: "kcm", Binary: envOr("KCM_BINARY", filepath.Join(root, "bin", "kcm")), Holds: true}
	case "upstream":
		return manager{Name: "upstream", Binary: envOr("UPSTREAM_KCM", filepath.Join(root, "bin", "k8s", "1.37.1", "kube-controller-manager"))}
	}
	Fail(fmt.Sprintf("CHAOS_MANAGERS names %q: want kcm or upstream", name))
	return manager{}
}

// fixture is one manager's cluster: the manager behind the proxy, and the processes it ran.
type fixture struct {
	m       manager
	c       *cluster.Cluster
	proxy   *faultproxy.Proxy
	proxied string // kubeconfig through the proxy
	leader  *cluster.Process
	// others are processes started beside the leader (the partition's standby).
	others   []*cluster.Process
	restarts int
	round    int
}

// start starts a manager as kubeadm starts kube-controller-manager, through the proxy or not.
func (f *fixture) start(name string, viaProxy bool) *cluster.Process {
	GinkgoHelper()
	overrides := append([]string{"--secure-port=0"}, form.Flags...)
	if viaProxy {
		overrides = append(overrides, "--kubeconfig="+f.proxied)
	}
	args := f.c.KubeadmArgs(overrides...)
	p, err := f.c.StartProcess(name, f.m.Binary, args...)
	Expect(err).NotTo(HaveOccurred())
	return p
}

// keepRunning restarts the proxied manager if it exited (a manager that lost its Lease
// exits, as upstream's does) and counts the restart.
func (f *fixture) keepRunning() {
	GinkgoHelper()
	if f.leader.Exited() {
		fmt.Fprintf(GinkgoWriter, "%s exited: %s; restarting it\n", f.m.Name, f.leader.State())
		f.restarts++
		f.leader = f.start(f.m.Name, true)
	}
}

// usage is the CPU of the manager's running processes together, and the largest RSS among
// them: after the partition two run (the standby leading, the old leader restarted), and it
// is each one's memory that must come back, not their sum.
func (f *fixture) usage() cluster.Usage {
	GinkgoHelper()
	var total cluster.Usage
	for _, p := range append([]*cluster.Process{f.leader}, f.others...) {
		if p.Exited() {
			continue
		}
		u, err := p.Usage()
		Expect(err).NotTo(HaveOccurred())
		total.CPU += u.CPU
		total.RSS = max(total.RSS, u.RSS)
		total.PeakRSS = max(total.PeakRSS, u.PeakRSS)
	}
	return total
}

// fault is one spec: inject runs from the moment the round starts and returns when the fault
// is over (healed).
type fault struct {
	Name   string
	Inject func(ctx context.Context, f *fixture)
}

var faults = []fault{
	{"429 storm: half the requests answered 429 Retry-After: 1", func(ctx context.Context, f *fixture) {
		f.proxy.Set(faultproxy.Fault{Throttle: 0.5})
		sleep(ctx, form.Fault)
		f.proxy.Heal()
	}},
	{"5xx burst: 500 and 503 on 30% of requests, 5% reset mid-response", func(ctx context.Context, f *fixture) {
		f.proxy.Set(faultproxy.Fault{ServerErrors: 0.3, Resets: 0.05})
		sleep(ctx, form.Fault)
		f.proxy.Heal()
	}},
	{"latency: +500ms on every request", func(ctx context.Context, f *fixture) {
		f.proxy.Set(faultproxy.Fault{Latency: 500 * time.Millisecond})
		sleep(ctx, form.Fault)
		f.proxy.Heal()
	}},
	{"watch cuts: every watch closed every 5s, then etcd compacted under the cuts (410 Gone)", func(ctx context.Context, f *fixture) {
		f.proxy.Set(faultproxy.Fault{CutWatchesEvery: 5 * time.Second})
		sleep(ctx, form.Fault/2)
		for end := time.Now().Add(form.Fault / 2); time.Now().Before(end); sleep(ctx, 5*time.Second) {
			rev, err := f.c.CompactEtcd(ctx)
			Expect(err).NotTo(HaveOccurred())
			f.proxy.CutWatches()
			fmt.Fprintf(GinkgoWriter, "compacted etcd to revision %d, cut the watches\n", rev)
		}
		f.proxy.Heal()
	}},
	{"restarts: kube-apiserver, then etcd killed and back after 10s", func(ctx context.Context, f *fixture) {
		Expect(f.c.RestartAPIServer(5 * time.Second)).To(Succeed())
		sleep(ctx, 10*time.Second)
		Expect(f.c.KillEtcd()).To(Succeed())
		sleep(ctx, 10*time.Second)
		Expect(f.c.StartEtcd()).To(Succeed())
	}},
	// Last: the standby, not behind the proxy, leads from then on.
	{"partition: the leader blackholed while a standby takes the Lease, then healed", partition},
}

// Each fault runs, and gets its row, whatever the ones before it did.
var _ = Describe("Faults", func() {
	for _, name := range managersUnderTest() {
		Context(name, Ordered, ContinueOnFailure, func() {
			f := &fixture{}
			BeforeAll(func(ctx SpecContext) {
				f.m = managerNamed(name)
				Expect(f.m.Binary).To(BeAnExistingFile(), "make build / make chaos builds it")
				dir := filepath.Join(runDir, name)
				var err error
				f.c, err = cluster.Start(ctx, cluster.Options{Dir: dir, Assets: assets, KWOK: kwokBinary, Nodes: form.Nodes,
					Restartable: true, Audit: true})
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(func() { Expect(f.c.Stop()).To(Succeed()) })
				opts, err := faultproxy.OptionsFromKubeconfig(f.c.ControllerManagerKubeconfig)
				Expect(err).NotTo(HaveOccurred())
				opts.Seed = 1
				f.proxy, err = faultproxy.New(opts)
				Expect(err).NotTo(HaveOccurred())
				DeferCleanup(f.proxy.Close)
				f.proxied = filepath.Join(dir, "controller-manager-via-proxy.conf")
				Expect(f.proxy.WriteKubeconfig(f.proxied)).To(Succeed())
				f.leader = f.start(name, true)
				Expect(f.c.WaitNodesSchedulable(ctx, 2*time.Minute)).To(Succeed(), "%s lifts the nodes' not-ready taint", name)
			}, NodeTimeout(5*time.Minute))

			for _, flt := range faults {
				It(flt.Name, func(ctx SpecContext) { runFault(ctx, f, flt) }, NodeTimeout(10*time.Minute))
			}
		})
	}
})

// runFault runs the workload through one fault and records the row.
func runFault(ctx context.Context, f *fixture, flt fault) {
	GinkgoHelper()
	cl := f.c.Client
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "chaos-"}}
	Expect(cl.Create(ctx, ns)).To(Succeed())
	By("the workload converges before the fault")
	createWorkload(ctx, cl, ns.Name, form.Load)
	doomed := createDoomedNamespace(ctx, cl)
	_, ok := waitConverged(ctx, cl, 3*time.Minute, ns.Name)
	Expect(ok).To(BeTrue(), "the workload converged before the fault")
	before := f.usage()

	w, err := invariants.Start(ctx, f.c.Config, invariants.Options{})
	Expect(err).NotTo(HaveOccurred())
	f.proxy.ResetStats()
	restartsBefore := f.restarts

	By("fault: " + flt.Name)
	f.round++
	startRound(ctx, cl, ns.Name, form.Load, f.round)
	Expect(cl.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: doomed}})).To(Succeed())
	flt.Inject(ctx, f)
	stats := f.proxy.Stats()
	f.keepRunning()

	By("converging once the fault ends")
	wait := convergeWithin
	if !f.m.Holds {
		wait = upstreamWaits
	}
	took, converged := waitConverged(ctx, cl, wait, ns.Name, doomed)
	f.keepRunning()
	var quiet float64
	after := before
	if converged {
		u0 := f.usage()
		sleep(ctx, form.Quiet)
		after = f.usage()
		quiet = (after.CPU - u0.CPU).Seconds() / form.Quiet.Seconds()
	}
	w.Stop()
	r := result{
		Manager: f.m.Name, Fault: flt.Name, Violations: w.Violations(), WorstOvershoot: worst(w.MaxOvershoot()),
		Unjudged: w.Unjudged(), LateAdds: w.LateAdds(), WatchErrors: w.WatchErrors(),
		Converged: converged, ConvergeSeconds: took.Seconds(), Requests: stats, Restarts: f.restarts - restartsBefore,
		QuietCores: quiet, RSSBefore: before.RSS, RSSAfter: after.RSS,
	}
	results = append(results, r)
	fmt.Fprintf(GinkgoWriter, "%s\n", r)

	// The namespace goes; the next fault starts from a fresh one.
	Expect(client.IgnoreNotFound(cl.Delete(ctx, ns))).To(Succeed())
	if !f.m.Holds {
		return
	}
	Expect(r.Violations).To(BeEmpty(), "invariants broken under %q", flt.Name)
	Expect(converged).To(BeTrue(), "converged within %s of the fault's end", convergeWithin)
	Expect(quiet).To(BeNumerically("<", quietCores), "CPU once converged, over %s", form.Quiet)
	Expect(float64(after.RSS)).To(BeNumerically("<=", rssGrowth*float64(before.RSS)), "RSS back near its pre-fault value")
}

// worst is the largest of the Deployments' overshoots, 0 when none went over its replicas.
func worst(overshoot map[string]int) int {
	m := 0
	for _, n := range overshoot {
		m = max(m, n)
	}
	return m
}

// waitConverged polls until nothing in the namespaces is pending (the doomed ones: gone), for
// at most limit; it returns how long that took.
func waitConverged(ctx context.Context, cl client.Client, limit time.Duration, namespaces ...string) (time.Duration, bool) {
	GinkgoHelper()
	start, lastSaid := time.Now(), time.Now()
	var pending []string
	for time.Since(start) < limit {
		pending = pending[:0]
		for _, ns := range namespaces {
			got := &corev1.Namespace{}
			err := cl.Get(ctx, client.ObjectKey{Name: ns}, got)
			switch {
			case apierrors.IsNotFound(err):
				continue
			case err != nil:
				pending = append(pending, err.Error())
				continue
			case got.DeletionTimestamp != nil:
				pending = append(pending, "namespace "+ns+" still terminating")
				continue
			}
			p, err := invariants.Converged(ctx, cl, ns)
			if err != nil {
				p = append(p, err.Error())
			}
			pending = append(pending, p...)
			e, err := endpointsPending(ctx, cl, ns)
			if err != nil {
				e = append(e, err.Error())
			}
			pending = append(pending, e...)
		}
		if len(pending) == 0 {
			return time.Since(start), true
		}
		if time.Since(lastSaid) > 10*time.Second {
			fmt.Fprintf(GinkgoWriter, "%s: not converged yet: %s\n", time.Since(start).Round(time.Second), strings.Join(pending[:min(len(pending), 10)], "; "))
			lastSaid = time.Now()
		}
		sleep(ctx, 500*time.Millisecond)
	}
	fmt.Fprintf(GinkgoWriter, "not converged after %s: %s\n", limit, strings.Join(pending[:min(len(pending), 20)], "; "))
	return time.Since(start), false
}

// partition blackholes the proxied leader while a second manager, straight to the API server,
// stands by: the leader cannot renew, the standby takes the Lease once it lapses, and no
// write from the leader is accepted after its renew deadline (the audit log's user agent
// tells the proxied requests).
func partition(ctx context.Context, f *fixture) {
	GinkgoHelper()
	standby := f.start(f.m.Name+"-standby", false)
	f.others = append(f.others, standby)
	sleep(ctx, 5*time.Second) // the standby is up and trying the Lease
	holder := leaseHolder(ctx, f.c.Client)
	f.proxy.Set(faultproxy.Fault{Blackhole: true})
	cutOff := time.Now().Add(renewDeadline + time.Second)
	sleep(ctx, form.PartitionFor)
	f.proxy.Heal()
	healed := time.Now()
	newHolder := leaseHolder(ctx, f.c.Client)
	Expect(newHolder).NotTo(Equal(holder), "the standby took the Lease during the partition")
	sleep(ctx, 5*time.Second)
	writes := acceptedWrites(f.c.AuditLog, cutOff, healed.Add(5*time.Second))
	if f.m.Holds {
		Expect(writes).To(BeEmpty(), "writes of the partitioned leader accepted after its renew deadline")
	} else if len(writes) > 0 {
		fmt.Fprintf(GinkgoWriter, "%s: %d writes of the partitioned leader accepted after its renew deadline\n", f.m.Name, len(writes))
	}
}

func leaseHolder(ctx context.Context, cl client.Client) string {
	GinkgoHelper()
	lease := &coordinationv1.Lease{}
	Expect(cl.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceSystem, Name: leaseName}, lease)).To(Succeed())
	if lease.Spec.HolderIdentity == nil {
		return ""
	}
	return *lease.Spec.HolderIdentity
}

// acceptedWrites are the audit log's accepted writes made through the proxy within [from, to].
func acceptedWrites(auditLog string, from, to time.Time) []string {
	GinkgoHelper()
	file, err := os.Open(auditLog)
	Expect(err).NotTo(HaveOccurred())
	defer file.Close()
	var writes []string
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 16<<20)
	for scanner.Scan() {
		var ev struct {
			Verb           string    `json:"verb"`
			RequestURI     string    `json:"requestURI"`
			UserAgent      string    `json:"userAgent"`
			Received       time.Time `json:"requestReceivedTimestamp"`
			ResponseStatus struct {
				Code int `json:"code"`
			} `json:"responseStatus"`
		}
		if json.Unmarshal(scanner.Bytes(), &ev) != nil {
			continue
		}
		switch ev.Verb {
		case "create", "update", "patch", "delete", "deletecollection":
		default:
			continue
		}
		if strings.Contains(ev.UserAgent, faultproxy.UserAgentSuffix) && ev.ResponseStatus.Code < 300 &&
			!ev.Received.Before(from) && !ev.Received.After(to) {
			writes = append(writes, fmt.Sprintf("%s %s %s", ev.Received.Format(time.RFC3339Nano), ev.Verb, ev.RequestURI))
		}
	}
	Expect(scanner.Err()).NotTo(HaveOccurred())
	return writes
}

// sleep waits d unless the spec ends first.
func sleep(ctx context.Context, d time.Duration) {
	select {
	case <-ctx.Done():
	case <-time.After(d):
	}
}
