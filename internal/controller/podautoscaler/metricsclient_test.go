package podautoscaler

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clienttesting "k8s.io/client-go/testing"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	externalmetricsv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	metricsfake "k8s.io/metrics/pkg/client/clientset/versioned/fake"
	customfake "k8s.io/metrics/pkg/client/custom_metrics/fake"
	externalfake "k8s.io/metrics/pkg/client/external_metrics/fake"
)

var sampleTime = time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)

func podSample(name string, at time.Time, containers ...metricsv1beta1.ContainerMetrics) metricsv1beta1.PodMetrics {
	return metricsv1beta1.PodMetrics{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Timestamp:  metav1.Time{Time: at},
		Window:     metav1.Duration{Duration: 30 * time.Second},
		Containers: containers,
	}
}

func usage(name string, rl corev1.ResourceList) metricsv1beta1.ContainerMetrics {
	return metricsv1beta1.ContainerMetrics{Name: name, Usage: rl}
}

func cpuMem(cpu, mem string) corev1.ResourceList {
	rl := corev1.ResourceList{}
	if cpu != "" {
		rl[corev1.ResourceCPU] = resource.MustParse(cpu)
	}
	if mem != "" {
		rl[corev1.ResourceMemory] = resource.MustParse(mem)
	}
	return rl
}

func TestGetResourceMetric(t *testing.T) {
	later := sampleTime.Add(10 * time.Second)
	sample := func(v int64, at time.Time) PodMetric {
		return PodMetric{Timestamp: at, Window: 30 * time.Second, Value: v}
	}
	tests := []struct {
		name      string
		items     []metricsv1beta1.PodMetrics
		listErr   error
		resource  corev1.ResourceName
		container string
		want      PodMetricsInfo
		wantTime  time.Time
		wantErr   string
	}{{
		name: "containers summed per pod, each pod's own timestamp, first pod's timestamp returned",
		items: []metricsv1beta1.PodMetrics{
			podSample("a", sampleTime, usage("app", cpuMem("100m", "")), usage("side", cpuMem("250m", ""))),
			podSample("b", later, usage("app", cpuMem("1", ""))),
		},
		resource: corev1.ResourceCPU,
		want:     PodMetricsInfo{"a": sample(350, sampleTime), "b": sample(1000, later)},
		wantTime: sampleTime,
	}, {
		name: "memory in milli-units",
		items: []metricsv1beta1.PodMetrics{
			podSample("a", sampleTime, usage("app", cpuMem("", "1Ki"))),
		},
		resource: corev1.ResourceMemory,
		want:     PodMetricsInfo{"a": sample(1024000, sampleTime)},
		wantTime: sampleTime,
	}, {
		name: "a pod whose one container lacks the resource is left out, not summed partially",
		items: []metricsv1beta1.PodMetrics{
			podSample("a", sampleTime, usage("app", cpuMem("100m", "")), usage("side", cpuMem("", "1Mi"))),
			podSample("b", sampleTime, usage("app", cpuMem("200m", ""))),
		},
		resource: corev1.ResourceCPU,
		want:     PodMetricsInfo{"b": sample(200, sampleTime)},
		wantTime: sampleTime,
	}, {
		name: "a pod without containers is left out",
		items: []metricsv1beta1.PodMetrics{
			podSample("a", sampleTime),
			podSample("b", sampleTime, usage("app", cpuMem("200m", ""))),
		},
		resource: corev1.ResourceCPU,
		want:     PodMetricsInfo{"b": sample(200, sampleTime)},
		wantTime: sampleTime,
	}, {
		name: "container named: only its usage counts",
		items: []metricsv1beta1.PodMetrics{
			podSample("a", sampleTime, usage("app", cpuMem("100m", "")), usage("side", cpuMem("250m", ""))),
		},
		resource:  corev1.ResourceCPU,
		container: "side",
		want:      PodMetricsInfo{"a": sample(250, sampleTime)},
		wantTime:  sampleTime,
	}, {
		name: "container named: pods without it, or whose container lacks the resource, are left out",
		items: []metricsv1beta1.PodMetrics{
			podSample("a", sampleTime, usage("app", cpuMem("100m", ""))),
			podSample("b", sampleTime, usage("side", cpuMem("", "1Mi"))),
			podSample("c", sampleTime, usage("side", cpuMem("300m", "")), usage("app", cpuMem("", "1Mi"))),
		},
		resource:  corev1.ResourceCPU,
		container: "side",
		want:      PodMetricsInfo{"c": sample(300, sampleTime)},
		wantTime:  sampleTime,
	}, {
		name:     "nothing listed",
		resource: corev1.ResourceCPU,
		wantErr:  "no metrics returned from resource metrics API",
	}, {
		name:     "list fails",
		listErr:  errors.New("the server is currently unable to handle the request"),
		resource: corev1.ResourceCPU,
		wantErr:  "unable to fetch metrics from resource metrics API: the server is currently unable to handle the request",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &metricsfake.Clientset{}
			var gotSelector string
			fake.AddReactor("list", "pods", func(action clienttesting.Action) (bool, runtime.Object, error) {
				gotSelector = action.(clienttesting.ListAction).GetListRestrictions().Labels.String()
				return true, &metricsv1beta1.PodMetricsList{Items: tc.items}, tc.listErr
			})
			c := newMetricsClient(fake.MetricsV1beta1(), &customfake.FakeCustomMetricsClient{}, &externalfake.FakeExternalMetricsClient{})
			got, ts, err := c.GetResourceMetric(context.Background(), tc.resource, "ns", labels.SelectorFromSet(labels.Set{"app": "web"}), tc.container)
			if gotSelector != "app=web" {
				t.Errorf("listed with selector %q, want app=web", gotSelector)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("metrics %v, want %v", got, tc.want)
			}
			if !ts.Equal(tc.wantTime) {
				t.Errorf("timestamp %v, want %v", ts, tc.wantTime)
			}
		})
	}
}

func TestGetRawMetric(t *testing.T) {
	window := int64(45)
	tests := []struct {
		name    string
		items   []custommetricsv1beta2.MetricValue
		getErr  error
		want    PodMetricsInfo
		wantErr string
	}{{
		name: "per pod, windows as reported or a minute",
		items: []custommetricsv1beta2.MetricValue{
			{DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: "a"}, Timestamp: metav1.Time{Time: sampleTime}, WindowSeconds: &window, Value: resource.MustParse("2")},
			{DescribedObject: corev1.ObjectReference{Kind: "Pod", Name: "b"}, Timestamp: metav1.Time{Time: sampleTime.Add(time.Second)}, Value: resource.MustParse("500m")},
		},
		want: PodMetricsInfo{
			"a": {Timestamp: sampleTime, Window: 45 * time.Second, Value: 2000},
			"b": {Timestamp: sampleTime.Add(time.Second), Window: time.Minute, Value: 500},
		},
	}, {
		name:    "nothing returned",
		wantErr: "no metrics returned from custom metrics API",
	}, {
		name:    "get fails",
		getErr:  errors.New("boom"),
		wantErr: "unable to fetch metrics from custom metrics API: boom",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &customfake.FakeCustomMetricsClient{}
			var action customfake.GetForActionImpl
			fake.AddReactor("get", "pods", func(a clienttesting.Action) (bool, runtime.Object, error) {
				action = a.(customfake.GetForActionImpl)
				return true, &custommetricsv1beta2.MetricValueList{Items: tc.items}, tc.getErr
			})
			c := newMetricsClient(nil, fake, nil)
			got, ts, err := c.GetRawMetric(context.Background(), "qps", "ns", labels.SelectorFromSet(labels.Set{"app": "web"}), labels.Everything())
			if action.GetNamespace() != "ns" || action.GetName() != "*" || action.MetricName != "qps" || action.LabelSelector.String() != "app=web" {
				t.Errorf("asked for %s/%s %s selector %v, want ns/* qps app=web", action.GetNamespace(), action.GetName(), action.MetricName, action.LabelSelector)
			}
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				t.Errorf("metrics %v, want %v", got, tc.want)
			}
			if !ts.Equal(sampleTime) {
				t.Errorf("timestamp %v, want the first item's %v", ts, sampleTime)
			}
		})
	}
}

func TestGetObjectMetric(t *testing.T) {
	tests := []struct {
		name         string
		ref          autoscalingv2.CrossVersionObjectReference
		wantResource string
		wantNS       string
		wantName     string
	}{{
		name:         "namespaced object",
		ref:          autoscalingv2.CrossVersionObjectReference{APIVersion: appsv1.SchemeGroupVersion.String(), Kind: "Deployment", Name: "web"},
		wantResource: "deployments.apps",
		wantNS:       "ns",
		wantName:     "web",
	}, {
		name:         "namespace: root-scoped, the HPA's own namespace whatever the name",
		ref:          autoscalingv2.CrossVersionObjectReference{APIVersion: "v1", Kind: "Namespace", Name: "elsewhere"},
		wantResource: "namespaces",
		wantNS:       "",
		wantName:     "ns",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &customfake.FakeCustomMetricsClient{}
			var action customfake.GetForActionImpl
			fake.AddReactor("get", "*", func(a clienttesting.Action) (bool, runtime.Object, error) {
				action = a.(customfake.GetForActionImpl)
				return true, &custommetricsv1beta2.MetricValueList{Items: []custommetricsv1beta2.MetricValue{{
					Timestamp: metav1.Time{Time: sampleTime}, Value: resource.MustParse("1500m"),
				}}}, nil
			})
			c := newMetricsClient(nil, fake, nil)
			v, ts, err := c.GetObjectMetric(context.Background(), "hits", "ns", &tc.ref, labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			if v != 1500 || !ts.Equal(sampleTime) {
				t.Errorf("got %d at %v, want 1500 at %v", v, ts, sampleTime)
			}
			if r := action.GetResource().Resource; r != tc.wantResource || action.GetNamespace() != tc.wantNS || action.GetName() != tc.wantName || action.MetricName != "hits" {
				t.Errorf("asked for %s %s/%s %s, want %s %s/%s hits", r, action.GetNamespace(), action.GetName(), action.MetricName, tc.wantResource, tc.wantNS, tc.wantName)
			}
		})
	}
	t.Run("get fails", func(t *testing.T) {
		fake := &customfake.FakeCustomMetricsClient{}
		fake.AddReactor("get", "*", func(clienttesting.Action) (bool, runtime.Object, error) {
			return true, nil, errors.New("boom")
		})
		_, _, err := newMetricsClient(nil, fake, nil).GetObjectMetric(context.Background(), "hits", "ns",
			&autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}, labels.Everything())
		if err == nil || err.Error() != "unable to fetch metrics from custom metrics API: boom" {
			t.Errorf("error %v", err)
		}
	})
}

func TestGetExternalMetric(t *testing.T) {
	tests := []struct {
		name    string
		items   []externalmetricsv1beta1.ExternalMetricValue
		listErr error
		want    []int64
		wantErr string
	}{{
		name: "every series, first one's timestamp",
		items: []externalmetricsv1beta1.ExternalMetricValue{
			{MetricName: "queue", Timestamp: metav1.Time{Time: sampleTime}, Value: resource.MustParse("3")},
			{MetricName: "queue", Timestamp: metav1.Time{Time: sampleTime.Add(time.Second)}, Value: resource.MustParse("250m")},
		},
		want: []int64{3000, 250},
	}, {
		name:    "nothing returned",
		wantErr: "no metrics returned from external metrics API",
	}, {
		name:    "list fails",
		listErr: errors.New("boom"),
		wantErr: "unable to fetch metrics from external metrics API: boom",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			fake := &externalfake.FakeExternalMetricsClient{}
			var action clienttesting.ListAction
			fake.AddReactor("list", "queue", func(a clienttesting.Action) (bool, runtime.Object, error) {
				action = a.(clienttesting.ListAction)
				return true, &externalmetricsv1beta1.ExternalMetricValueList{Items: tc.items}, tc.listErr
			})
			c := newMetricsClient(nil, nil, fake)
			got, ts, err := c.GetExternalMetric(context.Background(), "queue", "ns", labels.SelectorFromSet(labels.Set{"q": "jobs"}))
			if action == nil || action.GetNamespace() != "ns" || action.GetListRestrictions().Labels.String() != "q=jobs" {
				t.Fatalf("listed %v, want ns with q=jobs", action)
			}
			if tc.wantErr != "" {
				if err == nil || !strings.EqualFold(err.Error(), tc.wantErr) {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) || !ts.Equal(sampleTime) {
				t.Errorf("got %v at %v, want %v at %v", got, ts, tc.want, sampleTime)
			}
		})
	}
}

// countingAPIs is an available-APIs cache that reports each invalidation.
type countingAPIs struct{ invalidated chan struct{} }

func (a *countingAPIs) PreferredVersion() (schema.GroupVersion, error) {
	return custommetricsv1beta2.SchemeGroupVersion, nil
}
func (a *countingAPIs) Invalidate() { a.invalidated <- struct{}{} }

func TestRunForgetsThePreferredVersion(t *testing.T) {
	apis := &countingAPIs{invalidated: make(chan struct{})}
	c := newMetricsClient(nil, nil, nil)
	c.apis = apis
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		c.Run(ctx, time.Millisecond)
		close(done)
	}()
	// Invalidated again and again, each period, until ctx ends. The bound
	// only turns a Run that never invalidates into a failure, not a hang.
	never := time.After(time.Minute)
	for range 3 {
		select {
		case <-apis.invalidated:
		case <-never:
			t.Fatal("the preferred version was never forgotten")
		}
	}
	cancel()
	for {
		select {
		case <-apis.invalidated:
		case <-done:
			return
		}
	}
}
