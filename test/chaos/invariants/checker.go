package invariants

import (
	"fmt"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
)

// Rule names one invariant; see the package documentation for what each means exactly.
type Rule string

const (
	RuleReplicaSetReplicas Rule = "ReplicaSetReplicas"
	RuleDeploymentSurge    Rule = "DeploymentSurge"
	RuleDeploymentScale    Rule = "DeploymentScale"
	RuleJobParallelism     Rule = "JobParallelism"
	RuleJobCompletions     Rule = "JobCompletions"
	RuleJobFinished        Rule = "JobFinished"
	RuleStatefulSetOrdinal Rule = "StatefulSetOrdinal"
	RuleDaemonSetNode      Rule = "DaemonSetNode"
	RulePodLost            Rule = "PodLost"
)

// DefaultGrace is how far apart in the observer's time two events of different kinds may be
// seen and still be taken as one moment.
const DefaultGrace = 5 * time.Second

// Violation is one broken promise.
type Violation struct {
	// Time is when the observer saw the event that broke the rule (not when it judged it).
	Time time.Time `json:"time"`
	Rule Rule      `json:"rule"`
	// Object is the owner whose promise broke, as "Kind namespace/name".
	Object string `json:"object"`
	Detail string `json:"detail"`
}

func (v Violation) String() string {
	return fmt.Sprintf("%s %s %s: %s", v.Time.UTC().Format("15:04:05.000"), v.Rule, v.Object, v.Detail)
}

// Event is one object event as the observer saw it.
type Event struct {
	// Type is watch.Added, watch.Modified or watch.Deleted.
	Type watch.EventType
	// Object is a *corev1.Pod, *corev1.Namespace, *appsv1.ReplicaSet, *appsv1.Deployment,
	// *appsv1.StatefulSet, *appsv1.DaemonSet or *batchv1.Job; anything else is ignored.
	Object runtime.Object
	// Time is the observer's clock when the event arrived; it must not go backwards.
	Time time.Time
	// Existing marks an object of the observer's first list: it was there before the
	// observer started, so its appearance is not a creation.
	Existing bool
}

// Checker holds what the rules need of the events seen so far. It does no I/O and is not
// safe for concurrent use: feed it under one lock.
type Checker struct {
	grace time.Duration

	pods   map[types.UID]*pod
	owners map[types.UID]*owner
	// ownersIn lists the owners by namespace, for counting a Deployment's pods at a moment.
	ownersIn map[string]map[types.UID]*owner
	// namespaceDeleting is when each namespace was first seen being deleted.
	namespaceDeleting map[string]time.Time
	// podNames holds the live pods of StatefulSets by namespace/name.
	podNames map[string]map[types.UID]bool

	pending    []check
	violations []Violation
	overshoot  map[string]int
	// blind holds, by kind, the spans its watch was broken; unjudged counts the checks
	// dropped for them (blind.go).
	blind    map[string][]span
	unjudged int
}

// pod is what the rules need of one pod.
type pod struct {
	uid       types.UID
	ns, name  string
	owner     types.UID
	ownerKind string
	created   metav1.Time
	node      string
	live      bool
	// deleted is set once its deletion was seen; succeeded once it was seen Succeeded.
	deleted, succeeded bool
	// nodeJudged is set once a daemon pod's node was judged.
	nodeJudged bool
	// index is a Job pod's completion index.
	index string
}

func (p *pod) key() string { return p.ns + "/" + p.name }

// owner is a controller of pods (ReplicaSet, Job, StatefulSet, DaemonSet) or of ReplicaSets
// (Deployment). It may be known from a pod's ownerReference before its own event is seen.
type owner struct {
	kind, ns, name string
	// seen is set once the object's own event was seen; no rule judges an unseen owner.
	seen bool
	live map[types.UID]*pod

	// bound is spec.replicas (ReplicaSet), spec.replicas + maxSurge (Deployment),
	// spec.parallelism (Job), 1 if maxSurge is above zero else 0 (DaemonSet).
	bound history
	// replicas is a Deployment's spec.replicas.
	replicas history
	// deployment is a ReplicaSet's controller.
	deployment types.UID
	// scaledDown and deleting are when a ReplicaSet was first seen lowering spec.replicas
	// and being deleted; zero if never. gone is set once it was seen Deleted.
	scaledDown, deleting time.Time
	gone                 bool

	// A Job's completions (highest seen, -1 if none), completion mode, finish time, the
	// creation times of all its pods ever seen, and its succeeded pods (UIDs or indices).
	completions       int
	indexed           bool
	finished          metav1.Time
	created           map[types.UID]metav1.Time
	succeeded         map[string]bool
	reportedSucceeded int
	late              map[types.UID]bool
}

func (o *owner) String() string { return o.kind + " " + o.ns + "/" + o.name }

// check is a judgement deferred until Grace after the event it judges.
type check struct {
	lost bool // a deletion, else a creation
	at   time.Time
	pod  pod
	// scaled names the ReplicaSet whose scale-up is judged (pod.owner is then its
	// Deployment), sum the spec.replicas of that Deployment's ReplicaSets then.
	scaled string
	sum    int
	// live counts the live pods of every owner in the pod's namespace at the creation, and
	// onNode those of a DaemonSet on the pod's node.
	live   map[types.UID]int
	onNode int
}

// NewChecker returns a Checker that takes events seen up to grace apart as simultaneous;
// 0 means DefaultGrace.
func NewChecker(grace time.Duration) *Checker {
	if grace <= 0 {
		grace = DefaultGrace
	}
	return &Checker{grace: grace, pods: map[types.UID]*pod{}, owners: map[types.UID]*owner{},
		ownersIn: map[string]map[types.UID]*owner{}, namespaceDeleting: map[string]time.Time{},
		podNames: map[string]map[types.UID]bool{}, overshoot: map[string]int{}, blind: map[string][]span{}}
}

// Observe feeds one event, then judges every deferred check that is due.
func (c *Checker) Observe(e Event) {
	switch o := e.Object.(type) {
	case *corev1.Pod:
		c.observePod(e, o)
	case *appsv1.ReplicaSet:
		c.observeReplicaSet(e, o)
	case *appsv1.Deployment:
		c.observeDeployment(e, o)
	case *batchv1.Job:
		c.observeJob(e, o)
	case *appsv1.DaemonSet:
		c.observeDaemonSet(e, o)
	case *appsv1.StatefulSet:
		c.owner(o.UID, "StatefulSet", o.Namespace, o.Name).seen = true
	case *corev1.Namespace:
		if _, ok := c.namespaceDeleting[o.Name]; !ok && (e.Type == watch.Deleted || o.DeletionTimestamp != nil) {
			c.namespaceDeleting[o.Name] = e.Time
		}
	}
	c.Tick(e.Time)
}

// Tick judges the deferred checks due at now (Grace after their event), but those held by
// a broken watch.
func (c *Checker) Tick(now time.Time) {
	kept := c.pending[:0]
	for _, ck := range c.pending {
		if held, _ := c.blindness(ck); held || ck.at.Add(c.grace).After(now) {
			kept = append(kept, ck)
			continue
		}
		c.judge(ck)
	}
	clear(c.pending[len(kept):])
	c.pending = kept
}

// Flush judges every deferred check now, with what is known: call it when no event will
// follow. A check still held by a broken watch is not judged.
func (c *Checker) Flush() {
	for _, ck := range c.pending {
		c.judge(ck)
	}
	c.pending = nil
}

// Violations returns the violations judged so far, in the order they were judged.
func (c *Checker) Violations() []Violation {
	return append([]Violation(nil), c.violations...)
}

// MaxOvershoot returns, by Deployment "namespace/name", the worst of live pods minus
// spec.replicas over the Deployment's judged pod creations: 0 or below is no surge at all,
// maxSurge is a rolling update that used all of its room.
func (c *Checker) MaxOvershoot() map[string]int {
	m := make(map[string]int, len(c.overshoot))
	for k, v := range c.overshoot {
		m[k] = v
	}
	return m
}

func (c *Checker) violate(at time.Time, rule Rule, o fmt.Stringer, format string, args ...any) {
	c.violations = append(c.violations, Violation{Time: at, Rule: rule, Object: o.String(), Detail: fmt.Sprintf(format, args...)})
}

// owner returns the owner with uid, known so far or new.
func (c *Checker) owner(uid types.UID, kind, ns, name string) *owner {
	o := c.owners[uid]
	if o == nil {
		o = &owner{kind: kind, ns: ns, name: name, live: map[types.UID]*pod{}, completions: -1,
			created: map[types.UID]metav1.Time{}, succeeded: map[string]bool{}, late: map[types.UID]bool{}}
		c.owners[uid] = o
		if c.ownersIn[ns] == nil {
			c.ownersIn[ns] = map[types.UID]*owner{}
		}
		c.ownersIn[ns][uid] = o
	}
	return o
}

// window is the span of observer time taken as the moment at.
func (c *Checker) window(at time.Time) (time.Time, time.Time) {
	return at.Add(-c.grace), at.Add(c.grace)
}

// setBound records a new bound and forgets what no pending check can ask for.
func (c *Checker) setBound(h *history, at time.Time, v int) {
	h.set(at, v)
	h.prune(at.Add(-3 * c.grace))
}
