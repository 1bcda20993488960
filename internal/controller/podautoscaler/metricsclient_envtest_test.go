package podautoscaler_test

import (
	"context"
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	"github.com/kcm/kcm/internal/controller/podautoscaler"
	"github.com/kcm/kcm/internal/testenv"
	"github.com/kcm/kcm/internal/testenv/metricsapi"
)

// TestRESTMetricsClientThroughAggregator reads each of the three metrics
// APIs through a real API server's aggregation layer, served by the test
// harness, as the controller does: with the horizontal-pod-autoscaler
// ServiceAccount's rights (the API server's own
// system:controller:horizontal-pod-autoscaler role) and kcm's protobuf
// content type. It runs its own API server, apart from the controller's
// suite, so it depends on no spec state. It is in the external test package
// since testenv imports the controller registry, which imports this package.
func TestRESTMetricsClientThroughAggregator(t *testing.T) {
	if testing.Short() {
		t.Skip("starts an API server")
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	env, err := testenv.StartAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	}()
	server, err := metricsapi.Start(ctx, env.Config)
	if err != nil {
		t.Fatal(err)
	}
	defer server.Stop()

	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "metricsclient-"}}
	if err := env.Client.Create(ctx, ns); err != nil {
		t.Fatal(err)
	}
	web := labels.SelectorFromSet(labels.Set{"app": "web"})
	for _, name := range []string{"web-1", "web-2", "other"} {
		app := "web"
		if name == "other" {
			app = "other"
		}
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: name, Labels: map[string]string{"app": app}},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "busybox"}, {Name: "side", Image: "busybox"}}},
		}
		if err := env.Client.Create(ctx, p); err != nil {
			t.Fatal(err)
		}
	}

	cfg := rest.CopyConfig(env.Config)
	cfg.Impersonate = rest.ImpersonationConfig{
		UserName: "system:serviceaccount:kube-system:horizontal-pod-autoscaler",
		Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:kube-system", "system:authenticated"},
	}
	cfg.ContentType = runtime.ContentTypeProtobuf
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		t.Fatal(err)
	}
	mapper, err := apiutil.NewDynamicRESTMapper(cfg, httpClient)
	if err != nil {
		t.Fatal(err)
	}
	mc, err := podautoscaler.NewRESTMetricsClient(cfg, mapper)
	if err != nil {
		t.Fatal(err)
	}

	t.Run("resource metrics", func(t *testing.T) {
		server.SetPodMetrics(ns.Name, "web-1", map[string]corev1.ResourceList{
			"app":  {corev1.ResourceCPU: resource.MustParse("200m")},
			"side": {corev1.ResourceCPU: resource.MustParse("50m")},
		})
		server.SetPodMetrics(ns.Name, "web-2", map[string]corev1.ResourceList{
			"app": {corev1.ResourceCPU: resource.MustParse("400m")},
		})
		server.SetPodMetrics(ns.Name, "other", map[string]corev1.ResourceList{
			"app": {corev1.ResourceCPU: resource.MustParse("9")},
		})
		got, ts, err := mc.GetResourceMetric(ctx, corev1.ResourceCPU, ns.Name, web, "")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got["web-1"].Value != 250 || got["web-2"].Value != 400 || got["web-1"].Window != metricsapi.Window || ts.IsZero() {
			t.Errorf("pods' CPU %+v at %v, want web-1 250 and web-2 400 over %v", got, ts, metricsapi.Window)
		}
		got, _, err = mc.GetResourceMetric(ctx, corev1.ResourceCPU, ns.Name, web, "side")
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got["web-1"].Value != 50 {
			t.Errorf("side containers' CPU %+v, want web-1 50 only", got)
		}
		_, _, err = mc.GetResourceMetric(ctx, corev1.ResourceCPU, ns.Name, labels.SelectorFromSet(labels.Set{"app": "none"}), "")
		if err == nil || err.Error() != "no metrics returned from resource metrics API" {
			t.Errorf("error %v for no pods", err)
		}
	})

	t.Run("pods metric", func(t *testing.T) {
		server.SetPodsMetric(ns.Name, web, "qps", resource.MustParse("7"))
		got, ts, err := mc.GetRawMetric(ctx, "qps", ns.Name, web, labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 2 || got["web-1"].Value != 7000 || got["web-2"].Value != 7000 || ts.IsZero() {
			t.Errorf("qps %+v at %v, want 7000 for web-1 and web-2", got, ts)
		}
	})

	t.Run("object metric", func(t *testing.T) {
		server.SetObjectMetric(ns.Name, schema.GroupResource{Group: "apps", Resource: "deployments"}, "web", "hits", resource.MustParse("1500m"))
		v, ts, err := mc.GetObjectMetric(ctx, "hits", ns.Name,
			&autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		if v != 1500 || ts.IsZero() {
			t.Errorf("hits %d at %v, want 1500", v, ts)
		}
		// A namespace's metric is the HPA's own namespace's, asked root-scoped.
		server.SetObjectMetric("", schema.GroupResource{Resource: "namespaces"}, ns.Name, "load", resource.MustParse("3"))
		v, _, err = mc.GetObjectMetric(ctx, "load", ns.Name,
			&autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "elsewhere"}, labels.Everything())
		if err != nil {
			t.Fatal(err)
		}
		if v != 3000 {
			t.Errorf("namespace load %d, want 3000", v)
		}
	})

	t.Run("external metric", func(t *testing.T) {
		server.SetExternalMetric(ns.Name, "queue_depth", map[string]string{"queue": "jobs"}, resource.MustParse("12"))
		server.SetExternalMetric(ns.Name, "queue_depth", map[string]string{"queue": "mail"}, resource.MustParse("40"))
		got, ts, err := mc.GetExternalMetric(ctx, "queue_depth", ns.Name, labels.SelectorFromSet(labels.Set{"queue": "jobs"}))
		if err != nil {
			t.Fatal(err)
		}
		if len(got) != 1 || got[0] != 12000 || ts.IsZero() {
			t.Errorf("queue_depth %v at %v, want [12000]", got, ts)
		}
		_, _, err = mc.GetExternalMetric(ctx, "queue_depth", ns.Name, labels.SelectorFromSet(labels.Set{"queue": "none"}))
		if err == nil || err.Error() != "no metrics returned from external metrics API" {
			t.Errorf("error %v for no series", err)
		}
	})
}
