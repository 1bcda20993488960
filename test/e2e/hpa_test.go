//go:build e2e && linux

package e2e_test

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
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/testenv/metricsapi"
)

// The HPA reads CPU usage through metrics.k8s.io as on any cluster: the API server's
// aggregation layer proxies to a metrics API of the spec's own (internal/testenv/metricsapi),
// registered as the APIServices metrics-server would register. Its APIServices are
// cluster-wide, so the spec is Serial and unregisters them when it ends; kcm is restarted with
// a short sync period and downscale stabilization window, and with kubeadm's arguments again
// afterwards.
var _ = Describe("horizontal-pod-autoscaler-controller", Serial, func() {
	It("scales a Deployment on CPU utilization to the computed count, holds it, and scales down only after the stabilization window", func(ctx SpecContext) {
		const (
			syncPeriod = 2 * time.Second
			window     = 20 * time.Second
		)
		By(fmt.Sprintf("restarting kcm with --horizontal-pod-autoscaler-sync-period=%s --horizontal-pod-autoscaler-downscale-stabilization=%s", syncPeriod, window))
		restartKCM(ctx, "--horizontal-pod-autoscaler-sync-period="+syncPeriod.String(),
			"--horizontal-pod-autoscaler-downscale-stabilization="+window.String())
		DeferCleanup(func(ctx SpecContext) {
			By("restarting kcm with kubeadm's arguments")
			restartKCM(ctx)
		})

		By("registering the metrics API harness with the cluster's API server")
		metrics, err := metricsapi.Start(ctx, local.Config)
		Expect(err).NotTo(HaveOccurred())
		DeferCleanup(metrics.Stop)

		ns := newNamespace(ctx)
		app := map[string]string{"app": "web"}
		perPod := func(cpu string) {
			metrics.SetPodUsage(ns, labels.SelectorFromSet(app), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)})
		}
		d := newDeployment(ns, "web", 2)
		d.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100m")}
		Expect(cl.Create(ctx, d)).To(Succeed())
		hpa := &autoscalingv2.HorizontalPodAutoscaler{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
			Spec: autoscalingv2.HorizontalPodAutoscalerSpec{
				ScaleTargetRef: autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"},
				MinReplicas:    ptr.To[int32](1),
				MaxReplicas:    10,
				Metrics: []autoscalingv2.MetricSpec{{
					Type: autoscalingv2.ResourceMetricSourceType,
					Resource: &autoscalingv2.ResourceMetricSource{
						Name:   corev1.ResourceCPU,
						Target: autoscalingv2.MetricTarget{Type: autoscalingv2.UtilizationMetricType, AverageUtilization: ptr.To[int32](50)},
					},
				}},
			},
		}

		By("2 pods at 50m of their 100m request: the 50% target, nothing to do")
		perPod("50m")
		waitDeploymentComplete(ctx, ns, "web", 2)
		Expect(cl.Create(ctx, hpa)).To(Succeed())
		// Within the CPU initialization period (5m) a pod's sample counts once it was taken a
		// window (30s) after the pod became ready, as upstream's: until then the HPA has no
		// ready pod to compute from.
		Eventually(ctx, func(g Gomega) {
			h := getHPA(ctx, g, ns)
			g.Expect(hpaCondition(h, autoscalingv2.ScalingActive)).To(HaveField("Status", corev1.ConditionTrue), "ScalingActive")
			g.Expect(cpuUtilization(h)).To(Equal(int32(50)))
			g.Expect(h.Status.DesiredReplicas).To(Equal(int32(2)))
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)
		Expect(deploymentReplicas(ctx, ns)).To(Equal(int32(2)))

		By("usage rises to 80m per pod, 80% of the request: desired ceil(2 × 80/50) = ceil(3.2) = 4")
		rise := time.Now()
		perPod("80m")
		replicas := waitReplicasChange(ctx, ns, 2, 100*time.Millisecond)
		reaction := time.Since(rise)
		Expect(replicas).To(Equal(int32(4)), "the first scale of the Deployment")
		AddReportEntry("HPA reaction time: usage set to Deployment spec.replicas written", reaction.Round(time.Millisecond).String())
		GinkgoWriter.Printf("HPA reaction time (usage 80m set -> Deployment spec.replicas 4): %s (sync period %s)\n", reaction.Round(time.Millisecond), syncPeriod)
		expectEvent(ctx, ns, "SuccessfulRescale", "New size: 4; reason: cpu resource utilization (percentage of request) above target")

		By("the 4 pods at 50m each, the target: the HPA holds 4 until every new pod counts")
		perPod("50m")
		waitDeploymentComplete(ctx, ns, "web", 4)
		Eventually(ctx, func(g Gomega) {
			if n := deploymentReplicas(ctx, ns); n != 4 {
				StopTrying(fmt.Sprintf("the Deployment was scaled to %d while usage stayed at the target", n)).Now()
			}
			h := getHPA(ctx, g, ns)
			g.Expect(cpuUtilization(h)).To(Equal(int32(50)))
			g.Expect(h.Status.DesiredReplicas).To(Equal(int32(4)))
			// Every pod's sample counts (ready a window ago), so the scale-down below is
			// computed from all 4 pods.
			pods := livePods(g, ns, app)
			g.Expect(pods).To(HaveLen(4))
			for _, p := range pods {
				ready := podReadySince(p)
				g.Expect(ready).NotTo(BeZero(), "pod %s ready", p.Name)
				g.Expect(time.Since(ready)).To(BeNumerically(">", metricsapi.Window+time.Second), "pod %s ready for a window", p.Name)
			}
		}).WithTimeout(2*time.Minute).WithPolling(time.Second).Should(Succeed(), "logs in %s", logDir)

		By(fmt.Sprintf("usage falls to 10m per pod: desired ceil(4 × 10/50) = 1, held at 4 for the %s window", window))
		fall := time.Now()
		perPod("10m")
		Eventually(ctx, func(g Gomega) {
			if n := deploymentReplicas(ctx, ns); n != 4 {
				StopTrying(fmt.Sprintf("the Deployment was scaled to %d %s after the fall, within the window", n, time.Since(fall))).Now()
			}
			h := getHPA(ctx, g, ns)
			g.Expect(cpuUtilization(h)).To(Equal(int32(10)))
			g.Expect(hpaCondition(h, autoscalingv2.AbleToScale)).To(And(
				HaveField("Status", corev1.ConditionTrue),
				HaveField("Reason", "ScaleDownStabilized"),
				HaveField("Message", "recent recommendations were higher than current one, applying the highest recent recommendation"),
			))
		}).WithTimeout(window/2).WithPolling(200*time.Millisecond).Should(Succeed(), "logs in %s", logDir)
		// The last recommendation of 4 was made by the last sync that read the high usage, at
		// most a sync period before the fall.
		Consistently(ctx, func() int32 { return deploymentReplicas(ctx, ns) }).
			WithTimeout(time.Until(fall.Add(window-syncPeriod-time.Second))).WithPolling(200*time.Millisecond).
			Should(Equal(int32(4)), "scaled down within the stabilization window")
		replicas = waitReplicasChange(ctx, ns, 4, 200*time.Millisecond)
		down := time.Since(fall)
		Expect(replicas).To(Equal(int32(1)), "the scale-down")
		GinkgoWriter.Printf("scaled down %s after the usage fell (window %s, sync period %s)\n", down.Round(time.Millisecond), window, syncPeriod)
		AddReportEntry("HPA scale-down after the usage fell (stabilization window 20s)", down.Round(time.Millisecond).String())
		expectEvent(ctx, ns, "SuccessfulRescale", "New size: 1; reason: All metrics below target")
	})
})

func getHPA(ctx context.Context, g Gomega, ns string) *autoscalingv2.HorizontalPodAutoscaler {
	h := &autoscalingv2.HorizontalPodAutoscaler{}
	g.Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, h)).To(Succeed())
	return h
}

func hpaCondition(h *autoscalingv2.HorizontalPodAutoscaler, t autoscalingv2.HorizontalPodAutoscalerConditionType) autoscalingv2.HorizontalPodAutoscalerCondition {
	for _, c := range h.Status.Conditions {
		if c.Type == t {
			return c
		}
	}
	return autoscalingv2.HorizontalPodAutoscalerCondition{}
}

// cpuUtilization is the CPU utilization status.currentMetrics reports, or -1.
func cpuUtilization(h *autoscalingv2.HorizontalPodAutoscaler) int32 {
	for _, m := range h.Status.CurrentMetrics {
		if m.Type == autoscalingv2.ResourceMetricSourceType && m.Resource != nil && m.Resource.Name == corev1.ResourceCPU &&
			m.Resource.Current.AverageUtilization != nil {
			return *m.Resource.Current.AverageUtilization
		}
	}
	return -1
}

// deploymentReplicas reads the web Deployment's spec.replicas: what the HPA writes through
// its scale subresource.
func deploymentReplicas(ctx context.Context, ns string) int32 {
	GinkgoHelper()
	d := &appsv1.Deployment{}
	Expect(cl.Get(ctx, client.ObjectKey{Namespace: ns, Name: "web"}, d)).To(Succeed())
	return ptr.Deref(d.Spec.Replicas, 1)
}

// waitReplicasChange polls the Deployment until spec.replicas is no longer from and returns
// the first other value seen.
func waitReplicasChange(ctx context.Context, ns string, from int32, polling time.Duration) int32 {
	GinkgoHelper()
	var n int32
	Eventually(ctx, func() int32 {
		n = deploymentReplicas(ctx, ns)
		return n
	}).WithTimeout(time.Minute).WithPolling(polling).ShouldNot(Equal(from), "the HPA scales the Deployment; logs in %s", logDir)
	return n
}

// podReadySince is when the pod last became Ready, or zero when it is not.
func podReadySince(p corev1.Pod) time.Time {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady && c.Status == corev1.ConditionTrue {
			return c.LastTransitionTime.Time
		}
	}
	return time.Time{}
}

func expectEvent(ctx context.Context, ns, reason, message string) {
	GinkgoHelper()
	Eventually(ctx, func(g Gomega) {
		events := &corev1.EventList{}
		g.Expect(cl.List(ctx, events, client.InNamespace(ns), client.MatchingFields{"involvedObject.name": "web"})).To(Succeed())
		g.Expect(events.Items).To(ContainElement(And(
			HaveField("InvolvedObject.Kind", "HorizontalPodAutoscaler"),
			HaveField("Source.Component", "horizontal-pod-autoscaler"),
			HaveField("Reason", reason),
			HaveField("Message", message),
		)))
	}).Should(Succeed(), "logs in %s", logDir)
}
