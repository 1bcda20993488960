package explain

import (
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/track"
)

// u converts a typed object to the unstructured form the walk reads, with its kind.
func u(t *testing.T, obj runtime.Object, gvk schema.GroupVersionKind) *unstructured.Unstructured {
	t.Helper()
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(obj)
	if err != nil {
		t.Fatal(err)
	}
	out := &unstructured.Unstructured{Object: m}
	out.SetGroupVersionKind(gvk)
	return out
}

var (
	deploymentGVK = appsv1.SchemeGroupVersion.WithKind("Deployment")
	replicaSetGVK = appsv1.SchemeGroupVersion.WithKind("ReplicaSet")
	statefulGVK   = appsv1.SchemeGroupVersion.WithKind("StatefulSet")
	jobGVK        = batchv1.SchemeGroupVersion.WithKind("Job")
	podGVK        = corev1.SchemeGroupVersion.WithKind("Pod")
	serviceGVK    = corev1.SchemeGroupVersion.WithKind("Service")
	namespaceGVK  = corev1.SchemeGroupVersion.WithKind("Namespace")
	claimGVK      = corev1.SchemeGroupVersion.WithKind("PersistentVolumeClaim")
	classGVK      = storagev1.SchemeGroupVersion.WithKind("StorageClass")
	pdbGVK        = policyv1.SchemeGroupVersion.WithKind("PodDisruptionBudget")
	configMapGVK  = corev1.SchemeGroupVersion.WithKind("ConfigMap")
)

func objMeta(name string) metav1.ObjectMeta {
	return metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name), Generation: 1}
}

func warning(reason, message string) corev1.Event {
	return corev1.Event{Type: corev1.EventTypeWarning, Reason: reason, Message: message}
}

func newDeployment(want, available int32, conditions ...appsv1.DeploymentCondition) *appsv1.Deployment {
	return &appsv1.Deployment{ObjectMeta: objMeta("web"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To(want)},
		Status: appsv1.DeploymentStatus{ObservedGeneration: 1, Replicas: available, UpdatedReplicas: available,
			ReadyReplicas: available, AvailableReplicas: available, Conditions: conditions}}
}

func replicaSet(name string, want, ready int32) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{ObjectMeta: objMeta(name), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To(want)},
		Status: appsv1.ReplicaSetStatus{ObservedGeneration: 1, Replicas: ready, ReadyReplicas: ready, AvailableReplicas: ready, FullyLabeledReplicas: ready}}
}

func runningPod(name string, ready bool) *corev1.Pod {
	status := corev1.ConditionFalse
	if ready {
		status = corev1.ConditionTrue
	}
	return &corev1.Pod{ObjectMeta: objMeta(name), Spec: corev1.PodSpec{NodeName: "node-1"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{
			{Type: corev1.PodScheduled, Status: corev1.ConditionTrue}, {Type: corev1.PodReady, Status: status}}}}
}

func pendingPod(name, message string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: objMeta(name), Status: corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{
		{Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: message}}}}
}

func ref(kind, name string) Ref { return Ref{Kind: kind, Namespace: "ns", Name: name} }

const (
	quota       = `Error creating: pods "web-1-x" is forbidden: exceeded quota: pods, requested: pods=1, used: pods=1, limited: pods=1`
	unscheduled = "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector."
	backoff     = "Job has reached the specified backoff limit"
	noVolume    = "no persistent volumes available for this claim and no storage class is set"
	exhausted   = `Error syncing load balancer: failed to ensure load balancer: no address available in pool(s) "one"`
)

// TestReport: the status, causes (most relevant first) and summary of each stuck state the
// command names, and of converged ones.
func TestReport(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name    string
		root    func(t *testing.T) *observed
		status  string
		causes  []Cause
		summary string
	}{{
		name: "Deployment blocked by a ResourceQuota: the ReplicaSet's FailedCreate, then the Deployment's ReplicaFailure",
		root: func(t *testing.T) *observed {
			d := newDeployment(3, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentReplicaFailure, Status: corev1.ConditionTrue, Reason: "FailedCreate", Message: quota},
				appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "ReplicaSetUpdated"})
			return &observed{obj: u(t, d, deploymentGVK), children: []*observed{{
				obj: u(t, replicaSet("web-1", 3, 1), replicaSetGVK),
				events: []corev1.Event{warning("FailedCreate", quota), warning("FailedCreate", "an older one"),
					{Type: corev1.EventTypeNormal, Reason: "SuccessfulCreate", Message: "Created pod: web-1-a"}},
				children: []*observed{{obj: u(t, runningPod("web-1-a", true), podGVK),
					events: []corev1.Event{warning("FailedScheduling", "an old one, of a pod now Current")}}},
			}}}
		},
		status: InProgress,
		causes: []Cause{{Object: ref("ReplicaSet", "web-1"), Reason: "FailedCreate", Message: quota},
			{Object: ref("Deployment", "web"), Reason: "FailedCreate", Message: quota}},
		summary: "Deployment/web InProgress: FailedCreate on ReplicaSet/web-1: " + quota,
	}, {
		name: "unschedulable pods: the scheduler's FailedScheduling, then the pod's condition",
		root: func(t *testing.T) *observed {
			return &observed{obj: u(t, newDeployment(1, 0), deploymentGVK), children: []*observed{{
				obj: u(t, replicaSet("web-1", 1, 0), replicaSetGVK),
				children: []*observed{{obj: u(t, pendingPod("web-1-a", unscheduled), podGVK),
					events: []corev1.Event{warning("FailedScheduling", unscheduled)}}},
			}}}
		},
		status: InProgress,
		causes: []Cause{{Object: ref("Pod", "web-1-a"), Reason: "FailedScheduling", Message: unscheduled},
			{Object: ref("Pod", "web-1-a"), Reason: "Unschedulable", Message: unscheduled}},
		summary: "Deployment/web InProgress: FailedScheduling on Pod/web-1-a: " + unscheduled,
	}, {
		name: "Job past its backoffLimit: its Failed condition, the Event restating it dropped; its failed pod is Current (kstatus: completed), its old Event left out",
		root: func(t *testing.T) *observed {
			j := &batchv1.Job{ObjectMeta: objMeta("fail"), Spec: batchv1.JobSpec{BackoffLimit: ptr.To[int32](0)},
				Status: batchv1.JobStatus{Failed: 1, Conditions: []batchv1.JobCondition{
					{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: backoff},
					{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded", Message: backoff}}}}
			p := &corev1.Pod{ObjectMeta: objMeta("fail-a"), Status: corev1.PodStatus{Phase: corev1.PodFailed}}
			return &observed{obj: u(t, j, jobGVK), events: []corev1.Event{warning("BackoffLimitExceeded", backoff)},
				children: []*observed{{obj: u(t, p, podGVK), events: []corev1.Event{warning("FailedScheduling", unscheduled)}}}}
		},
		status:  Failed,
		causes:  []Cause{{Object: ref("Job", "fail"), Reason: "BackoffLimitExceeded", Message: backoff}},
		summary: "Job/fail Failed: BackoffLimitExceeded: " + backoff,
	}, {
		name: "Namespace held by a custom resource's finalizer: the object and its finalizer, then the condition",
		root: func(t *testing.T) *observed {
			ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "ns", UID: "ns", DeletionTimestamp: &now},
				Spec: corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
				Status: corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating, Conditions: []corev1.NamespaceCondition{
					{Type: corev1.NamespaceFinalizersRemaining, Status: corev1.ConditionTrue, Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"},
					{Type: corev1.NamespaceDeletionContentFailure, Status: corev1.ConditionFalse, Reason: "ContentDeleted"}}}}
			w := &unstructured.Unstructured{}
			w.SetGroupVersionKind(schema.GroupVersionKind{Group: "example.com", Version: "v1", Kind: "Widget"})
			w.SetNamespace("ns")
			w.SetName("held")
			w.SetDeletionTimestamp(&now)
			w.SetFinalizers([]string{"example.com/hold"})
			return &observed{obj: u(t, ns, namespaceGVK), remaining: map[string]int{"widgets.example.com": 1}, children: []*observed{{obj: w}}}
		},
		status: Terminating,
		causes: []Cause{{Object: ref("Widget", "held"), Reason: "Finalizer", Finalizer: "example.com/hold",
			Message: "Widget/held still has finalizer example.com/hold, held by the controller that owns it (not one of kcm's)"},
			{Object: Ref{Kind: "Namespace", Name: "ns"}, Reason: "SomeFinalizersRemain", Message: "Some content in the namespace has finalizers remaining: example.com/hold in 1 resource instances"}},
		summary: "Namespace/ns Terminating: Finalizer on Widget/held: Widget/held still has finalizer example.com/hold, held by the controller that owns it (not one of kcm's)",
	}, {
		name: "PVC Pending with no volume and no class: the binder's FailedBinding",
		root: func(t *testing.T) *observed {
			c := &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"), Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("")},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
			// Upstream's binder records it as a Normal Event.
			return &observed{obj: u(t, c, claimGVK), events: []corev1.Event{{Type: corev1.EventTypeNormal, Reason: "FailedBinding", Message: noVolume}}}
		},
		status:  InProgress,
		causes:  []Cause{{Object: ref("PersistentVolumeClaim", "data"), Reason: "FailedBinding", Message: noVolume}},
		summary: "PersistentVolumeClaim/data InProgress: FailedBinding: " + noVolume,
	}, {
		name: "PVC Pending on a StorageClass that does not exist",
		root: func(t *testing.T) *observed {
			c := &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"), Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast")},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
			return &observed{obj: u(t, c, claimGVK), missing: &Ref{Kind: "StorageClass", Name: "fast"}}
		},
		status:  InProgress,
		causes:  []Cause{{Object: ref("PersistentVolumeClaim", "data"), Reason: "StorageClassMissing", Message: "StorageClass fast does not exist: nothing provisions a volume for it"}},
		summary: "PersistentVolumeClaim/data InProgress: StorageClassMissing: StorageClass fast does not exist: nothing provisions a volume for it",
	}, {
		name: "PVC Pending on its class's provisioner",
		root: func(t *testing.T) *observed {
			c := &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("data"), Spec: corev1.PersistentVolumeClaimSpec{StorageClassName: ptr.To("fast")},
				Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}
			sc := &storagev1.StorageClass{ObjectMeta: metav1.ObjectMeta{Name: "fast"}, Provisioner: "csi.example.com"}
			return &observed{obj: u(t, c, claimGVK), children: []*observed{{obj: u(t, sc, classGVK)}}}
		},
		status:  InProgress,
		causes:  []Cause{{Object: ref("PersistentVolumeClaim", "data"), Reason: "WaitingForProvisioner", Message: "waiting for provisioner csi.example.com of StorageClass fast to create a volume"}},
		summary: "PersistentVolumeClaim/data InProgress: WaitingForProvisioner: waiting for provisioner csi.example.com of StorageClass fast to create a volume",
	}, {
		name: "StatefulSet waiting on an unready ordinal: the lowest unready pod",
		root: func(t *testing.T) *observed {
			s := &appsv1.StatefulSet{ObjectMeta: objMeta("db"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](3)},
				Status: appsv1.StatefulSetStatus{ObservedGeneration: 1, Replicas: 2, CurrentReplicas: 2, UpdatedReplicas: 2, ReadyReplicas: 1}}
			return &observed{obj: u(t, s, statefulGVK), children: []*observed{
				{obj: u(t, runningPod("db-10", false), podGVK)}, {obj: u(t, runningPod("db-2", false), podGVK)}, {obj: u(t, runningPod("db-1", true), podGVK)}}}
		},
		status: InProgress,
		causes: []Cause{{Object: ref("Pod", "db-2"), Reason: "NotReady",
			Message: "waiting for pod db-2 to be Ready (Running, not ready): the StatefulSet is OrderedReady"}},
		summary: "StatefulSet/db InProgress: NotReady on Pod/db-2: waiting for pod db-2 to be Ready (Running, not ready): the StatefulSet is OrderedReady",
	}, {
		name: "LoadBalancer Service on an exhausted pool: service-lb-controller's SyncLoadBalancerFailed",
		root: func(t *testing.T) *observed {
			s := &corev1.Service{ObjectMeta: objMeta("lb-1"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.12"}}
			return &observed{obj: u(t, s, serviceGVK), controller: serviceLBController, events: []corev1.Event{
				warning("SyncLoadBalancerFailed", exhausted), {Type: corev1.EventTypeNormal, Reason: "EnsuringLoadBalancer", Message: "Ensuring load balancer"}}}
		},
		status:  InProgress,
		causes:  []Cause{{Object: ref("Service", "lb-1"), Reason: "SyncLoadBalancerFailed", Message: exhausted}},
		summary: "Service/lb-1 InProgress: SyncLoadBalancerFailed: " + exhausted,
	}, {
		name: "a pod bound to a node that does not exist",
		root: func(t *testing.T) *observed {
			p := &corev1.Pod{ObjectMeta: objMeta("p"), Spec: corev1.PodSpec{NodeName: "gone"}, Status: corev1.PodStatus{Phase: corev1.PodPending}}
			return &observed{obj: u(t, p, podGVK), missing: &Ref{Kind: "Node", Name: "gone"}}
		},
		status:  InProgress,
		causes:  []Cause{{Object: ref("Pod", "p"), Reason: "NodeMissing", Message: "bound to node gone, which does not exist"}},
		summary: "Pod/p InProgress: NodeMissing: bound to node gone, which does not exist",
	}, {
		name: "a stuck rollout's pods covered by a budget allowing no disruption: context after the cause",
		root: func(t *testing.T) *observed {
			pdb := &policyv1.PodDisruptionBudget{ObjectMeta: objMeta("web"), Status: policyv1.PodDisruptionBudgetStatus{CurrentHealthy: 1, DesiredHealthy: 1}}
			return &observed{obj: u(t, newDeployment(2, 1), deploymentGVK), pdbs: []*unstructured.Unstructured{u(t, pdb, pdbGVK)},
				children: []*observed{{obj: u(t, replicaSet("web-2", 1, 0), replicaSetGVK), events: []corev1.Event{warning("FailedCreate", quota)}}}}
		},
		status: InProgress,
		causes: []Cause{{Object: ref("ReplicaSet", "web-2"), Reason: "FailedCreate", Message: quota},
			{Object: ref("PodDisruptionBudget", "web"), Reason: "PodDisruptionBudget", Message: "allows no disruption (1 healthy, 1 desired): evictions of the pods wait"}},
		summary: "Deployment/web InProgress: FailedCreate on ReplicaSet/web-2: " + quota,
	}, {
		name: "a converged Deployment: no causes, its old Warning Events left out",
		root: func(t *testing.T) *observed {
			d := newDeployment(1, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentAvailable, Status: corev1.ConditionTrue},
				appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"})
			return &observed{obj: u(t, d, deploymentGVK), events: []corev1.Event{warning("Whatever", "old")},
				children: []*observed{{obj: u(t, replicaSet("web-1", 1, 1), replicaSetGVK), events: []corev1.Event{warning("FailedCreate", quota)}}}}
		},
		status:  Current,
		summary: "Deployment/web Current: Deployment is available. Replicas: 1",
	}, {
		name: "a ConfigMap is always Current",
		root: func(t *testing.T) *observed {
			return &observed{obj: u(t, &corev1.ConfigMap{ObjectMeta: objMeta("c")}, configMapGVK)}
		},
		status:  Current,
		summary: "ConfigMap/c Current: Resource is always ready",
	}} {
		t.Run(tc.name, func(t *testing.T) {
			r := buildReport(tc.root(t))
			if r.Status != tc.status || r.Converged != (tc.status == Current) {
				t.Errorf("status %s converged %v, want %s", r.Status, r.Converged, tc.status)
			}
			if len(r.Causes) != len(tc.causes) {
				t.Fatalf("causes:\n%v\nwant\n%v", r.Causes, tc.causes)
			}
			for i := range tc.causes {
				if r.Causes[i] != tc.causes[i] {
					t.Errorf("cause %d:\n%+v\nwant\n%+v", i, r.Causes[i], tc.causes[i])
				}
			}
			if r.Summary != tc.summary {
				t.Errorf("summary:\n%s\nwant\n%s", r.Summary, tc.summary)
			}
			text := treeText(r, time.Now())
			if first, _, _ := strings.Cut(text, "\n"); first != r.Summary {
				t.Errorf("the tree's first line %q is not the summary %q", first, r.Summary)
			}
		})
	}
}

// TestLinkStatus: each kind's own judgement, kstatus' rules.
func TestLinkStatus(t *testing.T) {
	now := metav1.Now()
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"Deployment short of replicas", u(t, newDeployment(3, 1), deploymentGVK), InProgress},
		{"Deployment past its progress deadline", u(t, newDeployment(3, 1, appsv1.DeploymentCondition{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionFalse, Reason: "ProgressDeadlineExceeded"}), deploymentGVK), Failed},
		{"ReplicaSet ready", u(t, replicaSet("r", 2, 2), replicaSetGVK), Current},
		{"ReplicaSet not observed", u(t, &appsv1.ReplicaSet{ObjectMeta: objMeta("r"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](1)}}, replicaSetGVK), InProgress},
		{"Pod running and ready", u(t, runningPod("p", true), podGVK), Current},
		// kstatus: an unschedulable pod has Failed; a failed pod has completed (Current).
		{"Pod unschedulable", u(t, pendingPod("p", unscheduled), podGVK), Failed},
		{"Pod failed", u(t, &corev1.Pod{ObjectMeta: objMeta("p"), Status: corev1.PodStatus{Phase: corev1.PodFailed}}, podGVK), Current},
		{"Job running", u(t, &batchv1.Job{ObjectMeta: objMeta("j"), Status: batchv1.JobStatus{Active: 1}}, jobGVK), InProgress},
		{"Job complete", u(t, &batchv1.Job{ObjectMeta: objMeta("j"), Status: batchv1.JobStatus{Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}}}, jobGVK), Current},
		{"PVC bound", u(t, &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("c"), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound}}, claimGVK), Current},
		{"PVC pending", u(t, &corev1.PersistentVolumeClaim{ObjectMeta: objMeta("c"), Status: corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimPending}}, claimGVK), InProgress},
		{"LoadBalancer without a cluster IP", u(t, &corev1.Service{ObjectMeta: objMeta("s"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer}}, serviceGVK), InProgress},
		// explain's own rule: kstatus says Current.
		{"LoadBalancer without an address", u(t, &corev1.Service{ObjectMeta: objMeta("s"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.12"}}, serviceGVK), InProgress},
		{"LoadBalancer with its address", u(t, &corev1.Service{ObjectMeta: objMeta("s"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.12"},
			Status: corev1.ServiceStatus{LoadBalancer: corev1.LoadBalancerStatus{Ingress: []corev1.LoadBalancerIngress{{IP: "198.51.100.20"}}}}}, serviceGVK), Current},
		{"ClusterIP Service", u(t, &corev1.Service{ObjectMeta: objMeta("s"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeClusterIP}}, serviceGVK), Current},
		{"Namespace deleted", u(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n", DeletionTimestamp: &now}}, namespaceGVK), Terminating},
		{"Namespace active", u(t, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "n"}}, namespaceGVK), Current},
	} {
		if got, msg := linkStatus(tc.obj); got != tc.want {
			t.Errorf("%s: %s (%s), want %s", tc.name, got, msg, tc.want)
		}
	}
}

func TestExitCode(t *testing.T) {
	for status, want := range map[string]int{Current: ExitConverged, InProgress: ExitNotConverged, Failed: ExitNotConverged, Terminating: ExitNotConverged} {
		if got := exitCode(status); got != want {
			t.Errorf("exitCode(%s) = %d, want %d", status, got, want)
		}
	}
}

func TestLessByName(t *testing.T) {
	for _, tc := range []struct {
		a, b string
		want bool
	}{{"web-2", "web-10", true}, {"web-10", "web-2", false}, {"a", "b", true}, {"web-x", "web-1", false}} {
		if got := lessByName(tc.a, tc.b); got != tc.want {
			t.Errorf("lessByName(%s, %s) = %v", tc.a, tc.b, got)
		}
	}
}

func TestLeaderPod(t *testing.T) {
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager-cp-2"}, Spec: corev1.PodSpec{NodeName: "cp-2"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kcm-abc"}, Spec: corev1.PodSpec{NodeName: "cp-3"}},
		{ObjectMeta: metav1.ObjectMeta{Name: "kube-controller-manager-cp-1"}, Spec: corev1.PodSpec{NodeName: "cp-1"}},
	}
	for host, want := range map[string]string{"cp-1": "kube-controller-manager-cp-1", "cp-3": "kcm-abc", "cp-9": ""} {
		got := ""
		if p := leaderPod(pods, host); p != nil {
			got = p.Name
		}
		if got != want {
			t.Errorf("leaderPod(%s) = %q, want %q", host, got, want)
		}
	}
}

// TestViewLines: the tree shows a view's queue state, last sync and expectations.
func TestViewLines(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	next := now.Add(4 * time.Second)
	v := &track.View{Controller: replicaSetController, Key: "ns/web-1",
		Queue:        track.Queue{State: track.BackingOff, Retries: 3, NextAttempt: &next},
		Syncs:        []track.Sync{{Start: now.Add(-2 * time.Second), DurationSeconds: 0.01, Result: track.Error, Error: "exceeded quota"}},
		Expectations: &track.Expectations{Creations: 2, Since: now.Add(-time.Minute)}}
	got := strings.Join(viewLines(v, now), "\n")
	want := "queue: BackingOff after 3 failures, next attempt in 4s\n" +
		"last sync: Error 2s ago, took 0.010s: exceeded quota\n" +
		"expects 2 creations, 0 deletions (since 1m0s ago)"
	if got != want {
		t.Errorf("view lines:\n%s\nwant\n%s", got, want)
	}
}

// TestControllerRule: each link carries its controller's own convergence rule, the one its
// SLI keeps.
func TestControllerRule(t *testing.T) {
	lb := &corev1.Service{ObjectMeta: objMeta("lb"), Spec: corev1.ServiceSpec{Type: corev1.ServiceTypeLoadBalancer, ClusterIP: "10.0.0.1"}}
	for _, tc := range []struct {
		name       string
		controller string
		obj        *unstructured.Unstructured
		converged  bool
		why        string
	}{
		{"a Deployment short of replicas", deploymentController, u(t, newDeployment(3, 1), deploymentGVK), false, "1 of 3 replicas updated"},
		{"a ReplicaSet ready", replicaSetController, u(t, replicaSet("r", 2, 2), replicaSetGVK), true, ""},
		{"a LoadBalancer without its address", serviceLBController, u(t, lb, serviceGVK), false, ""},
	} {
		r := controllerRule(tc.controller, tc.obj)
		if r == nil {
			t.Errorf("%s: no rule", tc.name)
			continue
		}
		if r.Converged != tc.converged || !strings.Contains(r.Why, tc.why) || r.Description == "" {
			t.Errorf("%s: %+v, want converged %v and why containing %q", tc.name, r, tc.converged, tc.why)
		}
	}
	if r := controllerRule("", u(t, &corev1.ConfigMap{ObjectMeta: objMeta("c")}, configMapGVK)); r != nil {
		t.Errorf("a ConfigMap has no controller's rule: %+v", r)
	}
}
