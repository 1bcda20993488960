package podautoscaler

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// calcNow is the calculator's clock in these tests.
var calcNow = time.Date(2026, 3, 4, 12, 0, 0, 0, time.UTC)

// fakeMetrics answers the calculator with fixed samples and records what it
// was asked.
type fakeMetrics struct {
	pods     map[string]int64 // per pod, milli-units; sampled 10s ago over 30s
	object   int64
	external []int64
	err      error

	askedContainer string
	askedSelector  labels.Selector
}

func (f *fakeMetrics) podInfo() PodMetricsInfo {
	res := PodMetricsInfo{}
	for name, v := range f.pods {
		res[name] = PodMetric{Timestamp: calcNow.Add(-10 * time.Second), Window: 30 * time.Second, Value: v}
	}
	return res
}

func (f *fakeMetrics) GetResourceMetric(_ context.Context, _ corev1.ResourceName, _ string, selector labels.Selector, container string) (PodMetricsInfo, time.Time, error) {
	f.askedContainer, f.askedSelector = container, selector
	if f.err != nil {
		return nil, time.Time{}, f.err
	}
	return f.podInfo(), calcNow.Add(-10 * time.Second), nil
}

func (f *fakeMetrics) GetRawMetric(_ context.Context, _, _ string, selector, _ labels.Selector) (PodMetricsInfo, time.Time, error) {
	f.askedSelector = selector
	if f.err != nil {
		return nil, time.Time{}, f.err
	}
	return f.podInfo(), calcNow.Add(-10 * time.Second), nil
}

func (f *fakeMetrics) GetObjectMetric(context.Context, string, string, *autoscalingv2.CrossVersionObjectReference, labels.Selector) (int64, time.Time, error) {
	if f.err != nil {
		return 0, time.Time{}, f.err
	}
	return f.object, calcNow.Add(-10 * time.Second), nil
}

func (f *fakeMetrics) GetExternalMetric(_ context.Context, _, _ string, selector labels.Selector) ([]int64, time.Time, error) {
	f.askedSelector = selector
	if f.err != nil {
		return nil, time.Time{}, f.err
	}
	return f.external, calcNow.Add(-10 * time.Second), nil
}

type podOpt func(*corev1.Pod)

// testPod is a running pod selected by app=web, ready for long, with one
// container "app" requesting 1 CPU and 1Gi.
func testPod(name string, opts ...podOpt) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ns", Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{
			Name:      "app",
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("1Gi")}},
		}}},
		Status: corev1.PodStatus{
			Phase:      corev1.PodRunning,
			StartTime:  &metav1.Time{Time: calcNow.Add(-10 * time.Minute)},
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: metav1.Time{Time: calcNow.Add(-9 * time.Minute)}}},
		},
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) podOpt { return func(p *corev1.Pod) { p.Status.Phase = ph } }

// started sets when the pod started, and its readiness and since when.
func started(ago time.Duration, ready corev1.ConditionStatus, readyAgo time.Duration) podOpt {
	return func(p *corev1.Pod) {
		p.Status.StartTime = &metav1.Time{Time: calcNow.Add(-ago)}
		p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: ready, LastTransitionTime: metav1.Time{Time: calcNow.Add(-readyAgo)}}}
	}
}

// neverReady: started a minute ago and not ready since.
func neverReady() podOpt { return started(time.Minute, corev1.ConditionFalse, time.Minute) }

func deleting() podOpt {
	return func(p *corev1.Pod) {
		p.DeletionTimestamp = &metav1.Time{Time: calcNow}
		p.Finalizers = []string{"example.com/hold"}
	}
}

func otherLabels() podOpt {
	return func(p *corev1.Pod) { p.Labels = map[string]string{"app": "other"} }
}

// containers replaces the pod's containers: name=cpuRequest pairs ("" no request).
func containers(spec ...string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Containers = nil
		for _, s := range spec {
			name, req, _ := strings.Cut(s, "=")
			c := corev1.Container{Name: name}
			if req != "" {
				c.Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)}
			}
			p.Spec.Containers = append(p.Spec.Containers, c)
		}
	}
}

func podLevelCPU(req string) podOpt {
	return func(p *corev1.Pod) {
		p.Spec.Resources = &corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(req)}}
	}
}

func newCalc(m MetricsClient, pods ...*corev1.Pod) *ReplicaCalculator {
	objs := make([]client.Object, 0, len(pods))
	for _, p := range pods {
		objs = append(objs, p)
	}
	return &ReplicaCalculator{
		Metrics:                       m,
		Pods:                          fake.NewClientBuilder().WithScheme(clientgoscheme.Scheme).WithObjects(objs...).Build(),
		CPUInitializationPeriod:       5 * time.Minute,
		DelayOfInitialReadinessStatus: 30 * time.Second,
		Clock:                         clocktesting.NewFakePassiveClock(calcNow),
		PodLevelResources:             true,
	}
}

var (
	webSelector = labels.SelectorFromSet(labels.Set{"app": "web"})
	defaultTol  = Tolerances{ScaleDown: 0.1, ScaleUp: 0.1}
)

func TestGetResourceReplicas(t *testing.T) {
	tests := []struct {
		name              string
		current           int32
		pods              []*corev1.Pod
		usage             map[string]int64
		metricsErr        error
		target            int32
		resource          corev1.ResourceName
		container         string
		tol               *Tolerances
		podLevelResources *bool
		want              int32
		wantUtilization   int32
		wantRaw           int64
		wantErr           string
	}{{
		// The HPA docs' rule: ceil(3 × 50% / 30%) = 5.
		name:    "scale up: ceil(current × usage / target)",
		current: 3,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
		usage:   map[string]int64{"a": 300, "b": 500, "c": 700},
		target:  30, want: 5, wantUtilization: 50, wantRaw: 500,
	}, {
		name:    "scale down: utilization rounded down, count rounded up",
		current: 5,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d"), testPod("e")},
		usage:   map[string]int64{"a": 100, "b": 300, "c": 500, "d": 250, "e": 250},
		target:  50, want: 3, wantUtilization: 28, wantRaw: 280,
	}, {
		name:    "memory",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b")},
		usage:   map[string]int64{"a": 1 << 30 * 1000, "b": 1 << 30 * 1000},
		target:  50, resource: corev1.ResourceMemory, want: 4, wantUtilization: 100, wantRaw: 1 << 30 * 1000,
	}, {
		name:    "within tolerance: no change",
		current: 3,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
		usage:   map[string]int64{"a": 1080, "b": 1080, "c": 1080},
		target:  100, want: 3, wantUtilization: 108, wantRaw: 1080,
	}, {
		name:    "scale-up tolerance apart from scale-down's: 8% over a 5% tolerance",
		current: 3,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
		usage:   map[string]int64{"a": 1080, "b": 1080, "c": 1080},
		target:  100, tol: &Tolerances{ScaleDown: 0.5, ScaleUp: 0.05}, want: 4, wantUtilization: 108, wantRaw: 1080,
	}, {
		name:    "scale-down tolerance apart from scale-up's: 20% under a 10% tolerance",
		current: 10,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d"), testPod("e"), testPod("f"), testPod("g"), testPod("h"), testPod("i"), testPod("j")},
		usage:   map[string]int64{"a": 800, "b": 800, "c": 800, "d": 800, "e": 800, "f": 800, "g": 800, "h": 800, "i": 800, "j": 800},
		target:  100, tol: &Tolerances{ScaleDown: 0.1, ScaleUp: 0.5}, want: 8, wantUtilization: 80, wantRaw: 800,
	}, {
		name:    "scale-down tolerance wide enough: no change",
		current: 10,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d"), testPod("e"), testPod("f"), testPod("g"), testPod("h"), testPod("i"), testPod("j")},
		usage:   map[string]int64{"a": 800, "b": 800, "c": 800, "d": 800, "e": 800, "f": 800, "g": 800, "h": 800, "i": 800, "j": 800},
		target:  100, tol: &Tolerances{ScaleDown: 0.25, ScaleUp: 0.01}, want: 10, wantUtilization: 80, wantRaw: 800,
	}, {
		// Ready pods at 60% of a 30% target; the unready one counts as 0%:
		// 1200/3000 = 40%, ceil(3 × 40/30) = 4.
		name:    "scale up: an unready pod counts as idle",
		current: 3,
		pods:    []*corev1.Pod{testPod("a", neverReady()), testPod("b"), testPod("c")},
		usage:   map[string]int64{"a": 300, "b": 500, "c": 700},
		target:  30, want: 4, wantUtilization: 60, wantRaw: 600,
	}, {
		// 40% of a 30% target from the ready pod, but counting the unready
		// ones idle gives 13%: the direction flips, so no change.
		name:    "scale up: unready pods turning the ratio below 1 keep the count",
		current: 3,
		pods:    []*corev1.Pod{testPod("a"), testPod("b", neverReady()), testPod("c", neverReady())},
		usage:   map[string]int64{"a": 400, "b": 500, "c": 700},
		target:  30, want: 3, wantUtilization: 40, wantRaw: 400,
	}, {
		name:    "scale down: unready pods' samples are not counted",
		current: 5,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d", neverReady()), testPod("e", neverReady())},
		usage:   map[string]int64{"a": 100, "b": 300, "c": 500, "d": 250, "e": 250},
		target:  50, want: 2, wantUtilization: 30, wantRaw: 300,
	}, {
		name:    "pending pods count unready; on a scale-down they do not matter",
		current: 5,
		pods: []*corev1.Pod{testPod("a"), testPod("b", phase(corev1.PodPending)), testPod("c", phase(corev1.PodPending)),
			testPod("d", phase(corev1.PodPending)), testPod("e", phase(corev1.PodPending))},
		usage:  map[string]int64{"a": 100},
		target: 50, want: 1, wantUtilization: 10, wantRaw: 100,
	}, {
		name:    "failed pods are ignored, not missing",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c", phase(corev1.PodFailed)), testPod("d", phase(corev1.PodFailed))},
		usage:   map[string]int64{"a": 500, "b": 700},
		target:  30, want: 4, wantUtilization: 60, wantRaw: 600,
	}, {
		name:    "pods being deleted are ignored, their samples too",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c", deleting()), testPod("d", deleting())},
		usage:   map[string]int64{"a": 500, "b": 700, "c": 2000},
		target:  30, want: 4, wantUtilization: 60, wantRaw: 600,
	}, {
		name:    "pods not selected are not counted, their samples neither",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("x", otherLabels())},
		usage:   map[string]int64{"a": 500, "b": 700, "x": 5000},
		target:  30, want: 4, wantUtilization: 60, wantRaw: 600,
	}, {
		// 10% of 50%; the pod without a sample counts as using its whole
		// request: 1300/4000 = 32%, ceil(4 × 32/50) = 3.
		name:    "scale down: a pod without a sample counts as using its request",
		current: 4,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d")},
		usage:   map[string]int64{"a": 100, "b": 100, "c": 100},
		target:  50, want: 3, wantUtilization: 10, wantRaw: 100,
	}, {
		// Target 200%: missing pods count at the target, 2×300 + 2×2000 over
		// 4000 = 115%, ceil(4 × 115/200) = 3.
		name:    "scale down: a pod without a sample counts at a target above 100%",
		current: 4,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d")},
		usage:   map[string]int64{"a": 300, "b": 300},
		target:  200, want: 3, wantUtilization: 30, wantRaw: 300,
	}, {
		// 120% of 100%; three pods without samples counted idle give 15%:
		// the direction flips, so no change.
		name:    "scale up: pods without samples count as idle, and may cancel it",
		current: 4,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d")},
		usage:   map[string]int64{"a": 1200},
		target:  100, want: 4, wantUtilization: 120, wantRaw: 1200,
	}, {
		// 215% of 100% on one pod of two; with the other idle, 107%:
		// within tolerance, no change (else ceil(2 × 1.07) = 3).
		name:    "scale up: within tolerance once the missing pod counts idle",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b")},
		usage:   map[string]int64{"a": 2150},
		target:  100, want: 2, wantUtilization: 215, wantRaw: 2150,
	}, {
		name:    "scale up with a missing pod counted idle: ceil(pods × new ratio)",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b")},
		usage:   map[string]int64{"a": 3000},
		target:  100, want: 3, wantUtilization: 300, wantRaw: 3000,
	}, {
		// 20% of 50% on four pods, one without a sample counted at 100%:
		// 36%, ceil(5 × 36/50) = 4, above the current 2 on a scale-down.
		name:    "scale down whose count would grow keeps the count",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d"), testPod("e")},
		usage:   map[string]int64{"a": 200, "b": 200, "c": 200, "d": 200},
		target:  50, want: 2, wantUtilization: 20, wantRaw: 200,
	}, {
		name:    "container metric: only the named container's request",
		current: 3,
		pods: []*corev1.Pod{testPod("a", containers("app=1", "side=500m")), testPod("b", containers("app=1", "side=500m")),
			testPod("c", containers("app=1", "side=500m"))},
		usage:     map[string]int64{"a": 150, "b": 250, "c": 350},
		container: "side", target: 30, want: 5, wantUtilization: 50, wantRaw: 250,
	}, {
		name:    "containers summed without a container named",
		current: 3,
		pods: []*corev1.Pod{testPod("a", containers("app=1", "side=500m")), testPod("b", containers("app=1", "side=500m")),
			testPod("c", containers("app=1", "side=500m"))},
		usage:  map[string]int64{"a": 450, "b": 450, "c": 450},
		target: 30, want: 3, wantUtilization: 30, wantRaw: 450,
	}, {
		name:    "pod-level requests, gate on",
		current: 2,
		pods:    []*corev1.Pod{testPod("a", podLevelCPU("2")), testPod("b", podLevelCPU("2"))},
		usage:   map[string]int64{"a": 1000, "b": 1000},
		target:  25, want: 4, wantUtilization: 50, wantRaw: 1000,
	}, {
		name:    "pod-level requests, gate off: the containers' requests",
		current: 2,
		pods:    []*corev1.Pod{testPod("a", podLevelCPU("2")), testPod("b", podLevelCPU("2"))},
		usage:   map[string]int64{"a": 1000, "b": 1000},
		target:  25, podLevelResources: new(bool), want: 8, wantUtilization: 100, wantRaw: 1000,
	}, {
		name:    "no pods",
		current: 2,
		pods:    []*corev1.Pod{testPod("x", otherLabels())},
		usage:   map[string]int64{"x": 100},
		target:  50, wantErr: "no pods returned by selector while calculating replica count",
	}, {
		name:    "only unready pods sampled",
		current: 2,
		pods:    []*corev1.Pod{testPod("a", neverReady()), testPod("b")},
		usage:   map[string]int64{"a": 100},
		target:  50, wantErr: "did not receive metrics for targeted pods (pods might be unready)",
	}, {
		name:       "metrics API fails",
		current:    2,
		pods:       []*corev1.Pod{testPod("a")},
		metricsErr: errors.New("no metrics returned from resource metrics API"),
		target:     50, wantErr: "unable to get metrics for resource cpu: no metrics returned from resource metrics API",
	}, {
		name:    "a container without a request",
		current: 2,
		pods:    []*corev1.Pod{testPod("a"), testPod("b", containers("app=1", "side="))},
		usage:   map[string]int64{"a": 100, "b": 100},
		target:  50, wantErr: "missing request for cpu in container side of Pod b",
	}, {
		name:      "the named container absent",
		current:   2,
		pods:      []*corev1.Pod{testPod("a")},
		usage:     map[string]int64{"a": 100},
		container: "side", target: 50, wantErr: "container side not found in Pod a",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeMetrics{pods: tc.usage, err: tc.metricsErr}
			c := newCalc(m, tc.pods...)
			if tc.podLevelResources != nil {
				c.PodLevelResources = *tc.podLevelResources
			}
			tol := defaultTol
			if tc.tol != nil {
				tol = *tc.tol
			}
			res := tc.resource
			if res == "" {
				res = corev1.ResourceCPU
			}
			got, util, raw, ts, err := c.GetResourceReplicas(context.Background(), tc.current, tc.target, res, tol, "ns", webSelector, tc.container)
			if m.askedContainer != tc.container || m.askedSelector.String() != "app=web" {
				t.Errorf("asked for container %q selector %v", m.askedContainer, m.askedSelector)
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
			if got != tc.want || util != tc.wantUtilization || raw != tc.wantRaw {
				t.Errorf("got %d replicas at %d%% (raw %d), want %d at %d%% (raw %d)", got, util, raw, tc.want, tc.wantUtilization, tc.wantRaw)
			}
			if !ts.Equal(calcNow.Add(-10 * time.Second)) {
				t.Errorf("timestamp %v, want the metrics'", ts)
			}
		})
	}
}

func TestGetMetricReplicas(t *testing.T) {
	tests := []struct {
		name      string
		current   int32
		pods      []*corev1.Pod
		values    map[string]int64
		target    int64
		want      int32
		wantUsage int64
		wantErr   string
	}{{
		name:    "scale up: average over target",
		current: 3,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
		values:  map[string]int64{"a": 20000, "b": 10000, "c": 30000},
		target:  15000, want: 4, wantUsage: 20000,
	}, {
		name:    "scale down",
		current: 5,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c"), testPod("d"), testPod("e")},
		values:  map[string]int64{"a": 1000, "b": 2000, "c": 3000, "d": 4000, "e": 5000},
		target:  10000, want: 2, wantUsage: 3000,
	}, {
		name:    "within tolerance",
		current: 3,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
		values:  map[string]int64{"a": 10500, "b": 10500, "c": 10500},
		target:  10000, want: 3, wantUsage: 10500,
	}, {
		// Readiness is weighed for CPU only: a not-ready running pod's sample counts.
		name:    "a not-ready running pod's sample counts for a custom metric",
		current: 3,
		pods:    []*corev1.Pod{testPod("a", neverReady()), testPod("b"), testPod("c")},
		values:  map[string]int64{"a": 30000, "b": 30000, "c": 30000},
		target:  10000, want: 9, wantUsage: 30000,
	}, {
		// Pending pods count idle on a scale-up: 2×30000 + 0 over 3 =
		// 20000, ceil(3 × 2) = 6.
		name:    "scale up: a pending pod counts idle",
		current: 3,
		pods:    []*corev1.Pod{testPod("a", phase(corev1.PodPending)), testPod("b"), testPod("c")},
		values:  map[string]int64{"b": 30000, "c": 30000},
		target:  10000, want: 6, wantUsage: 30000,
	}, {
		// 5000 of 10000; the pod without a sample counts at the target:
		// 20000/3 = 6666, ceil(3 × 0.667) = 2.
		name:    "scale down: a pod without a sample counts at the target",
		current: 3,
		pods:    []*corev1.Pod{testPod("a"), testPod("b"), testPod("c")},
		values:  map[string]int64{"a": 5000, "b": 5000},
		target:  10000, want: 2, wantUsage: 5000,
	}, {
		name:    "no samples for the pods",
		current: 3,
		pods:    []*corev1.Pod{testPod("a", phase(corev1.PodPending))},
		values:  map[string]int64{"a": 5000},
		target:  10000, wantErr: "did not receive metrics for targeted pods (pods might be unready)",
	}}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalc(&fakeMetrics{pods: tc.values}, tc.pods...)
			got, usage, ts, err := c.GetMetricReplicas(context.Background(), tc.current, tc.target, "qps", defaultTol, "ns", webSelector, labels.Everything())
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || usage != tc.wantUsage || !ts.Equal(calcNow.Add(-10*time.Second)) {
				t.Errorf("got %d replicas at %d (%v), want %d at %d", got, usage, ts, tc.want, tc.wantUsage)
			}
		})
	}
	t.Run("metrics API fails", func(t *testing.T) {
		c := newCalc(&fakeMetrics{err: errors.New("boom")}, testPod("a"))
		_, _, _, err := c.GetMetricReplicas(context.Background(), 1, 1000, "qps", defaultTol, "ns", webSelector, labels.Everything())
		if err == nil || err.Error() != "unable to get metric qps: boom" {
			t.Errorf("error %v", err)
		}
	})
}

func TestGetRawResourceReplicas(t *testing.T) {
	// Average usage against a raw target; CPU readiness still weighed: the
	// starting pod's sample is dropped and it counts idle on a scale-up.
	c := newCalc(&fakeMetrics{pods: map[string]int64{"a": 900, "b": 900, "c": 2000}},
		testPod("a"), testPod("b"), testPod("c", neverReady()))
	got, usage, _, err := c.GetRawResourceReplicas(context.Background(), 3, 300, corev1.ResourceCPU, defaultTol, "ns", webSelector, "")
	if err != nil {
		t.Fatal(err)
	}
	// Ready: 900 of 300, ratio 3; with the unready pod idle: 600, ceil(3 × 2) = 6.
	if got != 6 || usage != 900 {
		t.Errorf("got %d replicas at %d, want 6 at 900", got, usage)
	}
	c = newCalc(&fakeMetrics{err: errors.New("boom")}, testPod("a"))
	if _, _, _, err := c.GetRawResourceReplicas(context.Background(), 3, 300, corev1.ResourceMemory, defaultTol, "ns", webSelector, ""); err == nil || err.Error() != "unable to get metrics for resource memory: boom" {
		t.Errorf("error %v", err)
	}
}

func TestGetObjectMetricReplicas(t *testing.T) {
	ref := &autoscalingv2.CrossVersionObjectReference{APIVersion: "networking.k8s.io/v1", Kind: "Ingress", Name: "front"}
	pods := []*corev1.Pod{testPod("a"), testPod("b"), testPod("c", neverReady()), testPod("d", phase(corev1.PodPending))}
	tests := []struct {
		name    string
		current int32
		value   int64
		target  int64
		want    int32
		wantErr string
	}{
		// Object metrics scale the ready, running pods: ceil(2 × 2) = 4.
		{name: "scale up by the ready pods", current: 4, value: 20000, target: 10000, want: 4},
		{name: "scale down by the ready pods", current: 4, value: 2000, target: 10000, want: 1},
		{name: "within tolerance", current: 4, value: 10500, target: 10000, want: 4},
		// From zero replicas the ratio alone, tolerance or not.
		{name: "from zero: ceil(ratio)", current: 0, value: 2500, target: 1000, want: 3},
		{name: "from zero within tolerance", current: 0, value: 1050, target: 1000, want: 2},
		{name: "from zero, nothing to do", current: 0, value: 0, target: 1000, want: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalc(&fakeMetrics{object: tc.value}, pods...)
			got, usage, ts, err := c.GetObjectMetricReplicas(context.Background(), tc.current, tc.target, "rps", defaultTol, "ns", ref, webSelector, labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			// As upstream, no timestamp comes back from an object metric.
			if got != tc.want || usage != tc.value || !ts.IsZero() {
				t.Errorf("got %d replicas at %d (%v), want %d at %d", got, usage, ts, tc.want, tc.value)
			}
		})
	}
	t.Run("metrics API fails", func(t *testing.T) {
		c := newCalc(&fakeMetrics{err: errors.New("boom")}, pods...)
		_, _, _, err := c.GetObjectMetricReplicas(context.Background(), 2, 1000, "rps", defaultTol, "ns", ref, webSelector, labels.Everything())
		if err == nil || err.Error() != "unable to get metric rps on Ingress ns/front: boom" {
			t.Errorf("error %v", err)
		}
	})
	t.Run("no pods", func(t *testing.T) {
		c := newCalc(&fakeMetrics{object: 5000}, testPod("x", otherLabels()))
		_, _, _, err := c.GetObjectMetricReplicas(context.Background(), 2, 1000, "rps", defaultTol, "ns", ref, webSelector, labels.Everything())
		if err == nil || err.Error() != "unable to calculate ready pods: no pods returned by selector while calculating replica count" {
			t.Errorf("error %v", err)
		}
	})
}

func TestGetObjectPerPodMetricReplicas(t *testing.T) {
	ref := &autoscalingv2.CrossVersionObjectReference{APIVersion: "apps/v1", Kind: "Deployment", Name: "web"}
	tests := []struct {
		name      string
		status    int32
		value     int64
		target    int64
		want      int32
		wantUsage int64
	}{
		{name: "scale up: ceil(total / per-pod target)", status: 3, value: 9000, target: 1000, want: 9, wantUsage: 3000},
		{name: "scale down", status: 5, value: 1500, target: 1000, want: 2, wantUsage: 300},
		{name: "within tolerance: the status count", status: 3, value: 3100, target: 1000, want: 3, wantUsage: 1034},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			// No pods: per-pod object metrics go by the status' count alone.
			c := newCalc(&fakeMetrics{object: tc.value})
			got, usage, ts, err := c.GetObjectPerPodMetricReplicas(context.Background(), tc.status, tc.target, "rps", defaultTol, "ns", ref, labels.Everything())
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || usage != tc.wantUsage || !ts.Equal(calcNow.Add(-10*time.Second)) {
				t.Errorf("got %d replicas at %d (%v), want %d at %d", got, usage, ts, tc.want, tc.wantUsage)
			}
		})
	}
}

func TestGetExternalMetricReplicas(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "jobs"}}
	pods := []*corev1.Pod{testPod("a"), testPod("b"), testPod("c", phase(corev1.PodPending))}
	tests := []struct {
		name      string
		current   int32
		values    []int64
		target    int64
		want      int32
		wantUsage int64
	}{
		// The series are summed; the ready pods scale: ceil(2 × 3) = 6.
		{name: "series summed, ready pods scaled", current: 3, values: []int64{4000, 5000}, target: 3000, want: 6, wantUsage: 9000},
		{name: "within tolerance", current: 3, values: []int64{3100}, target: 3000, want: 3, wantUsage: 3100},
		{name: "from zero", current: 0, values: []int64{4000}, target: 3000, want: 2, wantUsage: 4000},
		{name: "overflow held at the largest value", current: 3, values: []int64{math.MaxInt64 - 5, 10, 20}, target: math.MaxInt64 / 4, want: 8, wantUsage: math.MaxInt64},
		{name: "huge ratio held at the largest count", current: 3, values: []int64{math.MaxInt64}, target: 1, want: math.MaxInt32, wantUsage: math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			m := &fakeMetrics{external: tc.values}
			c := newCalc(m, pods...)
			got, usage, ts, err := c.GetExternalMetricReplicas(context.Background(), tc.current, tc.target, "queue_depth", defaultTol, "ns", sel, webSelector)
			if err != nil {
				t.Fatal(err)
			}
			if m.askedSelector.String() != "queue=jobs" {
				t.Errorf("asked with selector %v, want queue=jobs", m.askedSelector)
			}
			if got != tc.want || usage != tc.wantUsage || !ts.IsZero() {
				t.Errorf("got %d replicas at %d (%v), want %d at %d", got, usage, ts, tc.want, tc.wantUsage)
			}
		})
	}
	t.Run("metrics API fails", func(t *testing.T) {
		c := newCalc(&fakeMetrics{err: errors.New("boom")}, pods...)
		_, _, _, err := c.GetExternalMetricReplicas(context.Background(), 3, 1000, "queue_depth", defaultTol, "ns", sel, webSelector)
		if err == nil || !strings.HasPrefix(err.Error(), "unable to get external metric ns/queue_depth/&LabelSelector{MatchLabels:map[string]string{queue: jobs,}") || !strings.HasSuffix(err.Error(), ": boom") {
			t.Errorf("error %v", err)
		}
	})
	t.Run("bad selector", func(t *testing.T) {
		c := newCalc(&fakeMetrics{external: []int64{1}}, pods...)
		bad := &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "q", Operator: "Near"}}}
		if _, _, _, err := c.GetExternalMetricReplicas(context.Background(), 3, 1000, "queue_depth", defaultTol, "ns", bad, webSelector); err == nil {
			t.Error("no error for an invalid selector")
		}
	})
}

func TestGetExternalPerPodMetricReplicas(t *testing.T) {
	sel := &metav1.LabelSelector{MatchLabels: map[string]string{"queue": "jobs"}}
	tests := []struct {
		name      string
		status    int32
		values    []int64
		target    int64
		want      int32
		wantUsage int64
	}{
		{name: "scale up: ceil(total / per-pod target)", status: 2, values: []int64{4000, 5000}, target: 1000, want: 9, wantUsage: 4500},
		{name: "scale down", status: 6, values: []int64{1000}, target: 1000, want: 1, wantUsage: 167},
		{name: "within tolerance", status: 3, values: []int64{3100}, target: 1000, want: 3, wantUsage: 1034},
		{name: "overflow held at the largest value", status: 2, values: []int64{math.MaxInt64, 1}, target: 1, want: math.MaxInt32, wantUsage: math.MaxInt64},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			c := newCalc(&fakeMetrics{external: tc.values})
			got, usage, ts, err := c.GetExternalPerPodMetricReplicas(context.Background(), tc.status, tc.target, "queue_depth", defaultTol, "ns", sel)
			if err != nil {
				t.Fatal(err)
			}
			if got != tc.want || usage != tc.wantUsage || !ts.Equal(calcNow.Add(-10*time.Second)) {
				t.Errorf("got %d replicas at %d (%v), want %d at %d", got, usage, ts, tc.want, tc.wantUsage)
			}
		})
	}
}
