package podautoscaler_test

import (
	"context"
	"fmt"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv"
)

// The test plays the kubelet (Running, Ready pods with CPU requests) and the metrics server
// (metricsapi); no deployment controller runs: /scale reads the Deployment's spec.replicas.

var cpuRequest = resource.MustParse("100m")

// Upstream's metric families.
const (
	subsystem       = "horizontal_pod_autoscaler_controller_"
	reconciliations = subsystem + "reconciliations_total"
	computations    = subsystem + "metric_computation_total"
)

// deployment creates a Deployment of replicas with selector app=name.
func deployment(ctx context.Context, ns, name string, replicas int32) *appsv1.Deployment {
	GinkgoHelper()
	d := &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(replicas),
			Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"app": name}},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "pause"}}},
			},
		},
	}
	Expect(env.Client.Create(ctx, d)).To(Succeed())
	return d
}

// runningPods creates n pods labeled app=app, started ten minutes ago (past the CPU
// initialization period) and Ready since then, as a kubelet reports them.
func runningPods(ctx context.Context, ns, app string, n int) {
	GinkgoHelper()
	started := metav1.NewTime(time.Now().Add(-10 * time.Minute))
	startedThen := func(s *corev1.PodStatus) { s.StartTime = &started }
	for i := range n {
		p := testenv.NewPod(ns, fmt.Sprintf("%s-%d", app, i), "")
		p.Labels = map[string]string{"app": app}
		p.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: cpuRequest}
		env.CreatePod(ctx, p, testenv.RunningSince(true, started.Time), startedThen)
	}
}

// cpuHPA autoscales the target on CPU utilization.
func cpuHPA(ctx context.Context, ns, name string, target autoscalingv2.CrossVersionObjectReference, minR, maxR, utilization int32) *autoscalingv2.HorizontalPodAutoscaler {
	GinkgoHelper()
	hpa := &autoscalingv2.HorizontalPodAutoscaler{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
			ScaleTargetRef: target,
			MinReplicas:    ptr.To(minR),
			MaxReplicas:    maxR,
			Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ResourceMetricSourceType, Resource: &autoscalingv2.ResourceMetricSource{
				Name: corev1.ResourceCPU, Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To(utilization)},
			}}},
		},
	}
	Expect(env.Client.Create(ctx, hpa)).To(Succeed())
	return hpa
}

func deploymentRef(name string) autoscalingv2.CrossVersionObjectReference {
	return autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: name}
}

func cpuUsage(ns, app, milli string) {
	metrics.SetPodUsage(ns, labels.SelectorFromSet(labels.Set{"app": app}), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(milli)})
}

func replicasOf(ctx context.Context, ns, name string) func() int32 {
	return func() int32 {
		d := &appsv1.Deployment{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, d); err != nil {
			return -1
		}
		return *d.Spec.Replicas
	}
}

func getHPA(ctx context.Context, g Gomega, ns, name string) *autoscalingv2.HorizontalPodAutoscaler {
	hpa := &autoscalingv2.HorizontalPodAutoscaler{}
	g.Expect(env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, hpa)).To(Succeed())
	return hpa
}

func condition(hpa *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range hpa.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

// events are the HPA's core/v1 Events with the reason.
func events(ctx context.Context, g Gomega, ns, hpa, reason string) []corev1.Event {
	list := &corev1.EventList{}
	g.Expect(env.Client.List(ctx, list, client.InNamespace(ns))).To(Succeed())
	var out []corev1.Event
	for _, e := range list.Items {
		if e.InvolvedObject.Kind == "HorizontalPodAutoscaler" && e.InvolvedObject.Name == hpa && e.Reason == reason {
			out = append(out, e)
		}
	}
	return out
}

var _ = Describe("horizontal-pod-autoscaler-controller", func() {
	It("scales a Deployment up on CPU utilization, reports the metric and conditions, and records the rescale", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-cpu")
		deployment(ctx, ns, "web", 2)
		runningPods(ctx, ns, "web", 2)
		cpuUsage(ns, "web", "50m") // 50% of the request: on target
		cpuHPA(ctx, ns, "web", deploymentRef("web"), 1, 10, 50)

		By("holding while usage is on target")
		Eventually(func(g Gomega) {
			hpa := getHPA(ctx, g, ns, "web")
			g.Expect(condition(hpa, autoscalingv2.ScalingActive).Reason).To(Equal("ValidMetricFound"))
			g.Expect(hpa.Status.CurrentMetrics).To(HaveLen(1))
			g.Expect(*hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization).To(Equal(int32(50)))
		}).Should(Succeed())
		Expect(replicasOf(ctx, ns, "web")()).To(Equal(int32(2)))

		scaleUps := testenv.Sample(reconciliations, map[string]string{"action": "scale_up", "error": "none"})
		upComputations := testenv.Sample(computations, map[string]string{"action": "scale_up", "error": "none", "metric_type": "Resource"})

		By("scaling to 3 when usage rises to 75%: ceil(2 x 75/50)")
		start := time.Now()
		cpuUsage(ns, "web", "75m")
		Eventually(replicasOf(ctx, ns, "web")).WithPolling(20 * time.Millisecond).Should(Equal(int32(3)))
		GinkgoWriter.Printf("reaction time, metric change -> /scale written: %v (sync period %s)\n", time.Since(start), syncPeriod)
		AddReportEntry("hpa reaction time", time.Since(start).String())

		Eventually(func(g Gomega) {
			hpa := getHPA(ctx, g, ns, "web")
			g.Expect(hpa.Status.DesiredReplicas).To(Equal(int32(3)))
			g.Expect(hpa.Status.LastScaleTime).NotTo(BeNil())
			g.Expect(hpa.Status.ObservedGeneration).To(Equal(ptr.To(hpa.Generation)))
			g.Expect(*hpa.Status.CurrentMetrics[0].Resource.Current.AverageUtilization).To(Equal(int32(75)))
			g.Expect(hpa.Status.CurrentMetrics[0].Resource.Current.AverageValue.String()).To(Equal("75m"))
			able := condition(hpa, autoscalingv2.AbleToScale)
			g.Expect(able.Status).To(Equal(corev1.ConditionTrue))
			g.Expect(condition(hpa, autoscalingv2.ScalingActive).Message).To(Equal(
				"the HPA was able to successfully calculate a replica count from cpu resource utilization (percentage of request)"))
			g.Expect(condition(hpa, autoscalingv2.ScalingLimited).Reason).To(Equal("DesiredWithinRange"))
			rescales := events(ctx, g, ns, "web", "SuccessfulRescale")
			g.Expect(rescales).To(HaveLen(1))
			g.Expect(rescales[0].Message).To(Equal("New size: 3; reason: cpu resource utilization (percentage of request) above target"))
			g.Expect(rescales[0].Source.Component).To(Equal("horizontal-pod-autoscaler"))
			g.Expect(rescales[0].Type).To(Equal(corev1.EventTypeNormal))
		}).Should(Succeed())

		By("recording upstream's metrics")
		Eventually(func(g Gomega) {
			g.Expect(testenv.Sample(subsystem+"desired_replicas", map[string]string{"namespace": ns, "hpa_name": "web"})).To(Equal(3.0))
		}).Should(Succeed())
		Eventually(func() float64 {
			return testenv.Sample(reconciliations, map[string]string{"action": "scale_up", "error": "none"})
		}).Should(BeNumerically(">", scaleUps))
		Eventually(func() float64 {
			return testenv.Sample(subsystem+"reconciliation_duration_seconds", map[string]string{"action": "scale_up", "error": "none"})
		}).Should(BeNumerically(">", 0))
		Eventually(func() float64 {
			return testenv.Sample(computations, map[string]string{"action": "scale_up", "error": "none", "metric_type": "Resource"})
		}).Should(BeNumerically(">", upComputations))
		Eventually(func() float64 {
			return testenv.Sample(subsystem+"metric_computation_duration_seconds", map[string]string{"action": "scale_up", "error": "none", "metric_type": "Resource"})
		}).Should(BeNumerically(">", 0))
		Eventually(func() float64 { return testenv.Sample(subsystem+"num_horizontal_pod_autoscalers", nil) }).Should(BeNumerically(">=", 1))
		Expect(testenv.LabelNames(reconciliations)).To(Equal([]string{"action", "error"}))
		Expect(testenv.LabelNames(computations)).To(Equal([]string{"action", "error", "metric_type"}))
	})

	It("waits for the downscale stabilization window before scaling down", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-down")
		deployment(ctx, ns, "web", 4)
		runningPods(ctx, ns, "web", 4)
		cpuUsage(ns, "web", "25m") // half the 50% target: ceil(4 x 25/50) = 2
		start := time.Now()
		cpuHPA(ctx, ns, "web", deploymentRef("web"), 1, 10, 50)

		By("holding the highest recent recommendation (the current 4) within the window")
		Eventually(func(g Gomega) {
			hpa := getHPA(ctx, g, ns, "web")
			able := condition(hpa, autoscalingv2.AbleToScale)
			g.Expect(able.Reason).To(Equal("ScaleDownStabilized"))
			g.Expect(able.Message).To(Equal("recent recommendations were higher than current one, applying the highest recent recommendation"))
			g.Expect(hpa.Status.DesiredReplicas).To(Equal(int32(4)))
		}).Should(Succeed())
		Expect(replicasOf(ctx, ns, "web")()).To(Equal(int32(4)))

		By("scaling down once the window has passed")
		Eventually(replicasOf(ctx, ns, "web")).WithTimeout(30 * time.Second).Should(Equal(int32(2)))
		elapsed := time.Since(start)
		GinkgoWriter.Printf("scale-down after %v (window %ds)\n", elapsed, downscaleWindowSecs)
		Expect(elapsed).To(BeNumerically(">=", downscaleWindowSecs*time.Second))
		Eventually(func(g Gomega) {
			rescales := events(ctx, g, ns, "web", "SuccessfulRescale")
			g.Expect(rescales).To(HaveLen(1))
			g.Expect(rescales[0].Message).To(Equal("New size: 2; reason: All metrics below target"))
		}).Should(Succeed())
	})

	It("reports a metric it cannot read: FailedGetResourceMetric, ScalingActive False", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-nometrics")
		deployment(ctx, ns, "web", 2)
		runningPods(ctx, ns, "web", 2) // no usage reported for them
		cpuHPA(ctx, ns, "web", deploymentRef("web"), 1, 10, 50)

		Eventually(func(g Gomega) {
			hpa := getHPA(ctx, g, ns, "web")
			active := condition(hpa, autoscalingv2.ScalingActive)
			g.Expect(active.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(active.Reason).To(Equal("FailedGetResourceMetric"))
			g.Expect(active.Message).To(HavePrefix("the HPA was unable to compute the replica count: failed to get cpu utilization: "))
			g.Expect(condition(hpa, autoscalingv2.AbleToScale).Reason).To(Equal("SucceededGetScale"))
			g.Expect(hpa.Status.CurrentReplicas).To(Equal(int32(2)))
			g.Expect(events(ctx, g, ns, "web", "FailedGetResourceMetric")).NotTo(BeEmpty())
			failed := events(ctx, g, ns, "web", "FailedComputeMetricsReplicas")
			g.Expect(failed).NotTo(BeEmpty())
			g.Expect(failed[0].Message).To(HavePrefix("invalid metrics (1 invalid out of 1), first error is: failed to get cpu resource metric value: failed to get cpu utilization: "))
		}).Should(Succeed())
		Expect(replicasOf(ctx, ns, "web")()).To(Equal(int32(2)))
		Eventually(func() float64 {
			return testenv.Sample(reconciliations, map[string]string{"action": "none", "error": "internal"})
		}).Should(BeNumerically(">", 0))
		Eventually(func() float64 {
			return testenv.Sample(computations, map[string]string{"action": "none", "error": "internal", "metric_type": "Resource"})
		}).Should(BeNumerically(">", 0))
	})

	It("refuses a second HPA on the same pods: AmbiguousSelector", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-ambiguous")
		deployment(ctx, ns, "web", 2)
		runningPods(ctx, ns, "web", 2)
		cpuUsage(ns, "web", "50m")
		cpuHPA(ctx, ns, "first", deploymentRef("web"), 1, 10, 50)
		Eventually(func(g Gomega) {
			g.Expect(condition(getHPA(ctx, g, ns, "first"), autoscalingv2.ScalingActive).Reason).To(Equal("ValidMetricFound"))
		}).Should(Succeed())
		cpuHPA(ctx, ns, "second", deploymentRef("web"), 1, 10, 50)
		Eventually(func(g Gomega) {
			hpa := getHPA(ctx, g, ns, "second")
			active := condition(hpa, autoscalingv2.ScalingActive)
			g.Expect(active.Status).To(Equal(corev1.ConditionFalse))
			g.Expect(active.Reason).To(Equal("AmbiguousSelector"))
			g.Expect(active.Message).To(HavePrefix("pods by selector app=web are controlled by more than one HPA"))
			g.Expect(events(ctx, g, ns, "second", "AmbiguousSelector")).NotTo(BeEmpty())
		}).Should(Succeed())
	})

	It("scales a custom resource through its scale subresource on an External metric", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "hpa-crd")
		widgetCRD(ctx)
		w := &unstructured.Unstructured{}
		w.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.kcm.io", Version: "v1", Kind: "Widget"})
		w.SetNamespace(ns)
		w.SetName("wid")
		Expect(unstructured.SetNestedField(w.Object, int64(2), "spec", "replicas")).To(Succeed())
		Eventually(func() error { return env.Client.Create(ctx, w) }).Should(Succeed())
		Expect(unstructured.SetNestedField(w.Object, "app=wid", "status", "selector")).To(Succeed())
		Expect(unstructured.SetNestedField(w.Object, int64(2), "status", "replicas")).To(Succeed())
		Expect(env.Client.Status().Update(ctx, w)).To(Succeed())
		runningPods(ctx, ns, "wid", 2)
		// 30 queued items at 10 per replica: 3 replicas.
		metrics.SetExternalMetric(ns, "queue_length", map[string]string{"queue": "wid"}, resource.MustParse("30"))
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "wid"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "test.kcm.io/v1", Kind: "Widget", Name: "wid"},
				MaxReplicas:    10,
				Metrics: []autoscalingv2.MetricSpec{{Type: autoscalingv2.ExternalMetricSourceType, External: &autoscalingv2.ExternalMetricSource{
					Metric: autoscalingv2.MetricIdentifier{Name: "queue_length", Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "wid"}}},
					Target: autoscalingv2.MetricTarget{Type: autoscalingv2.AverageValueMetricType, AverageValue: ptr.To(resource.MustParse("10"))},
				}}},
			},
		}
		Expect(env.Client.Create(ctx, hpa)).To(Succeed())
		Eventually(func(g Gomega) {
			g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(w), w)).To(Succeed())
			replicas, _, _ := unstructured.NestedInt64(w.Object, "spec", "replicas")
			g.Expect(replicas).To(Equal(int64(3)))
		}).Should(Succeed())
		Eventually(func(g Gomega) {
			hpa := getHPA(ctx, g, ns, "wid")
			g.Expect(hpa.Status.CurrentMetrics).To(HaveLen(1))
			// Per replica of those the target's status reports (still 2: no controller runs the
			// widgets), as upstream's GetExternalPerPodMetricReplicas.
			g.Expect(hpa.Status.CurrentMetrics[0].External.Current.AverageValue.String()).To(Equal("15"))
			rescales := events(ctx, g, ns, "wid", "SuccessfulRescale")
			g.Expect(rescales).To(HaveLen(1))
			g.Expect(rescales[0].Message).To(HavePrefix("New size: 3; reason: external metric queue_length("))
		}).Should(Succeed())
	})
})

// widgetCRD installs test.kcm.io/v1 Widget, namespaced, with a scale subresource, and waits
// until it is served.
func widgetCRD(ctx context.Context) {
	GinkgoHelper()
	crd := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1",
		"kind":       "CustomResourceDefinition",
		"metadata":   map[string]any{"name": "widgets.test.kcm.io"},
		"spec": map[string]any{
			"group": "test.kcm.io",
			"scope": "Namespaced",
			"names": map[string]any{"plural": "widgets", "singular": "widget", "kind": "Widget", "listKind": "WidgetList"},
			"versions": []any{map[string]any{
				"name": "v1", "served": true, "storage": true,
				"schema": map[string]any{"openAPIV3Schema": map[string]any{
					"type": "object", "x-kubernetes-preserve-unknown-fields": true,
				}},
				"subresources": map[string]any{
					"status": map[string]any{},
					"scale": map[string]any{
						"specReplicasPath":   ".spec.replicas",
						"statusReplicasPath": ".status.replicas",
						"labelSelectorPath":  ".status.selector",
					},
				},
			}},
		},
	}}
	Expect(env.Client.Create(ctx, crd)).To(Succeed())
	Eventually(func(g Gomega) {
		list := &unstructured.UnstructuredList{}
		list.SetGroupVersionKind(schema.GroupVersionKind{Group: "test.kcm.io", Version: "v1", Kind: "WidgetList"})
		g.Expect(env.Client.List(ctx, list)).To(Succeed())
	}).Should(Succeed())
}
