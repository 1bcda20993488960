package explain

import (
	"fmt"
	"sort"
	"strconv"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"

	"github.com/kcm/kcm/internal/controller/deployment"
	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/controller/namespace"
	"github.com/kcm/kcm/internal/controller/pvbinder"
	"github.com/kcm/kcm/internal/controller/replicaset"
	"github.com/kcm/kcm/internal/controller/servicelb"
	"github.com/kcm/kcm/internal/controller/statefulset"
)

// Judge: pure functions from what was observed to the report: each link's status (kstatus),
// its desired and actual state, the blocking causes, the summary line and the exit code.

// buildReport judges the observed chain.
func buildReport(root *observed) Report {
	tree := judgeTree(root)
	r := Report{
		Object:    tree.Object,
		Status:    tree.Status,
		Converged: tree.Status == Current,
		Tree:      tree,
	}
	if !r.Converged {
		r.Causes = causesOf(root)
	}
	r.Summary = summaryLine(r.Object, r.Status, tree.Message, r.Causes)
	return r
}

// exitCode is the command's exit code for a report's status.
func exitCode(s string) int {
	if s == Current {
		return ExitConverged
	}
	return ExitNotConverged
}

// summaryLine is "<Kind>/<name> <Status>: <why>", why being the first cause when there is
// one, else the object's own status message.
func summaryLine(obj Ref, st, message string, causes []Cause) string {
	why := message
	if len(causes) > 0 {
		why = causeLine(obj, causes[0])
	}
	line := fmt.Sprintf("%s/%s %s", obj.Kind, obj.Name, st)
	if why != "" {
		line += ": " + why
	}
	return oneLine(line)
}

// causeLine is a cause in words: "<Reason> on <Kind>/<name>: <message>", without the object
// when it is the one asked about.
func causeLine(root Ref, c Cause) string {
	where := ""
	if c.Object != root {
		where = fmt.Sprintf(" on %s/%s", c.Object.Kind, c.Object.Name)
	}
	return fmt.Sprintf("%s%s: %s", c.Reason, where, c.Message)
}

func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// refOf names an object.
func refOf(u *unstructured.Unstructured) Ref {
	return Ref{Kind: u.GetKind(), Namespace: u.GetNamespace(), Name: u.GetName()}
}

// linkStatus is the object's kstatus and its message. kstatus' Unknown (it could not tell)
// is InProgress: explain says converged only when kstatus says Current. One rule is
// explain's own: kstatus judges a LoadBalancer Service Current once it has a cluster IP,
// while the load balancer's address (service-lb-controller's work) is what the Service waits
// for; without one it is InProgress.
func linkStatus(u *unstructured.Unstructured) (string, string) {
	res, err := status.Compute(u)
	if err != nil {
		return InProgress, err.Error()
	}
	if res.Status == status.CurrentStatus && u.GroupVersionKind().GroupKind() == gkService && !hasLoadBalancerAddress(u) {
		return InProgress, "LoadBalancer has no address yet"
	}
	switch res.Status {
	case status.CurrentStatus, status.InProgressStatus, status.FailedStatus, status.TerminatingStatus:
		return string(res.Status), res.Message
	}
	return InProgress, res.Message
}

// judgeTree is the tree of links with each one's judgement.
func judgeTree(n *observed) Node {
	st, msg := linkStatus(n.obj)
	node := Node{Object: refOf(n.obj), Status: st, Message: msg, Controller: n.controller, View: n.view,
		Rule: controllerRule(n.controller, n.obj)}
	node.Desired, node.Actual = desiredActual(n)
	if n.remaining != nil {
		node.Actual = remainingWords(n.remaining)
	}
	if n.missing != nil {
		node.Message = oneLine(node.Message + "; " + missingWords(n.obj, *n.missing))
	}
	for _, c := range n.children {
		node.Children = append(node.Children, judgeTree(c))
	}
	return node
}

// hasLoadBalancerAddress is false for a type-LoadBalancer Service without an ingress.
func hasLoadBalancerAddress(u *unstructured.Unstructured) bool {
	if t, _, _ := unstructured.NestedString(u.Object, "spec", "type"); t != string(corev1.ServiceTypeLoadBalancer) {
		return true
	}
	ingress, _, _ := unstructured.NestedSlice(u.Object, "status", "loadBalancer", "ingress")
	return len(ingress) > 0
}

// controllerRule applies the link's controller's own convergence rule (the pure ones the
// controllers export for their SLIs) to the object; nil for a controller without one.
// service-lb-controller's rule is applied as for a provider without a class of its own
// (the client cannot know the leader's provider).
func controllerRule(controller string, u *unstructured.Unstructured) *Rule {
	var converged bool
	var why, description string
	switch controller {
	case deploymentController:
		d := &appsv1.Deployment{}
		if !from(u, d) {
			return nil
		}
		converged, why = deployment.Converged(d)
		description = deployment.Convergence.Description
	case replicaSetController:
		rs := &appsv1.ReplicaSet{}
		if !from(u, rs) {
			return nil
		}
		converged, why = replicaset.Converged(rs)
		description = replicaset.Convergence.Description
	case jobController:
		j := &batchv1.Job{}
		if !from(u, j) {
			return nil
		}
		converged, why = job.Converged(j)
		description = job.Convergence.Description
	case statefulSetController:
		s := &appsv1.StatefulSet{}
		if !from(u, s) {
			return nil
		}
		converged, why = statefulset.Converged(s)
		description = statefulset.Convergence.Description
	case namespaceController:
		ns := &corev1.Namespace{}
		if !from(u, ns) {
			return nil
		}
		converged, why = namespace.Converged(ns)
		description = namespace.Convergence.Description
	case claimBinderController:
		c := &corev1.PersistentVolumeClaim{}
		if !from(u, c) {
			return nil
		}
		converged, why = pvbinder.Converged(c)
		description = pvbinder.Convergence.Description
	case serviceLBController:
		svc := &corev1.Service{}
		if !from(u, svc) {
			return nil
		}
		converged, why = servicelb.Converged(svc, "")
		description = servicelb.Convergence.Description
	default:
		return nil
	}
	return &Rule{Converged: converged, Why: why, Description: description}
}

// remainingWords counts a Terminating namespace's remaining objects ("2 pods, 1 widgets.example.com remain").
func remainingWords(remaining map[string]int) string {
	if len(remaining) == 0 {
		return "no objects remain"
	}
	var parts []string
	for r, n := range remaining {
		parts = append(parts, fmt.Sprintf("%d %s", n, r))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ") + " remain"
}

func missingWords(obj *unstructured.Unstructured, m Ref) string {
	switch m.Kind {
	case "Node":
		return fmt.Sprintf("bound to node %s, which does not exist", m.Name)
	case "StorageClass":
		return fmt.Sprintf("StorageClass %s does not exist: nothing provisions a volume for it", m.Name)
	}
	return fmt.Sprintf("%s %s does not exist", m.Kind, m.Name)
}

// desiredActual is the link's desired and actual state in words.
func desiredActual(n *observed) (string, string) {
	u := n.obj
	switch u.GroupVersionKind().GroupKind() {
	case gkDeployment:
		d := &appsv1.Deployment{}
		if from(u, d) {
			return replicas(d.Spec.Replicas), fmt.Sprintf("%d updated, %d ready, %d available of %d", d.Status.UpdatedReplicas, d.Status.ReadyReplicas, d.Status.AvailableReplicas, d.Status.Replicas)
		}
	case gkReplicaSet:
		rs := &appsv1.ReplicaSet{}
		if from(u, rs) {
			return replicas(rs.Spec.Replicas), fmt.Sprintf("%d ready, %d available of %d", rs.Status.ReadyReplicas, rs.Status.AvailableReplicas, rs.Status.Replicas)
		}
	case gkStatefulSet:
		s := &appsv1.StatefulSet{}
		if from(u, s) {
			return replicas(s.Spec.Replicas), fmt.Sprintf("%d ready, %d current, %d updated of %d", s.Status.ReadyReplicas, s.Status.CurrentReplicas, s.Status.UpdatedReplicas, s.Status.Replicas)
		}
	case gkDaemonSet:
		d := &appsv1.DaemonSet{}
		if from(u, d) {
			return fmt.Sprintf("%d scheduled", d.Status.DesiredNumberScheduled), fmt.Sprintf("%d ready, %d updated, %d available, %d misscheduled", d.Status.NumberReady, d.Status.UpdatedNumberScheduled, d.Status.NumberAvailable, d.Status.NumberMisscheduled)
		}
	case gkJob:
		j := &batchv1.Job{}
		if from(u, j) {
			want := "completions " + int32Words(j.Spec.Completions, "any")
			if j.Spec.BackoffLimit != nil {
				want += fmt.Sprintf(", backoffLimit %d", *j.Spec.BackoffLimit)
			}
			return want, fmt.Sprintf("%d active, %d succeeded, %d failed", j.Status.Active, j.Status.Succeeded, j.Status.Failed)
		}
	case gkCronJob:
		c := &batchv1.CronJob{}
		if from(u, c) {
			last := "never scheduled"
			if c.Status.LastScheduleTime != nil {
				last = "last scheduled " + c.Status.LastScheduleTime.UTC().Format("2006-01-02T15:04:05Z")
			}
			suspended := ""
			if c.Spec.Suspend != nil && *c.Spec.Suspend {
				suspended = " (suspended)"
			}
			return "schedule " + c.Spec.Schedule + suspended, fmt.Sprintf("%d active, %s", len(c.Status.Active), last)
		}
	case gkPod:
		p := &corev1.Pod{}
		if from(u, p) {
			want := "scheduled"
			if p.Spec.NodeName != "" {
				want = "on node " + p.Spec.NodeName
			}
			return want, fmt.Sprintf("%s, %s", phaseWords(p.Status.Phase), readyWords(p))
		}
	case gkService:
		s := &corev1.Service{}
		if from(u, s) {
			if s.Spec.Type == corev1.ServiceTypeLoadBalancer {
				var ips []string
				for _, in := range s.Status.LoadBalancer.Ingress {
					ips = append(ips, in.IP+in.Hostname)
				}
				got := "no load balancer address"
				if len(ips) > 0 {
					got = "load balancer at " + strings.Join(ips, ", ")
				}
				return "a load balancer address", got
			}
			return "endpoints of its ready pods", fmt.Sprintf("%d EndpointSlices", len(n.children))
		}
	case gkSlice:
		s := &discoveryv1.EndpointSlice{}
		if from(u, s) {
			ready := 0
			for _, e := range s.Endpoints {
				if e.Conditions.Ready == nil || *e.Conditions.Ready {
					ready++
				}
			}
			return "", fmt.Sprintf("%d endpoints, %d ready", len(s.Endpoints), ready)
		}
	case gkPVC:
		c := &corev1.PersistentVolumeClaim{}
		if from(u, c) {
			want := "a volume"
			if q, ok := c.Spec.Resources.Requests[corev1.ResourceStorage]; ok {
				want = "a volume of " + q.String()
			}
			if c.Spec.StorageClassName != nil && *c.Spec.StorageClassName != "" {
				want += " of class " + *c.Spec.StorageClassName
			}
			got := string(c.Status.Phase)
			if c.Spec.VolumeName != "" {
				got += ", volume " + c.Spec.VolumeName
			}
			return want, got
		}
	case gkPV:
		v := &corev1.PersistentVolume{}
		if from(u, v) {
			got := string(v.Status.Phase)
			if v.Spec.ClaimRef != nil {
				got += ", claim " + v.Spec.ClaimRef.Namespace + "/" + v.Spec.ClaimRef.Name
			}
			return "", got
		}
	case gkClass:
		sc := &storagev1.StorageClass{}
		if from(u, sc) {
			mode := "Immediate"
			if sc.VolumeBindingMode != nil {
				mode = string(*sc.VolumeBindingMode)
			}
			return "", fmt.Sprintf("provisioner %s, binding %s", sc.Provisioner, mode)
		}
	case gkNode:
		node := &corev1.Node{}
		if from(u, node) {
			return "", "Ready " + string(nodeReady(node))
		}
	}
	if fs := u.GetFinalizers(); len(fs) > 0 {
		return "", "finalizers " + strings.Join(fs, ", ")
	}
	return "", ""
}

func from(u *unstructured.Unstructured, into any) bool {
	return runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, into) == nil
}

func replicas(r *int32) string {
	n := int32(1)
	if r != nil {
		n = *r
	}
	if n == 1 {
		return "1 replica"
	}
	return fmt.Sprintf("%d replicas", n)
}

func int32Words(p *int32, none string) string {
	if p == nil {
		return none
	}
	return strconv.Itoa(int(*p))
}

func phaseWords(p corev1.PodPhase) string {
	if p == "" {
		return "no phase"
	}
	return string(p)
}

func readyWords(p *corev1.Pod) string {
	for _, c := range p.Status.Conditions {
		if c.Type == corev1.PodReady {
			if c.Status == corev1.ConditionTrue {
				return "ready"
			}
			return "not ready"
		}
	}
	return "not ready"
}

func podReady(p *corev1.Pod) bool { return readyWords(p) == "ready" }

func nodeReady(n *corev1.Node) corev1.ConditionStatus {
	for _, c := range n.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status
		}
	}
	return corev1.ConditionUnknown
}

// Cause ranks, most relevant first: a terminal condition says the object gave up; a
// finalizer, a missing object or a missing class block by themselves; a Warning Event is the
// error a controller (or the scheduler, a provisioner) met; a StatefulSet's unready ordinal
// is the wait the controller chose; other conditions restate those; a budget or a provisioner
// is context.
const (
	rankTerminal = iota
	rankBlocking
	rankEvent
	rankWaiting
	rankCondition
	rankContext
)

type rankedCause struct {
	Cause
	rank, depth int
}

// causesOf extracts the causes of a chain, most relevant first: by rank, then deepest link
// first (the cause at the bottom of the chain is why the links above it wait), then in the
// order found. A link that is Current blocks nothing: its causes (old Events) are left out,
// except the finalizers that hold a Terminating Namespace.
func causesOf(root *observed) []Cause {
	var found []rankedCause
	var walk func(n *observed, depth int, holding bool)
	walk = func(n *observed, depth int, holding bool) {
		st, _ := linkStatus(n.obj)
		if st != Current || holding {
			for _, c := range linkCauses(n, holding) {
				c.depth = depth
				found = append(found, c)
			}
		}
		holds := n.obj.GroupVersionKind().GroupKind() == gkNamespace && n.obj.GetDeletionTimestamp() != nil
		for _, c := range n.children {
			walk(c, depth+1, holds)
		}
	}
	walk(root, 0, false)
	sort.SliceStable(found, func(i, j int) bool {
		if found[i].rank != found[j].rank {
			return found[i].rank < found[j].rank
		}
		return found[i].depth > found[j].depth
	})
	var out []Cause
	seen := map[string]bool{}
	for _, c := range found {
		// One cause per object and reason (an Event and the condition it restates, a
		// Job's BackoffLimitExceeded in both): the most relevant.
		key := fmt.Sprintf("%v|%s|%s", c.Object, c.Reason, c.Finalizer)
		if seen[key] {
			continue
		}
		seen[key] = true
		out = append(out, c.Cause)
	}
	return out
}

// linkCauses are one link's causes. holding: the link is an object a Terminating
// Namespace waits on.
func linkCauses(n *observed, holding bool) []rankedCause {
	u := n.obj
	ref := refOf(u)
	var out []rankedCause
	add := func(rank int, reason, message string) {
		out = append(out, rankedCause{Cause: Cause{Object: ref, Reason: reason, Message: oneLine(message)}, rank: rank})
	}
	// Finalizers of an object being deleted, or holding its namespace.
	if u.GetDeletionTimestamp() != nil || holding {
		for _, f := range u.GetFinalizers() {
			out = append(out, rankedCause{Cause: Cause{Object: ref, Reason: "Finalizer", Finalizer: f,
				Message: fmt.Sprintf("%s/%s still has finalizer %s, %s", ref.Kind, ref.Name, f, finalizerHolder(f))}, rank: rankBlocking})
		}
	}
	if n.missing != nil {
		reason := n.missing.Kind + "Missing"
		add(rankBlocking, reason, missingWords(u, *n.missing))
	}
	for _, e := range n.events {
		if rank, ok := eventRank(e); ok {
			add(rank, e.Reason, e.Message)
		}
	}
	gk := u.GroupVersionKind().GroupKind()
	switch gk {
	case gkDeployment:
		d := &appsv1.Deployment{}
		if from(u, d) {
			for _, c := range d.Status.Conditions {
				switch {
				case c.Type == appsv1.DeploymentProgressing && c.Status == corev1.ConditionFalse:
					add(rankTerminal, c.Reason, c.Message)
				case c.Type == appsv1.DeploymentReplicaFailure && c.Status == corev1.ConditionTrue:
					add(rankCondition, c.Reason, c.Message)
				}
			}
			out = append(out, pdbCauses(n.pdbs)...)
		}
	case gkReplicaSet:
		rs := &appsv1.ReplicaSet{}
		if from(u, rs) {
			for _, c := range rs.Status.Conditions {
				if c.Type == appsv1.ReplicaSetReplicaFailure && c.Status == corev1.ConditionTrue {
					add(rankCondition, c.Reason, c.Message)
				}
			}
		}
	case gkJob:
		j := &batchv1.Job{}
		if from(u, j) {
			for _, c := range j.Status.Conditions {
				switch {
				case c.Type == batchv1.JobFailed && c.Status == corev1.ConditionTrue:
					add(rankTerminal, c.Reason, c.Message)
				case c.Type == batchv1.JobFailureTarget && c.Status == corev1.ConditionTrue:
					add(rankTerminal, c.Reason, c.Message)
				case c.Type == batchv1.JobSuspended && c.Status == corev1.ConditionTrue:
					add(rankCondition, "Suspended", "the Job is suspended")
				}
			}
		}
	case gkStatefulSet:
		out = append(out, orderedReadyWait(n)...)
		out = append(out, pdbCauses(n.pdbs)...)
	case gkPod:
		p := &corev1.Pod{}
		if from(u, p) {
			for _, c := range p.Status.Conditions {
				if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse {
					add(rankCondition, c.Reason, c.Message)
				}
			}
			for _, cs := range append(append([]corev1.ContainerStatus{}, p.Status.InitContainerStatuses...), p.Status.ContainerStatuses...) {
				if w := cs.State.Waiting; w != nil && w.Reason != "" && w.Reason != "ContainerCreating" && w.Reason != "PodInitializing" {
					add(rankEvent, w.Reason, fmt.Sprintf("container %s: %s", cs.Name, w.Message))
				}
			}
		}
	case gkNamespace:
		ns := &corev1.Namespace{}
		if from(u, ns) {
			for _, c := range ns.Status.Conditions {
				if c.Status == corev1.ConditionTrue {
					add(rankCondition, c.Reason, c.Message)
				}
			}
		}
		if n.discoveryErr != "" {
			add(rankCondition, "DiscoveryFailed", "not every resource could be listed: "+n.discoveryErr)
		}
	case gkPVC:
		c := &corev1.PersistentVolumeClaim{}
		if from(u, c) && c.Status.Phase == corev1.ClaimPending {
			for _, child := range n.children {
				sc := &storagev1.StorageClass{}
				if child.obj.GroupVersionKind().GroupKind() == gkClass && from(child.obj, sc) {
					if sc.VolumeBindingMode != nil && *sc.VolumeBindingMode == storagev1.VolumeBindingWaitForFirstConsumer {
						add(rankContext, "WaitForFirstConsumer", fmt.Sprintf("StorageClass %s binds when a pod using the claim is scheduled", sc.Name))
					} else {
						add(rankContext, "WaitingForProvisioner", fmt.Sprintf("waiting for provisioner %s of StorageClass %s to create a volume", sc.Provisioner, sc.Name))
					}
				}
			}
		}
	}
	return out
}

// waitingEvents are the Normal Events that say a link waits: persistentvolume-binder's
// (upstream records "no persistent volumes available for this claim" as a Normal
// FailedBinding) and a provisioner's.
var waitingEvents = map[string]int{
	"FailedBinding":        rankEvent,
	"ExternalProvisioning": rankContext,
	"WaitForFirstConsumer": rankContext,
	"WaitForPodScheduled":  rankContext,
}

// eventRank is an Event's rank as a cause: every Warning, and the Normal ones that say a link
// waits.
func eventRank(e corev1.Event) (int, bool) {
	if e.Type == corev1.EventTypeWarning {
		return rankEvent, true
	}
	rank, ok := waitingEvents[e.Reason]
	return rank, ok
}

// finalizerHolder says who removes a finalizer: the kcm controller for the ones upstream's
// controllers hold, else whatever controller of the finalizer's domain.
func finalizerHolder(f string) string {
	switch f {
	case "kubernetes.io/pvc-protection":
		return "removed by persistentvolumeclaim-protection-controller once no pod uses the claim"
	case "kubernetes.io/pv-protection":
		return "removed by persistentvolume-protection-controller once no claim is bound to the volume"
	case "foregroundDeletion", "orphan":
		return "removed by garbage-collector-controller once the dependents are handled"
	case "service.kubernetes.io/load-balancer-cleanup":
		return "removed by service-lb-controller once the load balancer is deleted"
	case "batch.kubernetes.io/job-tracking":
		return "removed by job-controller once it has counted the pod"
	case "kubernetes":
		return "removed by namespace-controller once the namespace is empty"
	case "kubernetes.io/pv-controller", "external-provisioner.volume.kubernetes.io/finalizer":
		return "removed once the volume's storage is deleted"
	}
	return "held by the controller that owns it (not one of kcm's)"
}

// orderedReadyWait names the pod an OrderedReady StatefulSet waits on: the lowest ordinal
// that exists and is not Ready (statefulset-controller creates or updates no later ordinal
// until it is).
func orderedReadyWait(n *observed) []rankedCause {
	s := &appsv1.StatefulSet{}
	if !from(n.obj, s) || s.Spec.PodManagementPolicy == appsv1.ParallelPodManagement {
		return nil
	}
	var pods []*corev1.Pod
	for _, c := range n.children {
		p := &corev1.Pod{}
		if c.obj.GroupVersionKind().GroupKind() == gkPod && from(c.obj, p) {
			pods = append(pods, p)
		}
	}
	sort.SliceStable(pods, func(i, j int) bool { return lessByName(pods[i].Name, pods[j].Name) })
	for _, p := range pods {
		if p.DeletionTimestamp == nil && !podReady(p) {
			return []rankedCause{{Cause: Cause{Object: Ref{Kind: "Pod", Namespace: p.Namespace, Name: p.Name}, Reason: "NotReady",
				Message: fmt.Sprintf("waiting for pod %s to be Ready (%s, %s): the StatefulSet is OrderedReady", p.Name, phaseWords(p.Status.Phase), readyWords(p))}, rank: rankWaiting}}
		}
	}
	return nil
}

// pdbCauses are the budgets allowing no disruption among those covering a workload's pods.
func pdbCauses(pdbs []*unstructured.Unstructured) []rankedCause {
	var out []rankedCause
	for _, u := range pdbs {
		pdb := &policyv1.PodDisruptionBudget{}
		if !from(u, pdb) || pdb.Status.DisruptionsAllowed > 0 {
			continue
		}
		out = append(out, rankedCause{Cause: Cause{Object: Ref{Kind: "PodDisruptionBudget", Namespace: pdb.Namespace, Name: pdb.Name}, Reason: "PodDisruptionBudget",
			Message: fmt.Sprintf("allows no disruption (%d healthy, %d desired): evictions of the pods wait", pdb.Status.CurrentHealthy, pdb.Status.DesiredHealthy)}, rank: rankContext})
	}
	return out
}

// splitOrdinal splits "web-12" into "web" and 12; -1 when the name has no numeric suffix.
func splitOrdinal(name string) (string, int) {
	i := strings.LastIndexByte(name, '-')
	if i < 0 {
		return name, -1
	}
	n, err := strconv.Atoi(name[i+1:])
	if err != nil {
		return name, -1
	}
	return name[:i], n
}
