package replicaset_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

var _ = Describe("replicaset-controller", func() {
	ctx := context.Background()
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "rs") })

	get := func(g Gomega, name string) *appsv1.ReplicaSet {
		rs := &appsv1.ReplicaSet{}
		g.Expect(env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rs)).To(Succeed())
		return rs
	}
	scale := func(name string, n int32) {
		Eventually(func() error {
			rs := &appsv1.ReplicaSet{}
			if err := env.Client.Get(ctx, types.NamespacedName{Namespace: ns, Name: name}, rs); err != nil {
				return err
			}
			rs.Spec.Replicas = &n
			return env.Client.Update(ctx, rs)
		}).Should(Succeed())
	}

	It("creates the pods from the template, controlled by the ReplicaSet, and reports them", func() {
		rs := newReplicaSet(ns, "web", 3)
		rs.Spec.Template.Labels["tier"] = "front"
		Expect(env.Client.Create(ctx, rs)).To(Succeed())

		var created []corev1.Pod
		Eventually(func(g Gomega) {
			created = pods(ctx, g, ns)
			g.Expect(created).To(HaveLen(3))
		}).Should(Succeed())
		for _, p := range created {
			Expect(p.GenerateName).To(Equal("web-"))
			Expect(p.Labels).To(Equal(map[string]string{"app": "web", "tier": "front"}))
			Expect(metav1.IsControlledBy(&p, rs)).To(BeTrue())
			Expect(p.OwnerReferences[0].BlockOwnerDeletion).To(HaveValue(BeTrue()))
		}
		Eventually(func(g Gomega) {
			st := get(g, "web").Status
			g.Expect(st.ObservedGeneration).To(Equal(int64(1)))
			g.Expect(st.Replicas).To(Equal(int32(3)))
			g.Expect(st.FullyLabeledReplicas).To(Equal(int32(3)))
			g.Expect(st.ReadyReplicas).To(BeZero())
			g.Expect(st.TerminatingReplicas).To(HaveValue(BeZero()))
		}).Should(Succeed())

		for i := range created {
			env.SetPodStatus(ctx, &created[i], testenv.RunningSince(true, time.Now()))
		}
		Eventually(func(g Gomega) {
			st := get(g, "web").Status
			g.Expect(st.ReadyReplicas).To(Equal(int32(3)))
			g.Expect(st.AvailableReplicas).To(Equal(int32(3)))
		}).Should(Succeed())

		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			created := 0
			for _, e := range events.Items {
				if e.Reason == "SuccessfulCreate" && e.Regarding.Name == "web" && e.ReportingController == "replicaset-controller" {
					created++
				}
			}
			g.Expect(created).To(Equal(3))
		}).Should(Succeed())
	})

	It("scales down deleting not-ready pods before ready ones, and scales up again", func() {
		Expect(env.Client.Create(ctx, newReplicaSet(ns, "scale", 3))).To(Succeed())
		var all []corev1.Pod
		Eventually(func(g Gomega) { all = pods(ctx, g, ns); g.Expect(all).To(HaveLen(3)) }).Should(Succeed())
		env.SetPodStatus(ctx, &all[1], testenv.RunningSince(true, time.Now()))
		Eventually(func(g Gomega) { g.Expect(get(g, "scale").Status.ReadyReplicas).To(Equal(int32(1))) }).Should(Succeed())

		scale("scale", 1)
		Eventually(func(g Gomega) {
			left := pods(ctx, g, ns)
			g.Expect(left).To(HaveLen(1))
			g.Expect(left[0].Name).To(Equal(all[1].Name))
			st := get(g, "scale").Status
			g.Expect(st.Replicas).To(Equal(int32(1)))
			g.Expect(st.ObservedGeneration).To(Equal(int64(2)))
		}).Should(Succeed())

		scale("scale", 4)
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(4)) }).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(4)) }, 2*time.Second).Should(Succeed())
	})

	It("observes the age ratio of the ready pods a scale-down chose, as upstream", func() {
		Expect(env.Client.Create(ctx, newReplicaSet(ns, "ratio", 3))).To(Succeed())
		var all []corev1.Pod
		Eventually(func(g Gomega) { all = pods(ctx, g, ns); g.Expect(all).To(HaveLen(3)) }).Should(Succeed())
		for i := range all {
			env.SetPodStatus(ctx, &all[i], testenv.RunningSince(true, time.Now()))
		}
		Eventually(func(g Gomega) { g.Expect(get(g, "ratio").Status.ReadyReplicas).To(Equal(int32(3))) }).Should(Succeed())
		// The legacy registry /metrics serves: a histogram without labels, without series
		// before its first observation.
		const ageRatios = "replicaset_controller_sorting_deletion_age_ratio"
		before := testenv.Histogram(ageRatios, nil).GetSampleCount()

		// Two of three ready pods go: two observations, each at least 1 (no pod is younger
		// than the youngest), in upstream's buckets 0.25 to 8.
		scale("ratio", 1)
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(1)) }).Should(Succeed())
		Eventually(func(g Gomega) {
			h := testenv.Histogram(ageRatios, nil)
			g.Expect(h).NotTo(BeNil())
			g.Expect(h.GetSampleCount()).To(Equal(before + 2))
			g.Expect(h.GetBucket()).To(HaveLen(6))
			g.Expect(h.GetBucket()[0].GetUpperBound()).To(Equal(0.25))
			g.Expect(h.GetBucket()[5].GetUpperBound()).To(Equal(8.0))
		}).Should(Succeed())
	})

	It("follows the /scale subresource and reports it back through it", func() {
		rs := newReplicaSet(ns, "scaled", 1)
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(1)) }).Should(Succeed())

		// The Scale carries the ReplicaSet's resourceVersion, which the controller's status
		// writes move: a conflict is retried with a fresh read, as kubectl scale does.
		Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
			sc := &autoscalingv1.Scale{}
			if err := env.Client.SubResource("scale").Get(ctx, rs, sc); err != nil {
				return err
			}
			sc.Spec.Replicas = 3
			return env.Client.SubResource("scale").Update(ctx, rs, client.WithSubResourceBody(sc))
		})).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(pods(ctx, g, ns)).To(HaveLen(3))
			got := &autoscalingv1.Scale{}
			g.Expect(env.Client.SubResource("scale").Get(ctx, rs, got)).To(Succeed())
			g.Expect(got.Status.Replicas).To(Equal(int32(3)))
			g.Expect(got.Status.Selector).To(Equal("app=scaled"))
		}).Should(Succeed())
	})

	It("deletes unassigned pods before assigned ones", func() {
		Expect(env.Client.Create(ctx, newReplicaSet(ns, "spread", 2))).To(Succeed())
		var all []corev1.Pod
		Eventually(func(g Gomega) { all = pods(ctx, g, ns); g.Expect(all).To(HaveLen(2)) }).Should(Succeed())
		assignNode(ctx, &all[0], "node-a")
		scale("spread", 1)
		Eventually(func(g Gomega) {
			left := pods(ctx, g, ns)
			g.Expect(left).To(HaveLen(1))
			g.Expect(left[0].Name).To(Equal(all[0].Name))
		}).Should(Succeed())
	})

	It("adopts matching orphans and releases pods that stop matching", func() {
		orphan := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{"app": "adopt"}},
			Spec:       podTemplate(nil).Spec,
		}
		Expect(env.Client.Create(ctx, orphan)).To(Succeed())
		rs := newReplicaSet(ns, "adopt", 2)
		Expect(env.Client.Create(ctx, rs)).To(Succeed())

		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(orphan), p)).To(Succeed())
			g.Expect(metav1.IsControlledBy(p, rs)).To(BeTrue())
			g.Expect(pods(ctx, g, ns)).To(HaveLen(2))
		}).Should(Succeed())
		Consistently(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(2)) }, 2*time.Second).Should(Succeed())

		// Relabel the adopted pod: it is released and replaced.
		Eventually(func() error {
			p := &corev1.Pod{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(orphan), p); err != nil {
				return err
			}
			p.Labels = map[string]string{"app": "elsewhere"}
			return env.Client.Update(ctx, p)
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			p := &corev1.Pod{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(orphan), p)).To(Succeed())
			g.Expect(metav1.GetControllerOf(p)).To(BeNil())
			g.Expect(pods(ctx, g, ns, client.MatchingLabels{"app": "adopt"})).To(HaveLen(2))
		}).Should(Succeed())
	})

	It("never adopts pods another controller controls", func() {
		other := newReplicaSet(ns, "other", 0)
		other.Spec.Selector.MatchLabels = map[string]string{"app": "shared", "owner": "other"}
		other.Spec.Template.Labels = map[string]string{"app": "shared", "owner": "other"}
		Expect(env.Client.Create(ctx, other)).To(Succeed())
		scale("other", 1)
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(1)) }).Should(Succeed())

		greedy := newReplicaSet(ns, "greedy", 1)
		greedy.Spec.Selector.MatchLabels = map[string]string{"app": "shared"}
		greedy.Spec.Template.Labels = map[string]string{"app": "shared"}
		Expect(env.Client.Create(ctx, greedy)).To(Succeed())
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(2)) }).Should(Succeed())
		Consistently(func(g Gomega) {
			for _, p := range pods(ctx, g, ns, client.MatchingLabels{"owner": "other"}) {
				g.Expect(metav1.GetControllerOf(&p).Name).To(Equal("other"))
			}
		}, 2*time.Second).Should(Succeed())
	})

	It("creates exactly 500 pods for a 500-replica burst", func() {
		Expect(env.Client.Create(ctx, newReplicaSet(ns, "burst", 500))).To(Succeed())
		start := time.Now()
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(500)) }, 3*time.Minute, time.Second).Should(Succeed())
		AddReportEntry("500 pods created in", time.Since(start).Round(time.Millisecond).String())
		Consistently(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(500)) }, 3*time.Second, 500*time.Millisecond).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(get(g, "burst").Status.Replicas).To(Equal(int32(500))) }).Should(Succeed())
	})

	It("surfaces a quota-limited creation as ReplicaFailure and recovers when quota allows", func() {
		quota := &corev1.ResourceQuota{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"},
			Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")}},
		}
		Expect(env.Client.Create(ctx, quota)).To(Succeed())
		// No resourcequota-controller runs here: publish the quota's usage ourselves.
		quota.Status = corev1.ResourceQuotaStatus{
			Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("2")},
			Used: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("0")},
		}
		Expect(env.Client.Status().Update(ctx, quota)).To(Succeed())

		Expect(env.Client.Create(ctx, newReplicaSet(ns, "quota", 3))).To(Succeed())
		Eventually(func(g Gomega) {
			rs := get(g, "quota")
			g.Expect(pods(ctx, g, ns)).To(HaveLen(2))
			g.Expect(rs.Status.Conditions).To(ContainElement(And(
				HaveField("Type", appsv1.ReplicaSetReplicaFailure),
				HaveField("Status", corev1.ConditionTrue),
				HaveField("Reason", "FailedCreate"),
				HaveField("Message", ContainSubstring("exceeded quota")),
			)))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(
				HaveField("Reason", "FailedCreate"), HaveField("Type", corev1.EventTypeWarning),
				HaveField("Note", ContainSubstring("exceeded quota")),
			)))
		}).Should(Succeed())

		// As the conformance test does: scaling down to what the quota allows clears the
		// condition (the failed create is otherwise retried with growing backoff).
		scale("quota", 2)
		Eventually(func(g Gomega) {
			g.Expect(get(g, "quota").Status.Conditions).To(BeEmpty())
		}).Should(Succeed())

		Eventually(func() error {
			q := &corev1.ResourceQuota{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(quota), q); err != nil {
				return err
			}
			q.Spec.Hard[corev1.ResourcePods] = resource.MustParse("3")
			if err := env.Client.Update(ctx, q); err != nil {
				return err
			}
			q.Status.Hard[corev1.ResourcePods] = resource.MustParse("3")
			return env.Client.Status().Update(ctx, q)
		}).Should(Succeed())
		scale("quota", 3)
		Eventually(func(g Gomega) {
			g.Expect(pods(ctx, g, ns)).To(HaveLen(3))
			g.Expect(get(g, "quota").Status.Conditions).To(BeEmpty())
		}).Should(Succeed())
	})

	It("counts a pod available only minReadySeconds after it became ready", func() {
		rs := newReplicaSet(ns, "minready", 1)
		rs.Spec.MinReadySeconds = 3
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		var all []corev1.Pod
		Eventually(func(g Gomega) { all = pods(ctx, g, ns); g.Expect(all).To(HaveLen(1)) }).Should(Succeed())
		// The API server keeps condition times in whole seconds.
		readyAt := time.Now().Truncate(time.Second)
		env.SetPodStatus(ctx, &all[0], testenv.RunningSince(true, readyAt))
		Eventually(func(g Gomega) {
			st := get(g, "minready").Status
			g.Expect(st.ReadyReplicas).To(Equal(int32(1)))
			g.Expect(st.AvailableReplicas).To(BeZero())
		}).Should(Succeed())
		// Nothing else changes: only the controller's own requeue can notice availability.
		Eventually(func(g Gomega) {
			g.Expect(get(g, "minready").Status.AvailableReplicas).To(Equal(int32(1)))
		}, 10*time.Second).Should(Succeed())
		Expect(time.Since(readyAt)).To(BeNumerically(">=", 3*time.Second))
	})

	It("reports terminating pods and replaces them", func() {
		rs := newReplicaSet(ns, "term", 1)
		rs.Spec.Template.Finalizers = []string{"example.com/hold"}
		Expect(env.Client.Create(ctx, rs)).To(Succeed())
		var first []corev1.Pod
		Eventually(func(g Gomega) { first = pods(ctx, g, ns); g.Expect(first).To(HaveLen(1)) }).Should(Succeed())
		Expect(env.Client.Delete(ctx, &first[0])).To(Succeed())
		Eventually(func(g Gomega) {
			live := pods(ctx, g, ns)
			g.Expect(live).To(HaveLen(1))
			g.Expect(live[0].Name).NotTo(Equal(first[0].Name))
			g.Expect(get(g, "term").Status.TerminatingReplicas).To(HaveValue(Equal(int32(1))))
		}).Should(Succeed())
		// Let both pods go.
		scale("term", 0)
		list := &corev1.PodList{}
		Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
		for i := range list.Items {
			p := &list.Items[i]
			p.Finalizers = nil
			Expect(client.IgnoreNotFound(env.Client.Update(ctx, p))).To(Succeed())
		}
		Eventually(func(g Gomega) {
			g.Expect(get(g, "term").Status.TerminatingReplicas).To(HaveValue(BeZero()))
		}).Should(Succeed())
	})
})

var _ = Describe("replicationcontroller-controller", func() {
	ctx := context.Background()

	It("keeps the replicas of a ReplicationController and reports them in its status", func() {
		ns := env.Namespace(ctx, "rs")
		orphan := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "orphan", Labels: map[string]string{"app": "rc"}},
			Spec:       podTemplate(nil).Spec,
		}
		Expect(env.Client.Create(ctx, orphan)).To(Succeed())
		tmpl := podTemplate(map[string]string{"app": "rc"})
		rc := &corev1.ReplicationController{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "rc"},
			Spec: corev1.ReplicationControllerSpec{
				Replicas: new(int32(3)), Selector: map[string]string{"app": "rc"}, Template: &tmpl,
			},
		}
		Expect(env.Client.Create(ctx, rc)).To(Succeed())
		Eventually(func(g Gomega) {
			all := pods(ctx, g, ns)
			g.Expect(all).To(HaveLen(3))
			for _, p := range all {
				g.Expect(metav1.IsControlledBy(&p, rc)).To(BeTrue(), fmt.Sprintf("pod %s", p.Name))
			}
			got := &corev1.ReplicationController{}
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(rc), got)).To(Succeed())
			g.Expect(got.Status.Replicas).To(Equal(int32(3)))
			g.Expect(got.Status.FullyLabeledReplicas).To(Equal(int32(3)))
			g.Expect(got.Status.ObservedGeneration).To(Equal(int64(1)))
		}).Should(Succeed())
		// Its Events are reported as upstream's: "replication-controller".
		Eventually(func(g Gomega) {
			events := &eventsv1.EventList{}
			g.Expect(env.Client.List(ctx, events, client.InNamespace(ns))).To(Succeed())
			g.Expect(events.Items).To(ContainElement(And(HaveField("Reason", "SuccessfulCreate"), HaveField("Regarding.Name", "rc"),
				HaveField("DeprecatedSource.Component", "replication-controller"))))
		}).Should(Succeed())

		Eventually(func() error {
			got := &corev1.ReplicationController{}
			if err := env.Client.Get(ctx, client.ObjectKeyFromObject(rc), got); err != nil {
				return err
			}
			got.Spec.Replicas = new(int32(1))
			return env.Client.Update(ctx, got)
		}).Should(Succeed())
		Eventually(func(g Gomega) { g.Expect(pods(ctx, g, ns)).To(HaveLen(1)) }).Should(Succeed())
	})
})
