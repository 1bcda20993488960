package podautoscaler_test

import (
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

var _ = Describe("horizontal-pod-autoscaler-controller's bounds and behavior", func() {
	It("brings a target above maxReplicas down to it, and leaves a target at zero alone", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-bounds")
		deployment(ctx, ns, "big", 12)
		runningPods(ctx, ns, "big", 2)
		cpuUsage(ns, "big", "50m")
		cpuHPA(ctx, ns, "big", deploymentRef("big"), 1, 10, 50)
		deployment(ctx, ns, "idle", 0)
		cpuHPA(ctx, ns, "idle", deploymentRef("idle"), 1, 10, 50)

		Eventually(replicasOf(ctx, ns, "big")).Should(Equal(int32(10)))
		Eventually(func(g Gomega) {
			rescales := events(ctx, g, ns, "big", "SuccessfulRescale")
			g.Expect(rescales).To(HaveLen(1))
			g.Expect(rescales[0].Message).To(Equal("New size: 10; reason: Current number of replicas above Spec.MaxReplicas"))
			idle := getHPA(ctx, g, ns, "idle")
			active := condition(idle, autoscalingv2.ScalingActive)
			g.Expect(active.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(active.Reason).To(Equal("ScalingDisabled"))
			g.Expect(active.Message).To(Equal("scaling is disabled since the replica count of the target is zero"))
		}).Should(Succeed())
		Expect(replicasOf(ctx, ns, "idle")()).To(Equal(int32(0)))
		Eventually(func(g Gomega) {
			g.Expect(events(ctx, g, ns, "idle", "SuccessfulRescale")).To(BeEmpty())
		}).Should(Succeed())
	})

	It("holds a StatefulSet's scale-up to the behavior's policy rate, on a Pods metric", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-policy")
		sts := &appsv1.StatefulSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: appsv1.StatefulSetSpec{
				Replicas:    ptr.To(int32(2)),
				ServiceName: "db",
				Selector:    &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "db"}},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
				},
			},
		}
		Expect(env.Client.Create(ctx, sts)).To(Succeed())
		runningPods(ctx, ns, "db", 2)
		// 100 per pod against a target of 10: ten times too many, but 1 pod per minute.
		metrics.SetPodsMetric(ns, labels.SelectorFromSet(labels.Set{"app": "db"}), "requests_per_second", resource.MustParse("100"))
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "db"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "StatefulSet", Name: "db"},
				MaxReplicas:    50,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.PodsMetricSourceType, Pods: &autoscalingv2.PodsMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "requests_per_second"},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))},
				}}},
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{
					Policies: []autoscalingv2.HPAScalingPolicy{{Type: autoscalingv2.PodsScalingPolicy, Value: 1, PeriodSeconds: 60}},
				}},
			},
		}
		Expect(env.Client.Create(ctx, hpa)).To(Succeed())

		stsReplicas := func() int32 {
			s := &appsv1.StatefulSet{}
			Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(sts), s)).To(Succeed())
			return *s.Spec.Replicas
		}
		Eventually(stsReplicas).Should(Equal(int32(3)))
		// Syncs after the rescale: the minute's one pod is spent, so the count stays at 3.
		syncs := 0
		Eventually(func(g Gomega) {
			h := getHPA(ctx, g, ns, "db")
			limited := condition(h, autoscalingv2.ScalingLimited)
			g.Expect(limited.Status).To(Equal(corev1.ConditionTrue))
			g.Expect(limited.Reason).To(Equal("ScaleUpLimit"))
			g.Expect(limited.Message).To(Equal("the desired replica count is increasing faster than the maximum scale rate"))
			g.Expect(h.Status.CurrentReplicas).To(Equal(int32(3)))
			g.Expect(h.Status.CurrentMetrics[0].Pods.Current.AverageValue.String()).To(Equal("100"))
			syncs++
			g.Expect(syncs).To(BeNumerically(">", 3), "seen over several syncs")
		}).WithPolling(time.Second).Should(Succeed())
		Expect(stsReplicas()).To(Equal(int32(3)))
		Eventually(func(g Gomega) {
			g.Expect(events(ctx, g, ns, "db", "SuccessfulRescale")).To(HaveLen(1))
		}).Should(Succeed())
	})

	It("scales to zero on an External metric and back from zero (HPAScaleToZero)", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-zero")
		deployment(ctx, ns, "worker", 2)
		runningPods(ctx, ns, "worker", 2)
		metrics.SetExternalMetric(ns, "jobs_waiting", map[string]string{"queue": "w"}, resource.MustParse("0"))
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "worker"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: deploymentRef("worker"),
				MinReplicas:    ptr.To(int32(0)),
				MaxReplicas:    10,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "jobs_waiting", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "w"}}},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("10"))},
				}}},
				// No stabilization: the spec does not wait 5s to scale down.
				Behavior: &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleDown: &autoscalingv2.HPAScalingRules{StabilizationWindowSeconds: ptr.To(int32(0))}},
			},
		}
		Expect(env.Client.Create(ctx, hpa)).To(Succeed())

		Eventually(replicasOf(ctx, ns, "worker")).Should(Equal(int32(0)))
		Eventually(func(g Gomega) {
			zero := condition(getHPA(ctx, g, ns, "worker"), autoscalingv2.ScaledToZero)
			g.Expect(zero.Status).To(Equal(corev1.ConditionTrue))
			g.Expect(zero.Reason).To(Equal("ScaledToZero"))
		}).Should(Succeed())

		By("scaling back from zero when work arrives: 25 against 10")
		metrics.SetExternalMetric(ns, "jobs_waiting", map[string]string{"queue": "w"}, resource.MustParse("25"))
		Eventually(replicasOf(ctx, ns, "worker")).Should(Equal(int32(3)))
		Eventually(func(g Gomega) {
			h := getHPA(ctx, g, ns, "worker")
			zero := condition(h, autoscalingv2.ScaledToZero)
			g.Expect(zero.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(zero.Reason).To(Equal("NotScaledToZero"))
			g.Expect(h.Status.CurrentMetrics[0].External.Current.Value.String()).To(Equal("25"))
		}).Should(Succeed())
	})

	It("reports a target it cannot read: AbleToScale False FailedGetScale", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-notarget")
		cpuHPA(ctx, ns, "ghost", deploymentRef("ghost"), 1, 10, 50)
		Eventually(func(g Gomega) {
			able := condition(getHPA(ctx, g, ns, "ghost"), autoscalingv2.AbleToScale)
			g.Expect(able.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(able.Reason).To(Equal("FailedGetScale"))
			g.Expect(able.Message).To(Equal(`the HPA controller was unable to get the target's current scale: deployments.apps "ghost" not found`))
			failed := events(ctx, g, ns, "ghost", "FailedGetScale")
			g.Expect(failed).NotTo(BeEmpty())
			g.Expect(failed[0].Message).To(Equal(`deployments.apps "ghost" not found`))
			g.Expect(failed[0].Type).To(Equal(corev1.EventTypeWarning))
		}).Should(Succeed())
	})

	It("scales on an Object metric, at most doubling per sync without behavior", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-object")
		deployment(ctx, ns, "front", 2)
		runningPods(ctx, ns, "front", 2)
		// The Service sees 3 times its target: 6 replicas asked for the 2 ready pods, 4 allowed
		// from 2 (upstream's rate without behavior), then 6 from 4 at the next sync.
		metrics.SetObjectMetric(ns, schema.GroupResource{Resource: "services"}, "front", "requests", resource.MustParse("300"))
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "front"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: deploymentRef("front"),
				MaxReplicas:    10,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ObjectMetricSourceType, Object: &autoscalingv2.ObjectMetricSource{
					DescribedObject: autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Service", Name: "front"},
					Metric:          autoscalingv2.MetricIdentifier{Name: "requests"},
					Target:          autoscalingv2.MetricTarget{Type: autoscalingv2.ValueMetricType, Value: ptr.To(resource.MustParse("100"))},
				}}},
			},
		}
		Expect(env.Client.Create(ctx, hpa)).To(Succeed())
		Eventually(replicasOf(ctx, ns, "front")).Should(Equal(int32(6)))
		Eventually(func(g Gomega) {
			var messages []string
			for _, e := range events(ctx, g, ns, "front", "SuccessfulRescale") {
				messages = append(messages, e.Message)
			}
			g.Expect(messages).To(ConsistOf(
				"New size: 4; reason: Service metric requests above target",
				"New size: 6; reason: Service metric requests above target"))
			h := getHPA(ctx, g, ns, "front")
			g.Expect(h.Status.CurrentMetrics[0].Object.Current.Value.String()).To(Equal("300"))
		}).Should(Succeed())
	})
})
