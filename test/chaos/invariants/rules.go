package invariants

import (
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/ptr"
)

// observePod keeps a pod's liveness, owner and node, and defers the judgement of its
// creation and of its deletion.
func (c *Checker) observePod(e Event, p *corev1.Pod) {
	st := c.pods[p.UID]
	isNew := st == nil
	if isNew {
		st = &pod{uid: p.UID, ns: p.Namespace, name: p.Name}
		c.pods[p.UID] = st
	}
	wasLive := st.live
	terminal := p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed
	deleted := e.Type == watch.Deleted || p.DeletionTimestamp != nil
	live := !deleted && !terminal

	// Ownership can change (adoption, release): leave the old owner before joining the new.
	c.setLive(st, false)
	st.owner, st.ownerKind = "", ""
	if ref := metav1.GetControllerOf(p); ref != nil {
		st.owner, st.ownerKind = ref.UID, ref.Kind
		c.owner(ref.UID, ref.Kind, p.Namespace, ref.Name)
	}
	st.created = p.CreationTimestamp
	if n := nodeOf(p); n != "" {
		st.node = n
	}
	st.index = p.Annotations[batchv1.JobCompletionIndexAnnotation]
	c.setLive(st, live)
	if e.Existing {
		st.nodeJudged = true // not a creation: its node is not judged either
	}

	if live && !wasLive {
		c.checkOrdinal(e.Time, st)
	}
	if st.ownerKind == "Job" {
		c.observeJobPod(e.Time, st, p.Status.Phase == corev1.PodSucceeded)
	}
	switch {
	case isNew && live && !e.Existing:
		c.deferCreation(e.Time, st)
	case live && st.ownerKind == "DaemonSet" && !st.nodeJudged && st.node != "" && !e.Existing:
		// A daemon pod created without a node is judged when it gets one.
		c.deferCreation(e.Time, st)
	}
	if deleted && !st.deleted {
		st.deleted = true
		if !terminal && !e.Existing && st.ownerKind == "ReplicaSet" {
			c.pending = append(c.pending, check{lost: true, at: e.Time, pod: *st})
		}
	}
	if e.Type == watch.Deleted {
		delete(c.pods, p.UID)
	}
}

// setLive moves a pod in or out of its owner's live pods.
func (c *Checker) setLive(st *pod, live bool) {
	st.live = live
	if st.owner == "" {
		return
	}
	o := c.owners[st.owner]
	names := c.podNames[st.key()]
	if live {
		o.live[st.uid] = st
		if st.ownerKind == "StatefulSet" {
			if names == nil {
				names = map[types.UID]bool{}
				c.podNames[st.key()] = names
			}
			names[st.uid] = true
		}
		return
	}
	delete(o.live, st.uid)
	delete(names, st.uid)
	if len(names) == 0 {
		delete(c.podNames, st.key())
	}
}

// deferCreation records the counts a new pod is judged by, Grace later.
func (c *Checker) deferCreation(at time.Time, st *pod) {
	ck := check{at: at, pod: *st, live: map[types.UID]int{}}
	for uid, o := range c.ownersIn[st.ns] {
		if n := len(o.live); n > 0 {
			ck.live[uid] = n
		}
	}
	if st.ownerKind == "DaemonSet" && st.node != "" {
		st.nodeJudged = true
		for _, other := range c.owners[st.owner].live {
			if other.node == st.node {
				ck.onNode++
			}
		}
	}
	c.pending = append(c.pending, ck)
}

func (c *Checker) judge(ck check) {
	if held, dropped := c.blindness(ck); held || dropped {
		c.unjudged++
		return
	}
	o := c.owners[ck.pod.owner]
	if o == nil || !o.seen {
		return // an owner never seen: nothing to judge by
	}
	switch {
	case ck.lost:
		c.judgeLost(ck, o)
		return
	case ck.scaled != "":
		c.judgeScale(ck, o)
		return
	}
	switch o.kind {
	case "ReplicaSet":
		c.judgeReplicaSet(ck, o)
		if d := c.owners[o.deployment]; d != nil && d.seen {
			c.judgeDeployment(ck, d, o.deployment)
		}
	case "Job":
		c.judgeParallelism(ck, o)
		c.checkFinished(o, ck.pod.uid, ck.pod.created, ck.at)
	case "DaemonSet":
		c.judgeDaemonSet(ck, o)
	}
}

// judgeReplicaSet: a ReplicaSet's new pod is not one more than its replicas.
func (c *Checker) judgeReplicaSet(ck check, rs *owner) {
	bound, _ := rs.bound.maxIn(c.window(ck.at))
	if n := ck.live[ck.pod.owner]; n > bound {
		c.violate(ck.at, RuleReplicaSetReplicas, rs, "pod %s created as live pod %d, spec.replicas at most %d within %s", ck.pod.name, n, bound, c.grace)
	}
}

// judgeDeployment: a Deployment's new pod is not one more than replicas + maxSurge across
// all its ReplicaSets.
func (c *Checker) judgeDeployment(ck check, d *owner, uid types.UID) {
	n := 0
	for rs, live := range ck.live {
		if o := c.owners[rs]; o.kind == "ReplicaSet" && o.deployment == uid {
			n += live
		}
	}
	from, to := c.window(ck.at)
	bound, _ := d.bound.maxIn(from, to)
	replicas, _ := d.replicas.maxIn(from, to)
	key := d.ns + "/" + d.name
	if over, ok := c.overshoot[key]; !ok || n-replicas > over {
		c.overshoot[key] = n - replicas
	}
	if n > bound {
		c.violate(ck.at, RuleDeploymentSurge, d, "pod %s created as live pod %d, spec.replicas + maxSurge at most %d within %s", ck.pod.name, n, bound, c.grace)
	}
}

// judgeScale: a Deployment's ReplicaSets, when one is scaled up, have at most
// spec.replicas + maxSurge replicas in all: the Deployment controller's own promise, on
// specs only, so not broken by old pods that are slow to go.
func (c *Checker) judgeScale(ck check, d *owner) {
	if bound, _ := d.bound.maxIn(c.window(ck.at)); ck.sum > bound {
		c.violate(ck.at, RuleDeploymentScale, d, "ReplicaSet %s scaled up: its ReplicaSets have %d replicas, spec.replicas + maxSurge at most %d within %s", ck.scaled, ck.sum, bound, c.grace)
	}
}

// judgeParallelism: a Job's new pod is not one more than its parallelism.
func (c *Checker) judgeParallelism(ck check, job *owner) {
	bound, _ := job.bound.maxIn(c.window(ck.at))
	if n := ck.live[ck.pod.owner]; n > bound {
		c.violate(ck.at, RuleJobParallelism, job, "pod %s created as active pod %d, spec.parallelism at most %d within %s", ck.pod.name, n, bound, c.grace)
	}
}

// judgeDaemonSet: a daemon pod is the only live one of its DaemonSet on its node, unless
// the DaemonSet may surge.
func (c *Checker) judgeDaemonSet(ck check, ds *owner) {
	if surge, _ := ds.bound.maxIn(c.window(ck.at)); surge > 0 || ck.pod.node == "" {
		return
	}
	if ck.onNode > 1 {
		c.violate(ck.at, RuleDaemonSetNode, ds, "pod %s created as live pod %d on node %s, without maxSurge", ck.pod.name, ck.onNode, ck.pod.node)
	}
}

// judgeLost: a live pod of a ReplicaSet is deleted only if the ReplicaSet was scaled down
// or is being deleted, or its namespace is.
func (c *Checker) judgeLost(ck check, rs *owner) {
	if rs.kind != "ReplicaSet" {
		return
	}
	_, due := c.window(ck.at)
	excused := func(t time.Time) bool { return !t.IsZero() && !t.After(due) }
	if excused(rs.scaledDown) || excused(rs.deleting) || excused(c.namespaceDeleting[rs.ns]) {
		return
	}
	c.violate(ck.at, RulePodLost, rs, "pod %s deleted before it finished, though the ReplicaSet never lowered spec.replicas and is not being deleted", ck.pod.name)
}

// checkOrdinal: a StatefulSet pod that turns live is the only live one with its name.
func (c *Checker) checkOrdinal(at time.Time, st *pod) {
	if st.ownerKind != "StatefulSet" {
		return
	}
	if n := len(c.podNames[st.key()]); n > 1 {
		c.violate(at, RuleStatefulSetOrdinal, c.owners[st.owner], "%d live pods named %s", n, st.name)
	}
}

// observeJobPod keeps a Job's pod creation times and succeeded pods.
func (c *Checker) observeJobPod(at time.Time, st *pod, succeeded bool) {
	job := c.owners[st.owner]
	job.created[st.uid] = st.created
	if !succeeded || st.succeeded {
		return
	}
	st.succeeded = true
	if job.indexed && st.index != "" {
		job.succeeded["index "+st.index] = true
	} else {
		job.succeeded[string(st.uid)] = true
	}
	c.checkCompletions(at, job)
}

// checkCompletions: a Job's succeeded pods (or indices) do not outnumber its completions.
func (c *Checker) checkCompletions(at time.Time, job *owner) {
	n := len(job.succeeded)
	if !job.seen || job.completions < 0 || n <= job.completions || n <= job.reportedSucceeded {
		return
	}
	job.reportedSucceeded = n
	what := "pods"
	if job.indexed {
		what = "indices"
	}
	c.violate(at, RuleJobCompletions, job, "%d succeeded %s, spec.completions %d", n, what, job.completions)
}

// checkFinished: no pod of a finished Job was created after it finished (1 s tolerance).
func (c *Checker) checkFinished(job *owner, uid types.UID, created metav1.Time, at time.Time) {
	if job.finished.IsZero() || job.late[uid] || !created.After(job.finished.Add(time.Second)) {
		return
	}
	job.late[uid] = true
	c.violate(at, RuleJobFinished, job, "pod created at %s, the Job finished at %s",
		created.UTC().Format(time.RFC3339), job.finished.UTC().Format(time.RFC3339))
}

func (c *Checker) observeReplicaSet(e Event, rs *appsv1.ReplicaSet) {
	o := c.owner(rs.UID, "ReplicaSet", rs.Namespace, rs.Name)
	o.seen = true
	replicas := int(ptr.Deref(rs.Spec.Replicas, 1))
	scaledUp := !o.bound.known() || replicas > o.bound.last()
	if o.bound.known() && replicas < o.bound.last() && o.scaledDown.IsZero() {
		o.scaledDown = e.Time
	}
	c.setBound(&o.bound, e.Time, replicas)
	if ref := metav1.GetControllerOf(rs); ref != nil && ref.Kind == "Deployment" {
		o.deployment = ref.UID
	}
	if (e.Type == watch.Deleted || rs.DeletionTimestamp != nil) && o.deleting.IsZero() {
		o.deleting = e.Time
	}
	o.gone = e.Type == watch.Deleted
	// One watch orders all ReplicaSets, so the sum at this event is one moment's. The first
	// list is no scale-up: a Deployment scaled down may still have more, legitimately.
	if scaledUp && replicas > 0 && o.deployment != "" && !o.gone && !e.Existing {
		c.pending = append(c.pending, check{at: e.Time, pod: pod{owner: o.deployment}, scaled: rs.Name, sum: c.replicasOf(o.deployment, rs.Namespace)})
	}
}

// replicasOf sums the spec.replicas of a Deployment's ReplicaSets.
func (c *Checker) replicasOf(deployment types.UID, ns string) int {
	sum := 0
	for _, o := range c.ownersIn[ns] {
		if o.kind == "ReplicaSet" && o.deployment == deployment && !o.gone {
			sum += o.bound.last()
		}
	}
	return sum
}

func (c *Checker) observeDeployment(e Event, d *appsv1.Deployment) {
	o := c.owner(d.UID, "Deployment", d.Namespace, d.Name)
	o.seen = true
	replicas := int(ptr.Deref(d.Spec.Replicas, 1))
	c.setBound(&o.replicas, e.Time, replicas)
	c.setBound(&o.bound, e.Time, replicas+MaxSurge(d))
}

// MaxSurge is a Deployment's maxSurge resolved as the Deployment controller does: an
// integer, or a percentage of spec.replicas rounded up (25% if unset); 0 for Recreate.
func MaxSurge(d *appsv1.Deployment) int {
	if d.Spec.Strategy.Type == appsv1.RecreateDeploymentStrategyType {
		return 0
	}
	surge := intstr.FromString("25%")
	if ru := d.Spec.Strategy.RollingUpdate; ru != nil && ru.MaxSurge != nil {
		surge = *ru.MaxSurge
	}
	v, err := intstr.GetScaledValueFromIntOrPercent(&surge, int(ptr.Deref(d.Spec.Replicas, 1)), true)
	if err != nil {
		return 0
	}
	return v
}

func (c *Checker) observeJob(e Event, j *batchv1.Job) {
	o := c.owner(j.UID, "Job", j.Namespace, j.Name)
	o.seen = true
	c.setBound(&o.bound, e.Time, int(ptr.Deref(j.Spec.Parallelism, 1)))
	if j.Spec.Completions != nil {
		o.completions = max(o.completions, int(*j.Spec.Completions))
	}
	o.indexed = ptr.Deref(j.Spec.CompletionMode, batchv1.NonIndexedCompletion) == batchv1.IndexedCompletion
	if o.finished.IsZero() {
		for _, cond := range j.Status.Conditions {
			if (cond.Type == batchv1.JobComplete || cond.Type == batchv1.JobFailed) && cond.Status == corev1.ConditionTrue {
				o.finished = cond.LastTransitionTime
				for uid, created := range o.created {
					c.checkFinished(o, uid, created, e.Time)
				}
				break
			}
		}
	}
	c.checkCompletions(e.Time, o)
}

func (c *Checker) observeDaemonSet(e Event, ds *appsv1.DaemonSet) {
	o := c.owner(ds.UID, "DaemonSet", ds.Namespace, ds.Name)
	o.seen = true
	surge := 0
	if ru := ds.Spec.UpdateStrategy.RollingUpdate; ds.Spec.UpdateStrategy.Type == appsv1.RollingUpdateDaemonSetStrategyType && ru != nil && ru.MaxSurge != nil {
		// Any positive integer or percentage lets a node hold two pods for a while.
		if v, err := intstr.GetScaledValueFromIntOrPercent(ru.MaxSurge, 100, true); err == nil && v > 0 {
			surge = 1
		}
	}
	c.setBound(&o.bound, e.Time, surge)
}

// nodeOf is the node a pod is bound to or, before binding, the one node its required node
// affinity names by metadata.name, as the DaemonSet controller pins its pods.
func nodeOf(p *corev1.Pod) string {
	if p.Spec.NodeName != "" {
		return p.Spec.NodeName
	}
	if p.Spec.Affinity == nil || p.Spec.Affinity.NodeAffinity == nil || p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution == nil {
		return ""
	}
	for _, term := range p.Spec.Affinity.NodeAffinity.RequiredDuringSchedulingIgnoredDuringExecution.NodeSelectorTerms {
		for _, f := range term.MatchFields {
			if f.Key == metav1.ObjectNameField && f.Operator == corev1.NodeSelectorOpIn && len(f.Values) == 1 {
				return f.Values[0]
			}
		}
	}
	return ""
}
