package deployment_test

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// storedHashTemplate is the template of newDeployment(ns, "hash", ...) as kube-apiserver
// v1.37.1 stores it (defaults filled in); upstreamStoredHash is what upstream's own
// controller.ComputeHash (k8s.io/kubernetes v1.37.1) returns for it, decoded from this JSON
// by a throwaway program in hack/tools/k8s (not kept).
const (
	storedHashTemplate = `{"metadata":{"labels":{"app":"hash"}},"spec":{"containers":[{"name":"app","image":"registry.k8s.io/pause:3.10","resources":{},"terminationMessagePath":"/dev/termination-log","terminationMessagePolicy":"File","imagePullPolicy":"IfNotPresent"}],"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{},"schedulerName":"default-scheduler"}}`
	upstreamStoredHash = "5d9cc8659c"
)

var _ = Describe("deployment-controller", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "deploy") })

	It("names its ReplicaSet after upstream's pod-template-hash and labels it", func() {
		Expect(env.Client.Create(ctx, newDeployment(ns, "hash", 1))).To(Succeed())
		stored := getDeployment(ctx, Default, ns, "hash")
		Expect(json.Marshal(stored.Spec.Template)).To(MatchJSON(storedHashTemplate), "the API server's defaulting changed: recompute the hash")

		var rs appsv1.ReplicaSet
		Eventually(func(g Gomega) {
			rss := replicaSets(ctx, g, ns)
			g.Expect(rss).To(HaveLen(1))
			rs = rss[upstreamStoredHash]
		}).Should(Succeed())
		Expect(rs.Name).To(Equal("hash-" + upstreamStoredHash))
		Expect(rs.Labels).To(Equal(map[string]string{"app": "hash", hashLabel: upstreamStoredHash}))
		Expect(rs.Spec.Selector.MatchLabels).To(Equal(map[string]string{"app": "hash", hashLabel: upstreamStoredHash}))
		Expect(rs.Spec.Template.Labels).To(Equal(map[string]string{"app": "hash", hashLabel: upstreamStoredHash}))
		Expect(metav1.IsControlledBy(&rs, stored)).To(BeTrue())
		Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "1"))
		Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/desired-replicas", "1"))
		Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/max-replicas", "2"))
		Eventually(func(g Gomega) {
			d := getDeployment(ctx, g, ns, "hash")
			g.Expect(d.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "1"))
			g.Expect(d.Status.CollisionCount).To(BeNil())
		}).Should(Succeed())
	})

	It("scales up and down through its ReplicaSet, with upstream's events", func() {
		kubelet{}.start(ctx, ns)
		Expect(env.Client.Create(ctx, newDeployment(ns, "web", 2))).To(Succeed())
		d := expectRolledOut(ctx, ns, "web")
		Expect(d.Status.ReadyReplicas).To(Equal(int32(2)))
		Expect(d.Status.TerminatingReplicas).To(HaveValue(BeZero()))
		Expect(available(d).Reason).To(Equal("MinimumReplicasAvailable"))
		Expect(progressing(d).Message).To(MatchRegexp(`^ReplicaSet "web-[a-z0-9]+" has successfully progressed\.$`))
		rsName := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.10").Name

		updateDeployment(ctx, ns, "web", setReplicas(5))
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(5)) }).Should(Succeed())
		expectRolledOut(ctx, ns, "web")
		rs := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.10")
		Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/desired-replicas", "5"))
		Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/max-replicas", "7"))

		updateDeployment(ctx, ns, "web", setReplicas(1))
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(1)) }).Should(Succeed())
		d = expectRolledOut(ctx, ns, "web")
		Expect(d.Status.Replicas).To(Equal(int32(1)))
		Expect(replicaSets(ctx, Default, ns)).To(HaveLen(1))

		Eventually(func(g Gomega) {
			g.Expect(events(ctx, g, ns, "ScalingReplicaSet")).To(ConsistOf(
				fmt.Sprintf("Scaled up replica set %s from 0 to 2", rsName),
				fmt.Sprintf("Scaled up replica set %s from 2 to 5", rsName),
				fmt.Sprintf("Scaled down replica set %s from 5 to 1", rsName),
			))
		}).Should(Succeed())
	})

	It("rolls out within maxSurge and maxUnavailable at every step", func() {
		// 5 replicas, maxSurge 30% (rounds up to 2), maxUnavailable 30% (rounds down to 1).
		const replicas, surge, unavailable = 5, 2, 1
		d := withRolling(newDeployment(ns, "roll", replicas), intstr.FromString("30%"), intstr.FromString("30%"))
		kubelet{ReadyAfter: 500 * time.Millisecond}.start(ctx, ns)
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		expectRolledOut(ctx, ns, "roll")
		oldHash := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.10").Labels[hashLabel]

		stop := observePods(ctx, ns)
		updateDeployment(ctx, ns, "roll", setImage("registry.k8s.io/pause:3.9"))
		d = expectRolledOut(ctx, ns, "roll")
		states := stop()

		Expect(len(states)).To(BeNumerically(">", 5))
		maxTotal, minReady, mixed := 0, replicas, 0
		for i, s := range states {
			total, ready := s.total(s.Live), s.total(s.Ready)
			Expect(total).To(BeNumerically("<=", replicas+surge), "state %d of %+v", i, states)
			Expect(ready).To(BeNumerically(">=", replicas-unavailable), "state %d of %+v", i, states)
			maxTotal, minReady = max(maxTotal, total), min(minReady, ready)
			if s.Live[oldHash] > 0 && s.total(s.Live) > s.Live[oldHash] {
				mixed++
			}
		}
		// The rollout used its whole budget: the surge rounded up, the unavailability down.
		Expect(maxTotal).To(Equal(replicas+surge), "%+v", states)
		Expect(minReady).To(Equal(replicas-unavailable), "%+v", states)
		Expect(mixed).To(BeNumerically(">", 2), "old and new pods were seen together")

		rss := replicaSets(ctx, Default, ns)
		Expect(rss).To(HaveLen(2))
		Expect(*rss[oldHash].Spec.Replicas).To(BeZero())
		Expect(d.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "2"))
		newRS := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.9")
		Expect(newRS.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "2"))
		Expect(progressing(d).Message).To(Equal(fmt.Sprintf("ReplicaSet %q has successfully progressed.", newRS.Name)))
	})

	It("recreates: no new pod while any old pod, terminating ones included, exists", func() {
		d := newDeployment(ns, "re", 3)
		d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
		// Pods on a node terminate gracefully: they linger for a second after deletion.
		kubelet{Node: "node-a", FinishAfter: time.Second}.start(ctx, ns)
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		expectRolledOut(ctx, ns, "re")
		oldHash := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.10").Labels[hashLabel]

		stop := observePods(ctx, ns)
		updateDeployment(ctx, ns, "re", setImage("registry.k8s.io/pause:3.9"))
		expectRolledOut(ctx, ns, "re")
		states := stop()

		terminatingSeen := false
		for i, s := range states {
			old, newer := s.All[oldHash], s.total(s.All)-s.All[oldHash]
			Expect(old == 0 || newer == 0).To(BeTrue(), "state %d: old and new pods together: %+v", i, s)
			if s.All[oldHash] > s.Live[oldHash] {
				terminatingSeen = true
			}
		}
		Expect(terminatingSeen).To(BeTrue(), "old pods were seen terminating")
		Expect(pods(ctx, Default, ns)).To(HaveLen(3))
	})

	It("scales all ReplicaSets proportionally in the middle of a rollout", func() {
		// Upstream's e2e case: 10 replicas, maxSurge 3, maxUnavailable 2; the new pods never
		// become ready, so the rollout stops at 8 old + 5 new; scaled to 30, the 33 allowed
		// pods are split 20 + 13.
		d := withRolling(newDeployment(ns, "prop", 10), intstr.FromInt32(3), intstr.FromInt32(2))
		k := kubelet{Ready: func(p *corev1.Pod) bool { return p.Spec.Containers[0].Image == "registry.k8s.io/pause:3.10" }}
		k.start(ctx, ns)
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		expectRolledOut(ctx, ns, "prop")

		updateDeployment(ctx, ns, "prop", setImage("registry.k8s.io/pause:does-not-start"))
		sizesAre := func(old, newer int32, desired, maxReplicas string) {
			Eventually(func(g Gomega) {
				o := replicaSetFor(ctx, g, ns, "registry.k8s.io/pause:3.10")
				n := replicaSetFor(ctx, g, ns, "registry.k8s.io/pause:does-not-start")
				g.Expect([]int32{*o.Spec.Replicas, *n.Spec.Replicas}).To(Equal([]int32{old, newer}))
				for _, rs := range []appsv1.ReplicaSet{o, n} {
					g.Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/desired-replicas", desired))
					g.Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/max-replicas", maxReplicas))
				}
			}).WithTimeout(20 * time.Second).Should(Succeed())
		}
		sizesAre(8, 5, "10", "13")
		Consistently(func(g Gomega) {
			g.Expect(*replicaSetFor(ctx, g, ns, "registry.k8s.io/pause:3.10").Spec.Replicas).To(Equal(int32(8)))
		}, time.Second).Should(Succeed())

		updateDeployment(ctx, ns, "prop", setReplicas(30))
		sizesAre(20, 13, "30", "33")
		Eventually(func(g Gomega) {
			d := getDeployment(ctx, g, ns, "prop")
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
			g.Expect(d.Status.UpdatedReplicas).To(Equal(int32(13)))
			g.Expect(d.Status.Replicas).To(Equal(int32(33)))
		}).Should(Succeed())

		// Scaled down to 5 (8 allowed), 20·8/33 ≈ 5 and 13·8/33 ≈ 3; the rollout then goes on.
		oldName := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.10").Name
		newName := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:does-not-start").Name
		updateDeployment(ctx, ns, "prop", setReplicas(5))
		Eventually(func(g Gomega) {
			g.Expect(events(ctx, g, ns, "ScalingReplicaSet")).To(ContainElements(
				fmt.Sprintf("Scaled down replica set %s from 20 to 5", oldName),
				fmt.Sprintf("Scaled down replica set %s from 13 to 3", newName),
			))
		}).Should(Succeed())
	})

	It("pauses and resumes: no rollout while paused, scaling still happens", func() {
		kubelet{}.start(ctx, ns)
		Expect(env.Client.Create(ctx, newDeployment(ns, "pause", 2))).To(Succeed())
		expectRolledOut(ctx, ns, "pause")

		updateDeployment(ctx, ns, "pause", func(d *appsv1.Deployment) { d.Spec.Paused = true })
		Eventually(func(g Gomega) {
			c := progressing(getDeployment(ctx, g, ns, "pause"))
			g.Expect(c.Reason).To(Equal("DeploymentPaused"))
			g.Expect(c.Status).To(Equal(corev1.ConditionUnknown))
			g.Expect(c.Message).To(Equal("Deployment is paused"))
		}).Should(Succeed())

		updateDeployment(ctx, ns, "pause", func(d *appsv1.Deployment) {
			setImage("registry.k8s.io/pause:3.9")(d)
			d.Spec.Replicas = new(int32(3))
		})
		Eventually(func(g Gomega) {
			d := getDeployment(ctx, g, ns, "pause")
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
			g.Expect(d.Status.Replicas).To(Equal(int32(3)))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			rss := replicaSets(ctx, g, ns)
			g.Expect(rss).To(HaveLen(1))
			for _, rs := range rss {
				g.Expect(*rs.Spec.Replicas).To(Equal(int32(3)))
				g.Expect(rs.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.10"))
			}
			g.Expect(progressing(getDeployment(ctx, g, ns, "pause")).Reason).To(Equal("DeploymentPaused"))
		}, 2*time.Second).Should(Succeed())

		// Resuming writes DeploymentResumed before the rollout replaces it: watch every write.
		reasons := watchProgressingReasons(ctx, ns, "pause")
		updateDeployment(ctx, ns, "pause", func(d *appsv1.Deployment) { d.Spec.Paused = false })
		expectRolledOut(ctx, ns, "pause")
		Expect(replicaSets(ctx, Default, ns)).To(HaveLen(2))
		Eventually(reasons).Should(ContainElements("DeploymentResumed", "NewReplicaSetCreated", "NewReplicaSetAvailable"))
		seen := reasons()
		Expect(indexOf(seen, "DeploymentResumed")).To(BeNumerically("<", indexOf(seen, "NewReplicaSetCreated")), "%v", seen)
	})

	It("rolls back to an old template by reusing its ReplicaSet under a new revision", func() {
		kubelet{}.start(ctx, ns)
		d := newDeployment(ns, "undo", 2)
		d.Annotations = map[string]string{"kubernetes.io/change-cause": "v1", corev1.LastAppliedConfigAnnotation: "{}"}
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		expectRolledOut(ctx, ns, "undo")
		v1 := replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.10")
		Expect(v1.Annotations).To(HaveKeyWithValue("kubernetes.io/change-cause", "v1"))
		Expect(v1.Annotations).NotTo(HaveKey(corev1.LastAppliedConfigAnnotation))

		updateDeployment(ctx, ns, "undo", func(d *appsv1.Deployment) {
			setImage("registry.k8s.io/pause:3.9")(d)
			d.Annotations["kubernetes.io/change-cause"] = "v2"
		})
		expectRolledOut(ctx, ns, "undo")
		Expect(replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.9").Annotations).To(And(
			HaveKeyWithValue("deployment.kubernetes.io/revision", "2"), HaveKeyWithValue("kubernetes.io/change-cause", "v2")))

		// `kubectl rollout undo`: the template goes back.
		updateDeployment(ctx, ns, "undo", setImage("registry.k8s.io/pause:3.10"))
		d = expectRolledOut(ctx, ns, "undo")
		Expect(d.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "3"))
		rss := replicaSets(ctx, Default, ns)
		Expect(rss).To(HaveLen(2), "the old ReplicaSet is reused")
		back := rss[v1.Labels[hashLabel]]
		Expect(back.UID).To(Equal(v1.UID))
		Expect(*back.Spec.Replicas).To(Equal(int32(2)))
		Expect(back.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "3"))
		Expect(back.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision-history", "1"))
		Expect(*replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.9").Spec.Replicas).To(BeZero())

		// The deprecated rollback request (still honoured by upstream v1.37): back to the
		// previous revision (2), with that revision's annotations, and the request cleared.
		updateDeployment(ctx, ns, "undo", func(d *appsv1.Deployment) { d.Annotations[appsv1.DeprecatedRollbackTo] = "0" })
		Eventually(func(g Gomega) {
			d := getDeployment(ctx, g, ns, "undo")
			g.Expect(d.Annotations).NotTo(HaveKey(appsv1.DeprecatedRollbackTo))
			g.Expect(d.Spec.Template.Spec.Containers[0].Image).To(Equal("registry.k8s.io/pause:3.9"))
			g.Expect(d.Annotations).To(HaveKeyWithValue("kubernetes.io/change-cause", "v2"))
			g.Expect(d.Annotations).To(HaveKeyWithValue(corev1.LastAppliedConfigAnnotation, "{}"))
		}).Should(Succeed())
		d = expectRolledOut(ctx, ns, "undo")
		Expect(d.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "4"))
		Expect(replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.9").Annotations).To(
			HaveKeyWithValue("deployment.kubernetes.io/revision-history", "2"))
		Eventually(func(g Gomega) {
			g.Expect(events(ctx, g, ns, "DeploymentRollback")).To(ConsistOf(`Rolled back deployment "undo" to revision 2`))
		}).Should(Succeed())
	})

	It("keeps revisionHistoryLimit old ReplicaSets", func() {
		kubelet{}.start(ctx, ns)
		d := newDeployment(ns, "hist", 1)
		d.Spec.RevisionHistoryLimit = new(int32(1))
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		expectRolledOut(ctx, ns, "hist")
		for _, image := range []string{"registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.8"} {
			updateDeployment(ctx, ns, "hist", setImage(image))
			expectRolledOut(ctx, ns, "hist")
		}
		Eventually(func(g Gomega) {
			rss := replicaSets(ctx, g, ns)
			var images []string
			for _, rs := range rss {
				images = append(images, rs.Spec.Template.Spec.Containers[0].Image)
			}
			g.Expect(images).To(ConsistOf("registry.k8s.io/pause:3.9", "registry.k8s.io/pause:3.8"))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(replicaSets(ctx, g, ns)).To(HaveLen(2)) }, time.Second).Should(Succeed())
	})

	It("reports ProgressDeadlineExceeded when pods never become ready", func() {
		d := newDeployment(ns, "stuck", 2)
		d.Spec.ProgressDeadlineSeconds = new(int32(2))
		start := time.Now()
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			d := getDeployment(ctx, g, ns, "stuck")
			c := progressing(d)
			g.Expect(c.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(c.Reason).To(Equal("ProgressDeadlineExceeded"))
			g.Expect(c.Message).To(MatchRegexp(`^ReplicaSet "stuck-[a-z0-9]+" has timed out progressing\.$`))
			g.Expect(available(d).Reason).To(Equal("MinimumReplicasUnavailable"))
			g.Expect(available(d).Status).To(Equal(corev1.ConditionFalse))
			g.Expect(d.Status.UnavailableReplicas).To(Equal(int32(2)))
		}).WithTimeout(15 * time.Second).Should(Succeed())
		Expect(time.Since(start)).To(BeNumerically(">=", 2*time.Second), "not before the deadline")
	})

	It("counts pods available only minReadySeconds after they are ready", func() {
		d := newDeployment(ns, "minready", 2)
		d.Spec.MinReadySeconds = 3
		kubelet{}.start(ctx, ns)
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			d := getDeployment(ctx, g, ns, "minready")
			g.Expect(d.Status.ReadyReplicas).To(Equal(int32(2)))
		}).Should(Succeed())
		readyAt := time.Now()
		Expect(replicaSetFor(ctx, Default, ns, "registry.k8s.io/pause:3.10").Spec.MinReadySeconds).To(Equal(int32(3)))
		Consistently(func(g Gomega) {
			g.Expect(getDeployment(ctx, g, ns, "minready").Status.AvailableReplicas).To(BeZero())
		}, 2*time.Second).Should(Succeed())
		d = expectRolledOut(ctx, ns, "minready")
		Expect(time.Since(readyAt)).To(BeNumerically(">=", 2*time.Second))
		Expect(d.Status.AvailableReplicas).To(Equal(int32(2)))
	})

	It("adopts a matching orphan ReplicaSet with its template instead of creating one", func() {
		d := newDeployment(ns, "adopt", 1)
		orphan := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "adopt-orphan", Labels: map[string]string{"app": "adopt"}},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: new(int32(1)),
				Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": "adopt"}},
				Template: *d.Spec.Template.DeepCopy(),
			},
		}
		Expect(env.Client.Create(ctx, orphan)).To(Succeed())
		reasons := watchProgressingReasons(ctx, ns, "adopt")
		Expect(env.Client.Create(ctx, d)).To(Succeed())
		Eventually(func(g Gomega) {
			rss := replicaSets(ctx, g, ns)
			g.Expect(rss).To(HaveLen(1))
			for _, rs := range rss {
				g.Expect(rs.Name).To(Equal("adopt-orphan"))
				g.Expect(metav1.IsControlledBy(&rs, d)).To(BeTrue())
				g.Expect(rs.Annotations).To(HaveKeyWithValue("deployment.kubernetes.io/revision", "1"))
			}
		}).Should(Succeed())
		Eventually(reasons).Should(ContainElement("FoundNewReplicaSet"))
		Expect(reasons()).NotTo(ContainElement("NewReplicaSetCreated"))
	})

	It("only updates the status of a Deployment being deleted", func() {
		kubelet{}.start(ctx, ns)
		Expect(env.Client.Create(ctx, newDeployment(ns, "gone", 1))).To(Succeed())
		expectRolledOut(ctx, ns, "gone")
		// No garbage collector runs here: foreground deletion leaves the Deployment in place.
		Expect(env.Client.Delete(ctx, getDeployment(ctx, Default, ns, "gone"), client.PropagationPolicy(metav1.DeletePropagationForeground))).To(Succeed())
		updateDeployment(ctx, ns, "gone", func(d *appsv1.Deployment) {
			setImage("registry.k8s.io/pause:3.9")(d)
			d.Spec.Replicas = new(int32(3))
		})
		Eventually(func(g Gomega) {
			d := getDeployment(ctx, g, ns, "gone")
			g.Expect(d.Status.ObservedGeneration).To(Equal(d.Generation))
		}).Should(Succeed())
		Consistently(func(g Gomega) {
			rss := replicaSets(ctx, g, ns)
			g.Expect(rss).To(HaveLen(1))
			for _, rs := range rss {
				g.Expect(*rs.Spec.Replicas).To(Equal(int32(1)))
			}
		}, 2*time.Second).Should(Succeed())
		updateDeployment(ctx, ns, "gone", func(d *appsv1.Deployment) { d.Finalizers = nil })
	})
})

// watchProgressingReasons records the reason of the Deployment's Progressing condition at
// every write, from a watch, until the spec ends.
func watchProgressingReasons(ctx context.Context, ns, name string) func() []string {
	cs, err := kubernetes.NewForConfig(env.Config)
	Expect(err).NotTo(HaveOccurred())
	w, err := cs.AppsV1().Deployments(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	Expect(err).NotTo(HaveOccurred())
	DeferCleanup(w.Stop)
	var (
		mu      sync.Mutex
		reasons []string
	)
	go func() {
		for e := range w.ResultChan() {
			d, ok := e.Object.(*appsv1.Deployment)
			if !ok {
				continue
			}
			r := progressing(d).Reason
			mu.Lock()
			if r != "" && (len(reasons) == 0 || reasons[len(reasons)-1] != r) {
				reasons = append(reasons, r)
			}
			mu.Unlock()
		}
	}()
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), reasons...)
	}
}

func indexOf(s []string, v string) int {
	for i, x := range s {
		if x == v {
			return i
		}
	}
	return len(s)
}
