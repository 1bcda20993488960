//go:build e2e && linux

package e2e_test

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/explain"
	"github.com/kcm/kcm/test/cluster"
)

// What config/controller-groups' Leases carry (internal/groups).
const (
	groupLeaseLabel       = "kcm.k8s.io/controller-groups"
	groupControllersNote  = "kcm.k8s.io/controllers"
	groupsLogMessage      = "Controller groups"
	groupsComponentDir    = "config/controller-groups"
	groupsReplicaLogStart = "kcm-replica-"
)

// Three kcm replicas share the controllers in controller groups, started with what
// config/controller-groups adds to kcm (its --controller-groups argument, and its Role for the
// Leases, applied as rendered), each with kubeadm's arguments and identity. The suite's kcm is
// stopped first and restarted after.
var _ = Describe("Controller groups over three replicas", Serial, Ordered, func() {
	var (
		single   []string
		replicas []*cluster.Process
		groupArg string
	)

	BeforeAll(func(ctx SpecContext) {
		By("config/controller-groups, rendered over config/control-plane: its Role and binding applied, its argument taken")
		groupArg = applyGroupsComponent(ctx)
		Expect(groupArg).To(Equal("--controller-groups=auto"))

		By("the suite's kcm, under the single Lease: which controllers it set up")
		single = controllersSetUp(kcm.LogPath)
		Expect(single).To(ContainElement("deployment-controller"))
		slices.Sort(single)
		kcmManager().stop(kcm)
		DeferCleanup(func() {
			for _, p := range replicas {
				if !p.Exited() {
					components = without(components, p)
					p.Stop(30 * time.Second)
				}
			}
			replaceKCM(startKCM())
		})

		By("three replicas with " + groupArg)
		for i := range 3 {
			replicas = append(replicas, startReplica(i+1, groupArg))
		}
	})

	It("each replica leads its share of the groups within two renew periods of the last start, and every controller runs on exactly one replica", func(ctx SpecContext) {
		groups := expectEvenSplit(ctx, replicas)
		AddReportEntry("controller groups (auto)", fmt.Sprint(len(groups)))
		// The groups hold every controller the single leader ran, each once.
		var union []string
		for _, l := range groups {
			union = append(union, strings.Split(l.Annotations[groupControllersNote], ",")...)
		}
		slices.Sort(union)
		Expect(union).To(Equal(single), "the groups' controllers (their Leases' %s) against the single leader's", groupControllersNote)
		// Each group Lease is led, by its metric, on exactly one replica: its holder.
		ids := identities(replicas)
		Eventually(ctx, func(g Gomega) {
			for _, l := range groupLeases(ctx) {
				var leading []string
				for i, p := range replicas {
					if masterStatus(ctx, g, p)[l.Name] == 1 {
						leading = append(leading, ids[i])
					}
				}
				g.Expect(leading).To(Equal([]string{ptr.Deref(l.Spec.HolderIdentity, "")}),
					"leader_election_master_status{name=%q} is 1 on its holder only", l.Name)
			}
		}).WithTimeout(30 * time.Second).WithPolling(time.Second).Should(Succeed())
		// Upstream's one Lease is held too, by a replica, with nothing run under it: an upstream
		// kube-controller-manager started beside them would stand by.
		Eventually(ctx, func() string { return leaseHolder(ctx, leaseName) }).WithTimeout(leaseDuration+2*maxRetryGap).
			Should(BeElementOf(ids), "the single Lease's holder")
		for _, p := range replicas {
			Expect(forbiddenLines(p.LogPath)).To(BeEmpty(), "%s's log", p.Name)
		}
	})

	It("kill -9 of the replica leading deployment-controller mid-rollout: its groups are led elsewhere within the lease duration and two retry periods, and the rollout ends with no pod over maxSurge and no duplicate ReplicaSet", func(ctx SpecContext) {
		const (
			n        = 6
			maxSurge = 1
			newImage = "registry.k8s.io/pause:3.9"
		)
		ns := newNamespace(ctx)
		w := watchRollout(ctx, ns, n+maxSurge)
		DeferCleanup(w.Stop)
		d := newDeployment(ns, "groups", n)
		d.Spec.MinReadySeconds = 3
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: ptr.To(intstr.FromInt32(maxSurge)), MaxUnavailable: ptr.To(intstr.FromInt32(0))}}
		Expect(cl.Create(ctx, d)).To(Succeed())
		d = waitDeploymentComplete(ctx, ns, d.Name, n)
		patch := client.MergeFrom(d.DeepCopy())
		d.Spec.Template.Spec.Containers[0].Image = newImage
		Expect(cl.Patch(ctx, d, patch)).To(Succeed())
		Eventually(ctx, func(g Gomega) {
			g.Expect(w.Snapshot().Live[w.Snapshot().hashOf(newImage)]).To(BeNumerically(">=", 1))
		}).WithTimeout(time.Minute).Should(Succeed(), "the rollout began")
		sets := w.ReplicaSets()

		victim := leaderOf(ctx, replicas, "deployment-controller")
		By("SIGKILL to " + victim.Name)
		killedAt := time.Now()
		victim.Kill()
		components = without(components, victim)
		live := without(slices.Clone(replicas), victim)
		Eventually(ctx, func(g Gomega) {
			ids := identities(live)
			for _, l := range groupLeases(ctx) {
				g.Expect(ids).To(ContainElement(ptr.Deref(l.Spec.HolderIdentity, "")), "Lease %s", l.Name)
			}
		}).WithTimeout(leaseDuration + 2*maxRetryGap + 5*time.Second).WithPolling(200 * time.Millisecond).Should(Succeed())
		took := time.Since(killedAt)
		AddReportEntry("controller groups: led again after kill -9", took.Round(time.Millisecond).String())
		Expect(took).To(BeNumerically("<=", leaseDuration+2*maxRetryGap+time.Second))

		Eventually(ctx, func(g Gomega) {
			if s := w.Snapshot(); len(s.Violations) > 0 {
				StopTrying("the rolling update broke its bounds").Attach("violations", s.Violations).Now()
			}
			g.Expect(cl.Get(ctx, client.ObjectKeyFromObject(d), d)).To(Succeed())
			s := d.Status
			g.Expect(s.ObservedGeneration).To(Equal(d.Generation))
			g.Expect([]int32{s.Replicas, s.UpdatedReplicas, s.AvailableReplicas}).To(HaveEach(BeEquivalentTo(n)))
		}).WithTimeout(2 * time.Minute).WithPolling(500 * time.Millisecond).Should(Succeed())
		end := w.Snapshot()
		Expect(end.Violations).To(BeEmpty())
		Expect(end.MaxLive).To(BeNumerically("<=", n+maxSurge))
		Expect(w.ReplicaSets()).To(Equal(sets), "no ReplicaSet was created after the kill")
		Expect(end.Created).To(Equal(map[string]int{end.hashOf(pauseImage): n, end.hashOf(newImage): n}), "pods created per template")

		By("a replica started in its place takes its share")
		replicas = append(live, startReplica(4, groupArg))
		expectEvenSplit(ctx, replicas)
	})

	It("a replica stopped gracefully releases its groups at once", func(ctx SpecContext) {
		leaving := replicas[0]
		held := heldBy(ctx, identities([]*cluster.Process{leaving})[0])
		Expect(held).NotTo(BeEmpty())
		stoppedAt := time.Now()
		components = without(components, leaving)
		leaving.Stop(30 * time.Second)
		replicas = replicas[1:]
		ids := identities(replicas)
		Eventually(ctx, func(g Gomega) {
			for _, l := range groupLeases(ctx) {
				g.Expect(ids).To(ContainElement(ptr.Deref(l.Spec.HolderIdentity, "")), "Lease %s", l.Name)
			}
		}).WithTimeout(leaseDuration).WithPolling(100 * time.Millisecond).Should(Succeed())
		took := time.Since(stoppedAt)
		AddReportEntry("controller groups: led again after SIGTERM", took.Round(time.Millisecond).String())
		// Released Leases are free at once; the candidate Lease is gone too, so the others'
		// share grows at their next retry.
		Expect(took).To(BeNumerically("<=", 3*maxRetryGap+time.Second), "held %v", held)
		expectEvenSplit(ctx, replicas)
	})

	// The replicas run on this machine, not in pods: explain cannot find them from the Lease
	// holders' pods as it does in a cluster, so each holder identity is given its replica's
	// secure port (--kcm-holder-url). The rest is explain's own: the group Leases listed, each
	// controller routed to the holder of the Lease naming it.
	It("kcm explain reads each controller's view of a Deployment from the replica leading its group", func(ctx SpecContext) {
		ns := newNamespace(ctx)
		Expect(cl.Create(ctx, newDeployment(ns, "explained", 2))).To(Succeed())
		waitDeploymentComplete(ctx, ns, "explained", 2)
		ids := identities(replicas)
		args := []string{"-n", ns, "--kcm-insecure-skip-tls-verify"}
		for i, p := range replicas {
			args = append(args, "--kcm-holder-url", ids[i]+"="+processURL(p))
		}
		var report explain.Report
		var leading *cluster.Process
		Eventually(ctx, func(g Gomega) {
			report = explainJSON(ctx, g, "deployment/explained", args...)
			holders := groupHolders(ctx)
			for _, c := range []string{"deployment-controller", "replicaset-controller"} {
				i := slices.Index(ids, holders[c])
				g.Expect(i).To(BeNumerically(">=", 0), "%s's group is led by a replica: %v", c, holders)
				leading = replicas[i]
				g.Expect(report.Leaders).To(ContainElement(And(HaveField("Holder", ids[i]), HaveField("URL", processURL(replicas[i])),
					HaveField("Error", ""), HaveField("Controllers", ContainElement(c)))), "%s's view is read from %s", c, replicas[i].Name)
			}
			// Every leader the report names holds the Leases it names, and leads the controllers.
			for _, l := range report.Leaders {
				for _, c := range l.Controllers {
					g.Expect(holders[c]).To(Equal(l.Holder), "%s", c)
				}
			}
			g.Expect(report.Tree.View).To(HaveField("Controller", "deployment-controller"))
			rs := findNode(report.Tree, "ReplicaSet")
			g.Expect(rs).NotTo(BeNil())
			g.Expect(rs.View).To(HaveField("Controller", "replicaset-controller"))
		}).WithTimeout(30*time.Second).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
		GinkgoWriter.Printf("views read from: %+v\n", report.Leaders)

		By("the other replicas do not run them: asked alone (--kcm-url), each gives neither view")
		for _, p := range replicas {
			if p == leading {
				continue
			}
			r := explainJSON(ctx, Default, "deployment/explained", "-n", ns, "--kcm-url", processURL(p), "--kcm-insecure-skip-tls-verify")
			Expect(r.Leader).To(HaveField("Error", ""))
			Expect(r.Tree.View).To(BeNil(), "%s runs no deployment-controller", p.Name)
			Expect(findNode(r.Tree, "ReplicaSet").View).To(BeNil(), "%s runs no replicaset-controller", p.Name)
		}
	})
})

// applyGroupsComponent renders config/controller-groups over config/control-plane, applies the
// Role and RoleBinding it adds, and returns the argument it adds to kcm's command line.
func applyGroupsComponent(ctx context.Context) string {
	GinkgoHelper()
	overlay := GinkgoT().TempDir()
	rel := func(dir string) string {
		r, err := filepath.Rel(overlay, filepath.Join(root, dir))
		Expect(err).NotTo(HaveOccurred())
		return r
	}
	Expect(os.WriteFile(filepath.Join(overlay, "kustomization.yaml"),
		[]byte("resources:\n- "+rel("config/control-plane")+"\ncomponents:\n- "+rel(groupsComponentDir)+"\n"), 0o644)).To(Succeed())
	rendered := kubectlOutput(ctx, nil, "kustomize", overlay)
	var arg string
	var rbac []string
	for _, doc := range strings.Split(string(rendered), "\n---\n") {
		var obj struct {
			Kind string
			Spec struct {
				Template struct {
					Spec struct{ Containers []corev1.Container }
				}
			}
		}
		Expect(yaml.Unmarshal([]byte(doc), &obj)).To(Succeed())
		switch obj.Kind {
		case "Role", "RoleBinding":
			rbac = append(rbac, doc)
		case "Deployment":
			for _, a := range obj.Spec.Template.Spec.Containers[0].Args {
				if strings.HasPrefix(a, "--controller-groups=") {
					arg = a
				}
			}
		}
	}
	Expect(rbac).To(HaveLen(2), "the component's Role and RoleBinding")
	kubectlOutput(ctx, []byte(strings.Join(rbac, "\n---\n")), "apply", "--server-side", "-f", "-")
	return arg
}

// kubectlOutput runs kubectl against the cluster with stdin and returns its standard output.
func kubectlOutput(ctx context.Context, stdin []byte, args ...string) []byte {
	GinkgoHelper()
	cmd := exec.CommandContext(ctx, kubectl, append([]string{"--kubeconfig=" + kubeconfig}, args...)...)
	cmd.Stdin = bytes.NewReader(stdin)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	Expect(err).NotTo(HaveOccurred(), "kubectl %v: %s", args, stderr.String())
	return out
}

// startReplica starts a kcm replica with kubeadm's arguments and arg; it is checked after
// every spec as the cluster's other processes.
func startReplica(i int, arg string) *cluster.Process {
	GinkgoHelper()
	p, err := local.StartProcess(fmt.Sprintf("%s%d", groupsReplicaLogStart, i), kcmBinary,
		local.KubeadmArgs(fmt.Sprintf("--secure-port=%d", freePort()), arg)...)
	Expect(err).NotTo(HaveOccurred())
	components = append(components, p)
	return p
}

// identities are the replicas' holder identities, from the line each logs at startup.
func identities(ps []*cluster.Process) []string {
	GinkgoHelper()
	var ids []string
	for _, p := range ps {
		var id string
		Eventually(func() []cluster.LogLine { return logMessages(p.LogPath, groupsLogMessage) }).WithTimeout(30*time.Second).
			ShouldNot(BeEmpty(), "%s", p.State())
		lines := logMessages(p.LogPath, groupsLogMessage)
		if s := lines[len(lines)-1].Strings("identity"); len(s) == 1 {
			id = s[0]
		}
		Expect(id).NotTo(BeEmpty(), "%s logs its identity", p.Name)
		ids = append(ids, id)
	}
	return ids
}

// groupLeases are the controller groups' Leases of the suite's lease name.
func groupLeases(ctx context.Context) []coordinationv1.Lease {
	GinkgoHelper()
	list := &coordinationv1.LeaseList{}
	Expect(cl.List(ctx, list, client.InNamespace(metav1.NamespaceSystem), client.MatchingLabels{groupLeaseLabel: leaseName})).To(Succeed())
	return list.Items
}

// heldBy names the group Leases identity holds.
func heldBy(ctx context.Context, identity string) []string {
	var held []string
	for _, l := range groupLeases(ctx) {
		if ptr.Deref(l.Spec.HolderIdentity, "") == identity {
			held = append(held, l.Name)
		}
	}
	return held
}

// expectEvenSplit waits until every group Lease is held by one of ps and each leads its share
// (the groups divided by the replicas, rounded down or up), and returns the Leases.
func expectEvenSplit(ctx context.Context, ps []*cluster.Process) []coordinationv1.Lease {
	GinkgoHelper()
	ids := identities(ps)
	var leases []coordinationv1.Lease
	Eventually(ctx, func(g Gomega) {
		leases = groupLeases(ctx)
		g.Expect(len(leases)).To(BeNumerically(">=", len(ps)), "groups")
		count := map[string]int{}
		for _, l := range leases {
			h := ptr.Deref(l.Spec.HolderIdentity, "")
			g.Expect(ids).To(ContainElement(h), "Lease %s is held by a live replica", l.Name)
			count[h]++
		}
		for _, id := range ids {
			g.Expect(count[id]).To(BeNumerically(">=", len(leases)/len(ps)), "%s's share of %d groups", id, len(leases))
			g.Expect(count[id]).To(BeNumerically("<=", (len(leases)+len(ps)-1)/len(ps)), "%s's share of %d groups", id, len(leases))
		}
	}).WithTimeout(2*leaseDuration + 4*maxRetryGap).WithPolling(500 * time.Millisecond).Should(Succeed())
	return leases
}

// leaderOf is the replica leading the group of controller, from the group Leases' annotation.
func leaderOf(ctx context.Context, ps []*cluster.Process, controller string) *cluster.Process {
	GinkgoHelper()
	ids := identities(ps)
	for _, l := range groupLeases(ctx) {
		if slices.Contains(strings.Split(l.Annotations[groupControllersNote], ","), controller) {
			i := slices.Index(ids, ptr.Deref(l.Spec.HolderIdentity, ""))
			Expect(i).To(BeNumerically(">=", 0), "Lease %s's holder is a replica", l.Name)
			return ps[i]
		}
	}
	Fail("no group Lease names " + controller)
	return nil
}

// masterStatus is a kcm process's leader_election_master_status by Lease name.
func masterStatus(ctx context.Context, g Gomega, p *cluster.Process) map[string]float64 {
	code, body, err := processGet(ctx, p, "/metrics")
	g.Expect(err).NotTo(HaveOccurred())
	g.Expect(code).To(Equal(http.StatusOK))
	out := map[string]float64{}
	sc := bufio.NewScanner(bytes.NewReader(body))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		rest, ok := strings.CutPrefix(sc.Text(), `leader_election_master_status{name="`)
		if !ok {
			continue
		}
		name, value, _ := strings.Cut(rest, `"} `)
		v, err := strconv.ParseFloat(value, 64)
		g.Expect(err).NotTo(HaveOccurred(), "%s", sc.Text())
		out[name] = v
	}
	return out
}

// groupHolders maps each controller to the holder of the group Lease naming it.
func groupHolders(ctx context.Context) map[string]string {
	GinkgoHelper()
	out := map[string]string{}
	for _, l := range groupLeases(ctx) {
		for _, c := range strings.Split(l.Annotations[groupControllersNote], ",") {
			out[c] = ptr.Deref(l.Spec.HolderIdentity, "")
		}
	}
	return out
}
