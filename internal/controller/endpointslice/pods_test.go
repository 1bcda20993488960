package endpointslice

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestPodChanged(t *testing.T) {
	tests := map[string]struct {
		mutate               func(*corev1.Pod)
		endpoint, membership bool
	}{
		"nothing":          {func(*corev1.Pod) {}, false, false},
		"annotation only":  {func(p *corev1.Pod) { p.Annotations = map[string]string{"a": "b"} }, false, false},
		"readiness":        {notReady, true, false},
		"deletion":         {deleting, true, false},
		"IP":               {ips("10.0.0.9"), true, false},
		"second IP":        {ips("10.0.0.1", "fd00::1"), true, false},
		"labels":           {func(p *corev1.Pod) { p.Labels["x"] = "y" }, false, true},
		"hostname":         {func(p *corev1.Pod) { p.Spec.Hostname = "h" }, false, true},
		"labels and ready": {func(p *corev1.Pod) { p.Labels["x"] = "y"; notReady(p) }, true, true},
	}
	for name, tt := range tests {
		old := testPod("p")
		cur := old.DeepCopy()
		tt.mutate(cur)
		endpoint, membership := podChanged(old, cur)
		if endpoint != tt.endpoint || membership != tt.membership {
			t.Errorf("%s: podChanged = %v, %v; want %v, %v", name, endpoint, membership, tt.endpoint, tt.membership)
		}
	}
}

func TestServicesToSync(t *testing.T) {
	set := func(names ...string) map[string]bool {
		m := map[string]bool{}
		for _, n := range names {
			m[n] = true
		}
		return m
	}
	keys := func(m map[string]bool) string {
		var out []string
		for k := range m {
			out = append(out, k)
		}
		sort.Strings(out)
		return fmt.Sprint(out)
	}
	if got := keys(servicesToSync(set("a", "b"), set("b", "c"), false)); got != "[a c]" {
		t.Errorf("labels only: %s, want the Services joined or left", got)
	}
	if got := keys(servicesToSync(set("a", "b"), set("b", "c"), true)); got != "[a b c]" {
		t.Errorf("labels and endpoint: %s, want all", got)
	}
}

// recordingQueue records AddAfter calls.
type recordingQueue struct {
	workqueue.TypedRateLimitingInterface[reconcile.Request]
	added map[string]time.Duration
}

func (q *recordingQueue) AddAfter(r reconcile.Request, d time.Duration) { q.added[r.String()] = d }

func TestPodEventsBatch(t *testing.T) {
	selecting := testService()
	other := testService(func(s *corev1.Service) { s.Name = "other"; s.Spec.Selector = map[string]string{"app": "db"} })
	noSelector := testService(func(s *corev1.Service) { s.Name = "manual"; s.Spec.Selector = nil })
	elsewhere := testService(func(s *corev1.Service) { s.Namespace = "ns2" })
	cl := fake.NewClientBuilder().WithObjects(selecting, other, noSelector, elsewhere).Build()
	r := &Reconciler{Client: cl, BatchPeriod: 5 * time.Second}
	h := r.podEvents()
	ctx := context.Background()

	q := &recordingQueue{added: map[string]time.Duration{}}
	old := testPod("p")
	old.ResourceVersion = "1"
	cur := old.DeepCopy()
	cur.ResourceVersion = "2"
	notReady(cur)
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: cur}, q)
	if fmt.Sprint(q.added) != "map[ns/web:5s]" {
		t.Errorf("readiness change queued %v, want ns/web after the 5s batch period", q.added)
	}

	q.added = map[string]time.Duration{}
	cur = old.DeepCopy()
	cur.ResourceVersion = "3"
	cur.Annotations = map[string]string{"irrelevant": "yes"}
	h.Update(ctx, event.TypedUpdateEvent[client.Object]{ObjectOld: old, ObjectNew: cur}, q)
	if len(q.added) != 0 {
		t.Errorf("irrelevant change queued %v", q.added)
	}

	q.added = map[string]time.Duration{}
	h.Create(ctx, event.TypedCreateEvent[client.Object]{Object: &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "db", Labels: map[string]string{"app": "db"}}}}, q)
	if fmt.Sprint(q.added) != "map[ns/other:5s]" {
		t.Errorf("new db pod queued %v", q.added)
	}
}

func TestAggregate(t *testing.T) {
	a, b := errors.New("a"), errors.New("b")
	if aggregate(nil) != nil || aggregate([]error{a}) != a {
		t.Error("none or one error: as is")
	}
	err := aggregate([]error{a, b})
	if err.Error() != "[a, b]" || !errors.Is(err, b) {
		t.Errorf("two errors: %q", err)
	}
}
