package metricsapi_test

import (
	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/restmapper"
	"k8s.io/metrics/pkg/client/clientset/versioned"
	"k8s.io/metrics/pkg/client/custom_metrics"
	"k8s.io/metrics/pkg/client/external_metrics"

	"github.com/kcm/kcm/internal/testenv/metricsapi"
)

var _ = Describe("the metrics API harness, read through the API server with k8s.io/metrics' clients", func() {
	It("answers pod metrics by selector: usage per container, a pod's own sample, and a deleted one", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "resource")
		web := map[string]string{"app": "web"}
		pod(ctx, ns, "web-1", web, "app", "sidecar")
		pod(ctx, ns, "web-2", web, "app", "sidecar")
		pod(ctx, ns, "web-3", web, "app", "sidecar")
		pod(ctx, ns, "other", map[string]string{"app": "other"}, "app")
		server.SetPodUsage(ns, labels.SelectorFromSet(web), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m")})
		server.SetPodMetrics(ns, "web-2", map[string]corev1.ResourceList{"app": {corev1.ResourceCPU: resource.MustParse("900m")}})
		server.DeletePodMetrics(ns, "web-3")
		// "other" matches the query's selector below only when asked for; its usage is set too,
		// so that the selector is what leaves it out.
		server.SetPodUsage(ns, labels.SelectorFromSet(map[string]string{"app": "other"}), corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")})

		before := server.Requests()
		mc, err := versioned.NewForConfig(asKCM())
		Expect(err).NotTo(HaveOccurred())
		list, err := mc.MetricsV1beta1().PodMetricses(ns).List(ctx, metav1.ListOptions{LabelSelector: "app=web"})
		Expect(err).NotTo(HaveOccurred())
		usage := map[string]map[string]string{}
		for _, m := range list.Items {
			Expect(m.Window.Duration).To(Equal(metricsapi.Window))
			Expect(m.Timestamp.IsZero()).To(BeFalse())
			usage[m.Name] = map[string]string{}
			for _, c := range m.Containers {
				usage[m.Name][c.Name] = c.Usage.Cpu().String()
			}
		}
		Expect(usage).To(Equal(map[string]map[string]string{
			"web-1": {"app": "250m", "sidecar": "250m"},
			"web-2": {"app": "900m"},
		}))

		one, err := mc.MetricsV1beta1().PodMetricses(ns).Get(ctx, "other", metav1.GetOptions{})
		Expect(err).NotTo(HaveOccurred())
		Expect(one.Containers).To(HaveLen(1))
		Expect(one.Containers[0].Usage.Cpu().String()).To(Equal("1"))
		_, err = mc.MetricsV1beta1().PodMetricses(ns).Get(ctx, "web-3", metav1.GetOptions{})
		Expect(err).To(MatchError(ContainSubstring("not found")))
		Expect(server.Requests()).To(Equal(before + 3))
	})

	It("answers custom pods and object metrics and external metrics by label selector", func(ctx SpecContext) {
		ns := env.Namespace(ctx, "custom")
		queue := map[string]string{"app": "queue"}
		pod(ctx, ns, "queue-1", queue, "app")
		pod(ctx, ns, "queue-2", queue, "app")
		pod(ctx, ns, "idle", map[string]string{"app": "idle"}, "app")
		server.SetPodsMetric(ns, labels.SelectorFromSet(queue), "packets-per-second", resource.MustParse("12"))
		server.SetObjectMetric(ns, schema.GroupResource{Group: "apps", Resource: "deployments"}, "front", "requests-per-second", resource.MustParse("1500m"))
		server.SetExternalMetric(ns, "queue-depth", map[string]string{"queue": "jobs", "region": "a"}, resource.MustParse("30"))
		server.SetExternalMetric(ns, "queue-depth", map[string]string{"queue": "jobs", "region": "b"}, resource.MustParse("12"))
		server.SetExternalMetric(ns, "queue-depth", map[string]string{"queue": "mail", "region": "a"}, resource.MustParse("7"))

		disco, err := discovery.NewDiscoveryClientForConfig(asKCM())
		Expect(err).NotTo(HaveOccurred())
		mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disco))
		custom := custom_metrics.NewForConfig(asKCM(), mapper, custom_metrics.NewAvailableAPIsGetter(disco))

		By("a Pods metric: every pod of the selector")
		values, err := custom.NamespacedMetrics(ns).GetForObjects(schema.GroupKind{Kind: "Pod"}, labels.Everything(), "packets-per-second", labels.Everything())
		Expect(err).NotTo(HaveOccurred())
		perPod := map[string]string{}
		for _, v := range values.Items {
			perPod[v.DescribedObject.Name] = v.Value.String()
		}
		Expect(perPod).To(Equal(map[string]string{"queue-1": "12", "queue-2": "12"}))

		By("an Object metric of a Deployment")
		v, err := custom.NamespacedMetrics(ns).GetForObject(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "front", "requests-per-second", labels.Everything())
		Expect(err).NotTo(HaveOccurred())
		Expect(v.Value.MilliValue()).To(Equal(int64(1500)))
		Expect(v.DescribedObject.Name).To(Equal("front"))
		_, err = custom.NamespacedMetrics(ns).GetForObject(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "back", "requests-per-second", labels.Everything())
		Expect(err).To(HaveOccurred())

		By("an External metric: the series matching the label selector")
		external, err := external_metrics.NewForConfig(asKCM())
		Expect(err).NotTo(HaveOccurred())
		sel, err := labels.Parse("queue=jobs")
		Expect(err).NotTo(HaveOccurred())
		series, err := external.NamespacedMetrics(ns).List("queue-depth", sel)
		Expect(err).NotTo(HaveOccurred())
		byRegion := map[string]int64{}
		for _, s := range series.Items {
			Expect(s.MetricName).To(Equal("queue-depth"))
			byRegion[s.MetricLabels["region"]] = s.Value.Value()
		}
		Expect(byRegion).To(Equal(map[string]int64{"a": 30, "b": 12}))
	})
})
