package invariants

import (
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

var t0 = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// sec is the observer time (or API time) s seconds into a test.
func sec(s float64) time.Time { return t0.Add(time.Duration(s * float64(time.Second))) }

const ns = "chaos"

func meta(name, uid string, owner ...metav1.OwnerReference) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: ns, Name: name, UID: types.UID(uid), OwnerReferences: owner}
}

func controlledBy(kind, name, uid string) metav1.OwnerReference {
	return metav1.OwnerReference{Kind: kind, Name: name, UID: types.UID(uid), Controller: ptr.To(true)}
}

func replicaSet(name string, replicas int32, deployment string) *appsv1.ReplicaSet {
	rs := &appsv1.ReplicaSet{ObjectMeta: meta(name, name), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas)}}
	if deployment != "" {
		rs.OwnerReferences = []metav1.OwnerReference{controlledBy("Deployment", deployment, deployment)}
	}
	return rs
}

func deployment(name string, replicas int32, surge intstr.IntOrString) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: meta(name, name), Spec: appsv1.DeploymentSpec{Replicas: ptr.To(replicas),
		Strategy: appsv1.DeploymentStrategy{Type: appsv1.RollingUpdateDeploymentStrategyType,
			RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: ptr.To(intstr.FromInt32(0))}}}}
}

func job(name string, parallelism, completions int32, indexed bool, finished *time.Time) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: meta(name, name), Spec: batchv1.JobSpec{Parallelism: ptr.To(parallelism), Completions: ptr.To(completions)}}
	if indexed {
		j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	}
	if finished != nil {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: metav1.NewTime(*finished)}}
	}
	return j
}

func daemonSet(name string, surge int) *appsv1.DaemonSet {
	ds := &appsv1.DaemonSet{ObjectMeta: meta(name, name)}
	ds.Spec.UpdateStrategy = appsv1.DaemonSetUpdateStrategy{Type: appsv1.RollingUpdateDaemonSetStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDaemonSet{MaxSurge: ptr.To(intstr.FromInt(surge))}}
	return ds
}

// podOf is a Pending pod of the owner of that kind (whose UID is its name), changed by opts.
func podOf(kind, owner, name, uid string, opts ...func(*corev1.Pod)) *corev1.Pod {
	p := &corev1.Pod{ObjectMeta: meta(name, uid, controlledBy(kind, owner, owner)), Status: corev1.PodStatus{Phase: corev1.PodPending}}
	for _, o := range opts {
		o(p)
	}
	return p
}

func phase(ph corev1.PodPhase) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Phase = ph } }
func deleting(p *corev1.Pod)                     { p.DeletionTimestamp = ptr.To(metav1.NewTime(t0)) }
func onNode(n string) func(*corev1.Pod)          { return func(p *corev1.Pod) { p.Spec.NodeName = n } }
func createdAt(t time.Time) func(*corev1.Pod) {
	return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(t) }
}
func index(i int) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: fmt.Sprint(i)}
	}
}

// pinnedTo is the node affinity the DaemonSet controller gives a pod before it is bound.
func pinnedTo(n string) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Spec.Affinity = &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
			NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchFields: []corev1.NodeSelectorRequirement{
				{Key: metav1.ObjectNameField, Operator: corev1.NodeSelectorOpIn, Values: []string{n}}}}}}}}
	}
}

func added(s float64, o runtime.Object) Event {
	return Event{Type: watch.Added, Object: o, Time: sec(s)}
}
func modified(s float64, o runtime.Object) Event {
	return Event{Type: watch.Modified, Object: o, Time: sec(s)}
}
func deleted(s float64, o runtime.Object) Event {
	return Event{Type: watch.Deleted, Object: o, Time: sec(s)}
}
func existing(o runtime.Object) Event {
	return Event{Type: watch.Added, Object: o, Time: sec(0), Existing: true}
}

// rsPod is a pod of ReplicaSet rs named and UID'd name.
func rsPod(rs, name string, opts ...func(*corev1.Pod)) *corev1.Pod {
	return podOf("ReplicaSet", rs, name, name, opts...)
}

// want is a violation in the tests' terms: seconds, rule, object.
type want struct {
	At     float64
	Rule   Rule
	Object string
}

func run(events []Event) []want {
	c := NewChecker(5 * time.Second)
	for _, e := range events {
		c.Observe(e)
	}
	c.Flush()
	var got []want
	for _, v := range c.Violations() {
		got = append(got, want{v.Time.Sub(t0).Seconds(), v.Rule, v.Object})
	}
	return got
}

// rollingUpdate is a Deployment of 10 (maxSurge 2, maxUnavailable 0) rolling from old to
// new, two pods at a time, as the Deployment controller does it, for steps steps; the first
// step scales the new ReplicaSet to first (2 is within surge).
func rollingUpdate(steps int, first int32) []Event {
	d := deployment("web", 10, intstr.FromInt32(2))
	es := []Event{added(0, d), added(0, replicaSet("old", 10, "web"))}
	for i := range 10 {
		es = append(es, added(0.1, rsPod("old", fmt.Sprintf("old-%d", i), phase(corev1.PodRunning))))
	}
	s := 1.0
	newReplicas, oldReplicas := int32(0), int32(10)
	for step := range steps {
		up := int32(2)
		if step == 0 {
			up = first
		}
		newReplicas += up
		es = append(es, modified(s, replicaSet("new", newReplicas, "web")))
		for i := range up {
			es = append(es, added(s+0.1, rsPod("new", fmt.Sprintf("new-%d-%d", step, i))))
		}
		// Both new pods turn ready; the old ReplicaSet is scaled down, then its pods go.
		oldReplicas -= 2
		es = append(es, modified(s+1, replicaSet("old", oldReplicas, "web")))
		for i := range 2 {
			name := fmt.Sprintf("old-%d", 2*step+i)
			es = append(es, modified(s+1.2, rsPod("old", name, phase(corev1.PodRunning), deleting)),
				deleted(s+1.5, rsPod("old", name, phase(corev1.PodRunning), deleting)))
		}
		s += 2
	}
	return es
}

func TestRules(t *testing.T) {
	finished := sec(100)
	tests := []struct {
		name   string
		events []Event
		want   []want
	}{
		// ReplicaSet
		{name: "replicaset within replicas", events: []Event{
			added(0, replicaSet("rs", 3, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")), added(1, rsPod("rs", "c")),
		}},
		{name: "replicaset creates one pod too many", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), added(2, rsPod("rs", "b")), added(3, rsPod("rs", "c")),
		}, want: []want{{3, RuleReplicaSetReplicas, "ReplicaSet chaos/rs"}}},
		{name: "replacements: terminal and terminating pods are not counted", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")),
			modified(2, rsPod("rs", "a", phase(corev1.PodFailed))), added(3, rsPod("rs", "c")),
			modified(4, rsPod("rs", "b", deleting)), added(4, rsPod("rs", "d")),
		}, want: []want{{4, RulePodLost, "ReplicaSet chaos/rs"}}}, // b deleted by someone: lost, not counted
		{name: "scale-down lag: live pods above the lowered replicas until deleted", events: []Event{
			added(0, replicaSet("rs", 3, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")), added(1, rsPod("rs", "c")),
			modified(10, replicaSet("rs", 1, "")), modified(12, rsPod("rs", "c", deleting)), deleted(13, rsPod("rs", "c", deleting)),
		}},
		{name: "replica created after the scale-down is seen, from the older spec, within grace", events: []Event{
			added(0, replicaSet("rs", 3, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")),
			modified(10, replicaSet("rs", 2, "")), added(11, rsPod("rs", "c")),
		}},
		{name: "replica created long after the scale-down", events: []Event{
			added(0, replicaSet("rs", 3, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")),
			modified(10, replicaSet("rs", 2, "")), added(16, rsPod("rs", "c")),
		}, want: []want{{16, RuleReplicaSetReplicas, "ReplicaSet chaos/rs"}}},
		{name: "late scale-up event inside the grace window", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")),
			added(10, rsPod("rs", "c")), modified(12, replicaSet("rs", 3, "")),
		}},
		{name: "scale-up seen beyond the grace window", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")),
			added(10, rsPod("rs", "c")), modified(16, replicaSet("rs", 3, "")),
		}, want: []want{{10, RuleReplicaSetReplicas, "ReplicaSet chaos/rs"}}},
		{name: "pods seen before their ReplicaSet", events: []Event{
			added(0, rsPod("rs", "a")), added(0, rsPod("rs", "b")), added(1, replicaSet("rs", 1, "")),
		}, want: []want{{0, RuleReplicaSetReplicas, "ReplicaSet chaos/rs"}}},
		{name: "pods of the observer's first list are no creations", events: []Event{
			existing(replicaSet("rs", 1, "")), existing(rsPod("rs", "a")), existing(rsPod("rs", "b")),
		}},

		// Deployment
		{name: "rolling update within maxSurge", events: rollingUpdate(5, 2)},
		{name: "rolling update whose first step is beyond maxSurge", events: rollingUpdate(1, 3),
			want: []want{{1, RuleDeploymentScale, "Deployment chaos/web"}, {1.1, RuleDeploymentSurge, "Deployment chaos/web"}}},
		{name: "old pods slow to go: the pod count breaks maxSurge, the ReplicaSets' specs do not", events: []Event{
			added(0, deployment("web", 2, intstr.FromInt32(1))), added(0, replicaSet("old", 2, "web")),
			added(0, rsPod("old", "o1")), added(0, rsPod("old", "o2")),
			added(1, replicaSet("new", 1, "web")), added(1.5, rsPod("new", "n1")),
			modified(3, replicaSet("old", 1, "web")), modified(3.2, replicaSet("new", 2, "web")), added(3.5, rsPod("new", "n2")),
			modified(4, rsPod("old", "o1", deleting)),
		}, want: []want{{3.5, RuleDeploymentSurge, "Deployment chaos/web"}}},
		{name: "deployment scale-up seen after its ReplicaSet's, within grace", events: []Event{
			added(0, deployment("web", 2, intstr.FromInt32(0))), added(0, replicaSet("rs", 2, "web")),
			added(0, rsPod("rs", "a")), added(0, rsPod("rs", "b")),
			modified(10, replicaSet("rs", 4, "web")), added(10.5, rsPod("rs", "c")), added(10.5, rsPod("rs", "d")),
			modified(12, deployment("web", 4, intstr.FromInt32(0))),
		}},
		{name: "deployment scaled down: its ReplicaSets are above the bound until scaled down", events: []Event{
			added(0, deployment("web", 4, intstr.FromInt32(0))), added(0, replicaSet("rs", 4, "web")),
			modified(10, deployment("web", 2, intstr.FromInt32(0))), modified(11, replicaSet("rs", 2, "web")),
		}},
		{name: "new ReplicaSet scaled beyond maxSurge", events: []Event{
			added(0, deployment("web", 2, intstr.FromInt32(1))), added(0, replicaSet("old", 2, "web")),
			added(0, rsPod("old", "o1")), added(0, rsPod("old", "o2")),
			added(1, replicaSet("new", 2, "web")), added(1.5, rsPod("new", "n1")), added(1.5, rsPod("new", "n2")),
		}, want: []want{{1, RuleDeploymentScale, "Deployment chaos/web"}, {1.5, RuleDeploymentSurge, "Deployment chaos/web"}}},

		// Job
		{name: "job finishing 10 completions 3 at a time", events: jobRun(false, 3)},
		{name: "indexed job finishing 10 completions 3 at a time", events: jobRun(true, 3)},
		{name: "job with one pod beyond parallelism", events: jobRun(false, 4),
			want: []want{{1, RuleJobParallelism, "Job chaos/job"}, {2, RuleJobParallelism, "Job chaos/job"}}}, // the last step has 2 pods
		{name: "parallelism raised, seen after the pod within grace", events: []Event{
			added(0, job("job", 1, 5, false, nil)), added(1, podOf("Job", "job", "a", "a")), added(2, podOf("Job", "job", "b", "b")),
			modified(3, job("job", 2, 5, false, nil)),
		}},
		{name: "more succeeded pods than completions", events: []Event{
			added(0, job("job", 3, 2, false, nil)),
			added(1, podOf("Job", "job", "a", "a", phase(corev1.PodSucceeded))),
			added(1, podOf("Job", "job", "b", "b", phase(corev1.PodSucceeded))),
			added(1, podOf("Job", "job", "c", "c", phase(corev1.PodSucceeded))),
		}, want: []want{{1, RuleJobCompletions, "Job chaos/job"}}},
		{name: "indexed job: one index succeeding twice is one completion", events: []Event{
			added(0, job("job", 3, 2, true, nil)),
			added(1, podOf("Job", "job", "a", "a", index(0), phase(corev1.PodSucceeded))),
			added(1, podOf("Job", "job", "b", "b", index(0), phase(corev1.PodSucceeded))),
			added(1, podOf("Job", "job", "c", "c", index(1), phase(corev1.PodSucceeded))),
		}},
		{name: "indexed job: more succeeded indices than completions", events: []Event{
			added(0, job("job", 3, 2, true, nil)),
			added(1, podOf("Job", "job", "a", "a", index(0), phase(corev1.PodSucceeded))),
			added(1, podOf("Job", "job", "b", "b", index(1), phase(corev1.PodSucceeded))),
			added(1, podOf("Job", "job", "c", "c", index(2), phase(corev1.PodSucceeded))),
		}, want: []want{{1, RuleJobCompletions, "Job chaos/job"}}},
		{name: "pod created after the job finished", events: []Event{
			added(0, job("job", 3, 2, false, &finished)),
			added(1, podOf("Job", "job", "a", "a", createdAt(sec(101)))),
			added(1, podOf("Job", "job", "b", "b", createdAt(sec(103)))),
		}, want: []want{{1, RuleJobFinished, "Job chaos/job"}}},
		{name: "late pod seen before the job's finish", events: []Event{
			added(0, job("job", 3, 2, false, nil)),
			added(1, podOf("Job", "job", "a", "a", createdAt(sec(103)))),
			modified(2, job("job", 3, 2, false, &finished)),
		}, want: []want{{2, RuleJobFinished, "Job chaos/job"}}},

		// StatefulSet
		{name: "statefulset pod recreated after its predecessor's Deleted event", events: []Event{
			added(0, &appsv1.StatefulSet{ObjectMeta: meta("db", "db")}),
			added(1, podOf("StatefulSet", "db", "db-0", "u1")), modified(2, podOf("StatefulSet", "db", "db-0", "u1", deleting)),
			deleted(3, podOf("StatefulSet", "db", "db-0", "u1", deleting)), added(3, podOf("StatefulSet", "db", "db-0", "u2")),
		}},
		{name: "two live pods with one ordinal", events: []Event{
			added(0, &appsv1.StatefulSet{ObjectMeta: meta("db", "db")}),
			added(1, podOf("StatefulSet", "db", "db-0", "u1")), added(3, podOf("StatefulSet", "db", "db-0", "u2")),
		}, want: []want{{3, RuleStatefulSetOrdinal, "StatefulSet chaos/db"}}},

		// DaemonSet
		{name: "one daemon pod per node, replaced after deletion", events: []Event{
			added(0, daemonSet("ds", 0)), added(1, podOf("DaemonSet", "ds", "a", "a", pinnedTo("n1"))),
			added(1, podOf("DaemonSet", "ds", "b", "b", pinnedTo("n2"))), modified(2, podOf("DaemonSet", "ds", "a", "a", onNode("n1"))),
			modified(3, podOf("DaemonSet", "ds", "a", "a", onNode("n1"), deleting)), added(3, podOf("DaemonSet", "ds", "c", "c", pinnedTo("n1"))),
		}},
		{name: "two daemon pods on one node", events: []Event{
			added(0, daemonSet("ds", 0)), added(1, podOf("DaemonSet", "ds", "a", "a", onNode("n1"))),
			added(2, podOf("DaemonSet", "ds", "b", "b", pinnedTo("n1"))),
		}, want: []want{{2, RuleDaemonSetNode, "DaemonSet chaos/ds"}}},
		{name: "daemon pod bound later to a node that has one", events: []Event{
			added(0, daemonSet("ds", 0)), added(1, podOf("DaemonSet", "ds", "a", "a", onNode("n1"))),
			added(2, podOf("DaemonSet", "ds", "b", "b")), modified(3, podOf("DaemonSet", "ds", "b", "b", onNode("n1"))),
		}, want: []want{{3, RuleDaemonSetNode, "DaemonSet chaos/ds"}}},
		{name: "two daemon pods on one node with maxSurge", events: []Event{
			added(0, daemonSet("ds", 1)), added(1, podOf("DaemonSet", "ds", "a", "a", onNode("n1"))),
			added(2, podOf("DaemonSet", "ds", "b", "b", pinnedTo("n1"))),
		}},

		// Nothing lost
		{name: "running pod of an unchanged ReplicaSet deleted", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a", phase(corev1.PodRunning))),
			modified(5, rsPod("rs", "a", phase(corev1.PodRunning), deleting)), deleted(6, rsPod("rs", "a", phase(corev1.PodRunning), deleting)),
		}, want: []want{{5, RulePodLost, "ReplicaSet chaos/rs"}}},
		{name: "pod deleted without a graceful deletion first", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), deleted(6, rsPod("rs", "a")),
		}, want: []want{{6, RulePodLost, "ReplicaSet chaos/rs"}}},
		{name: "scale-down seen after the deletion it caused, within grace", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")),
			modified(5, rsPod("rs", "a", deleting)), modified(7, replicaSet("rs", 1, "")),
		}},
		{name: "scale-down seen beyond grace after the deletion", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), added(1, rsPod("rs", "b")),
			modified(5, rsPod("rs", "a", deleting)), modified(11, replicaSet("rs", 1, "")),
		}, want: []want{{5, RulePodLost, "ReplicaSet chaos/rs"}}},
		{name: "pods of a ReplicaSet being deleted", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")), deleted(5, replicaSet("rs", 2, "")), deleted(6, rsPod("rs", "a")),
		}},
		{name: "pods of a namespace being deleted", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")),
			modified(5, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns, DeletionTimestamp: ptr.To(metav1.NewTime(t0))}}),
			deleted(6, rsPod("rs", "a")),
		}},
		{name: "finished pod deleted", events: []Event{
			added(0, replicaSet("rs", 2, "")), added(1, rsPod("rs", "a")),
			modified(2, rsPod("rs", "a", phase(corev1.PodFailed))), deleted(6, rsPod("rs", "a", phase(corev1.PodFailed))),
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, run(tt.events)); diff != "" {
				t.Errorf("violations (-want +got):\n%s", diff)
			}
		})
	}
}

// jobRun is a Job of 10 completions, parallelism 3, whose controller keeps perStep pods
// running (3 is right), each succeeding a second later, then finishes.
func jobRun(indexed bool, perStep int) []Event {
	j := job("job", 3, 10, indexed, nil)
	es := []Event{added(0, j)}
	done, s := 0, 1.0
	for done < 10 {
		var batch []*corev1.Pod
		for i := 0; i < perStep && done+i < 10; i++ {
			name := fmt.Sprintf("job-%d", done+i)
			p := podOf("Job", "job", name, name, index(done+i), createdAt(sec(s)))
			batch = append(batch, p)
			es = append(es, added(s, p))
		}
		for _, p := range batch {
			p = p.DeepCopy()
			p.Status.Phase = corev1.PodSucceeded
			es = append(es, modified(s+0.5, p))
		}
		done += len(batch)
		s++
	}
	finished := sec(s)
	return append(es, modified(s, job("job", 3, 10, indexed, &finished)))
}

func TestMaxOvershoot(t *testing.T) {
	c := NewChecker(0)
	for _, e := range rollingUpdate(5, 2) {
		c.Observe(e)
	}
	c.Flush()
	if diff := cmp.Diff(map[string]int{"chaos/web": 2}, c.MaxOvershoot()); diff != "" {
		t.Errorf("overshoot (-want +got):\n%s", diff)
	}
}

func TestMaxSurge(t *testing.T) {
	for _, tt := range []struct {
		name     string
		replicas int32
		surge    *intstr.IntOrString
		recreate bool
		want     int
	}{
		{name: "unset is 25%, rounded up", replicas: 10, want: 3},
		{name: "integer", replicas: 10, surge: ptr.To(intstr.FromInt32(2)), want: 2},
		{name: "percentage rounded up", replicas: 10, surge: ptr.To(intstr.FromString("11%")), want: 2},
		{name: "zero", replicas: 10, surge: ptr.To(intstr.FromInt32(0)), want: 0},
		{name: "recreate", replicas: 10, recreate: true, want: 0},
	} {
		t.Run(tt.name, func(t *testing.T) {
			d := &appsv1.Deployment{Spec: appsv1.DeploymentSpec{Replicas: ptr.To(tt.replicas)}}
			if tt.recreate {
				d.Spec.Strategy.Type = appsv1.RecreateDeploymentStrategyType
			} else if tt.surge != nil {
				d.Spec.Strategy.RollingUpdate = &appsv1.RollingUpdateDeployment{MaxSurge: tt.surge}
			}
			if got := MaxSurge(d); got != tt.want {
				t.Errorf("MaxSurge = %d, want %d", got, tt.want)
			}
		})
	}
}

func TestHistoryMaxIn(t *testing.T) {
	var h history
	h.set(sec(0), 3)
	h.set(sec(10), 2)
	h.set(sec(20), 5)
	for _, tt := range []struct {
		from, to float64
		want     int
	}{
		{-5, -1, 3}, // before anything was seen: the first value
		{1, 9, 3},
		{11, 19, 2},
		{5, 15, 3},
		{11, 25, 5},
		{30, 40, 5},
	} {
		if got, _ := h.maxIn(sec(tt.from), sec(tt.to)); got != tt.want {
			t.Errorf("maxIn(%v, %v) = %d, want %d", tt.from, tt.to, got, tt.want)
		}
	}
	h.prune(sec(15))
	if got, _ := h.maxIn(sec(15), sec(16)); got != 2 {
		t.Errorf("after prune, maxIn(15, 16) = %d, want 2", got)
	}
}
