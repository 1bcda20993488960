package podgc

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/manager"
)

// recorder lists the writes a pass makes, and the nodes it asks the API server about.
type recorder struct {
	mu     sync.Mutex
	writes []string
	gets   []string
}

func (r *recorder) add(list *[]string, s string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	*list = append(*list, s)
}

func (r *recorder) sortedWrites() string {
	r.mu.Lock()
	defer r.mu.Unlock()
	// By pod, keeping the order of each pod's writes.
	w := slices.Clone(r.writes)
	slices.SortStableFunc(w, func(a, b string) int {
		return strings.Compare(strings.Fields(a)[0], strings.Fields(b)[0])
	})
	r.writes = nil
	return strings.Join(w, "; ")
}

// fakes returns a reconciler whose cache holds objs and whose API server holds apiObjs.
func fakes(t *testing.T, threshold int, objs, apiObjs []client.Object) (*Reconciler, *clocktesting.FakePassiveClock, *recorder) {
	t.Helper()
	rec := &recorder{}
	cached := fake.NewClientBuilder().
		WithScheme(manager.Scheme()).
		WithObjects(objs...).
		WithStatusSubresource(&corev1.Pod{}).
		WithIndex(&corev1.Pod{}, index.PodNodeName, index.PodNodeNameOf).
		WithInterceptorFuncs(interceptor.Funcs{
			SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
				data, err := patch.Data(obj)
				if err != nil {
					return err
				}
				var p corev1.Pod
				if err := json.Unmarshal(data, &p); err != nil {
					return err
				}
				desc := fmt.Sprintf("%s: patch %s uid=%s phase=%s", obj.GetName(), sub, p.UID, p.Status.Phase)
				for _, c := range p.Status.Conditions {
					desc += fmt.Sprintf(" %s=%s/%s", c.Type, c.Status, c.Reason)
				}
				rec.add(&rec.writes, desc)
				return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
			},
			Delete: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.DeleteOption) error {
				o := &client.DeleteOptions{}
				o.ApplyOptions(opts)
				grace, uid := "nil", "nil"
				if o.GracePeriodSeconds != nil {
					grace = fmt.Sprint(*o.GracePeriodSeconds)
				}
				if o.Preconditions != nil && o.Preconditions.UID != nil {
					uid = string(*o.Preconditions.UID)
				}
				rec.add(&rec.writes, fmt.Sprintf("%s: delete grace=%s uid=%s", obj.GetName(), grace, uid))
				return c.Delete(ctx, obj, opts...)
			},
		}).Build()
	api := fake.NewClientBuilder().WithScheme(manager.Scheme()).WithObjects(apiObjs...).
		WithInterceptorFuncs(interceptor.Funcs{
			Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
				rec.add(&rec.gets, key.Name)
				return c.Get(ctx, key, obj, opts...)
			},
		}).Build()
	clk := clocktesting.NewFakePassiveClock(t0)
	return &Reconciler{
		Client: cached, APIReader: api, Clock: clk,
		TerminatedPodThreshold: threshold, Period: DefaultPeriod, Quarantine: DefaultQuarantine,
		quarantined: quarantine{},
	}, clk, rec
}

func boundPod(name, node string, phase corev1.PodPhase) *corev1.Pod {
	p := testPod(name, phase, t0)
	p.UID = types.UID("uid-" + name)
	p.Spec.NodeName = node
	return p
}

func terminating(p *corev1.Pod) *corev1.Pod {
	now := metav1.NewTime(t0)
	p.DeletionTimestamp = &now
	p.Finalizers = []string{"test/hold"}
	return p
}

func testNode(name string, ready corev1.ConditionStatus, taints ...corev1.Taint) *corev1.Node {
	return &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec:       corev1.NodeSpec{Taints: taints},
		Status:     corev1.NodeStatus{Conditions: []corev1.NodeCondition{{Type: corev1.NodeReady, Status: ready}}},
	}
}

func runPass(t *testing.T, r *Reconciler) {
	t.Helper()
	if err := r.gc(context.Background()); err != nil {
		t.Fatalf("gc: %v", err)
	}
}

func TestOrphanedAfterQuarantineAndAPIConfirmation(t *testing.T) {
	objs := []client.Object{
		boundPod("orphan", "gone", corev1.PodRunning),
		boundPod("lagging-pod", "lagging", corev1.PodRunning),
		boundPod("kept", "here", corev1.PodRunning),
		testNode("here", corev1.ConditionTrue),
	}
	// "lagging" exists in the API server but not yet in the cache.
	r, clk, rec := fakes(t, 0, objs, []client.Object{testNode("lagging", corev1.ConditionTrue)})

	runPass(t, r)
	clk.SetTime(t0.Add(DefaultQuarantine - time.Second))
	runPass(t, r)
	if w := rec.sortedWrites(); w != "" || len(rec.gets) != 0 {
		t.Fatalf("during the quarantine: writes %q, API reads %v", w, rec.gets)
	}

	clk.SetTime(t0.Add(DefaultQuarantine))
	runPass(t, r)
	want := "orphan: patch status uid=uid-orphan phase=Failed DisruptionTarget=True/DeletionByPodGC; orphan: delete grace=0 uid=uid-orphan"
	if w := rec.sortedWrites(); w != want {
		t.Errorf("after the quarantine: writes\n %q, want\n %q", w, want)
	}
	if got := strings.Join(rec.gets, ","); got != "gone,lagging" {
		t.Errorf("API reads %q, want gone,lagging", got)
	}

	// The node the API server knows is quarantined again, not collected.
	rec.gets = nil
	clk.SetTime(t0.Add(DefaultQuarantine + time.Second))
	runPass(t, r)
	clk.SetTime(t0.Add(2*DefaultQuarantine + time.Second))
	runPass(t, r)
	if w := rec.sortedWrites(); w != "" {
		t.Errorf("pod of a node the API server knows: writes %q", w)
	}
	if got := strings.Join(rec.gets, ","); got != "lagging" {
		t.Errorf("API reads %q, want lagging once more", got)
	}
}

func TestNodeThatShowsUpDuringQuarantine(t *testing.T) {
	r, clk, rec := fakes(t, 0, []client.Object{boundPod("p", "late", corev1.PodRunning)}, nil)
	runPass(t, r)
	if err := r.Client.Create(context.Background(), testNode("late", corev1.ConditionTrue)); err != nil {
		t.Fatal(err)
	}
	clk.SetTime(t0.Add(DefaultQuarantine))
	runPass(t, r)
	if w := rec.sortedWrites(); w != "" || len(rec.gets) != 0 {
		t.Errorf("writes %q, API reads %v; want none", w, rec.gets)
	}
}

func TestPass(t *testing.T) {
	outOfService := corev1.Taint{Key: corev1.TaintNodeOutOfService, Effect: corev1.TaintEffectNoExecute}
	tests := []struct {
		name      string
		threshold int
		objs      []client.Object
		want      string
	}{
		{
			name:      "terminated above the threshold: deleted without a status patch",
			threshold: 1,
			objs: []client.Object{
				boundPod("old", "", corev1.PodSucceeded),
				func() client.Object {
					p := boundPod("new", "", corev1.PodFailed)
					p.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
					return p
				}(),
			},
			want: "old: delete grace=0 uid=uid-old",
		},
		{
			name:      "threshold 0 keeps terminated pods",
			threshold: 0,
			objs:      []client.Object{boundPod("a", "", corev1.PodSucceeded), boundPod("b", "", corev1.PodSucceeded)},
		},
		{
			name: "unscheduled terminating: marked failed, no condition, deleted",
			objs: []client.Object{
				terminating(boundPod("doomed", "", corev1.PodPending)),
				boundPod("pending", "", corev1.PodPending),
			},
			want: "doomed: patch status uid=uid-doomed phase=Failed; doomed: delete grace=0 uid=uid-doomed",
		},
		{
			name:      "a pod collected for two reasons is deleted once",
			threshold: 1,
			objs: []client.Object{
				terminating(boundPod("both", "", corev1.PodFailed)),
				func() client.Object {
					p := boundPod("newer", "", corev1.PodSucceeded)
					p.CreationTimestamp = metav1.NewTime(t0.Add(time.Minute))
					return p
				}(),
			},
			want: "both: delete grace=0 uid=uid-both",
		},
		{
			name: "out of service: terminating pods of not-ready tainted nodes only",
			objs: []client.Object{
				testNode("oos", corev1.ConditionFalse, outOfService),
				testNode("ready-tainted", corev1.ConditionTrue, outOfService),
				testNode("not-ready", corev1.ConditionFalse),
				terminating(boundPod("victim", "oos", corev1.PodRunning)),
				boundPod("running", "oos", corev1.PodRunning),
				terminating(boundPod("on-ready", "ready-tainted", corev1.PodRunning)),
				terminating(boundPod("on-not-ready", "not-ready", corev1.PodRunning)),
			},
			want: "victim: patch status uid=uid-victim phase=Failed; victim: delete grace=0 uid=uid-victim",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r, _, rec := fakes(t, tt.threshold, tt.objs, nil)
			runPass(t, r)
			if w := rec.sortedWrites(); w != tt.want {
				t.Errorf("writes\n %q, want\n %q", w, tt.want)
			}
		})
	}
}
