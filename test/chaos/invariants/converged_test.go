package invariants

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// settled is a namespace where everything has converged: a Deployment rolled from old to
// new, a ReplicaSet, a Job, a StatefulSet and a DaemonSet, all done.
type settled struct {
	d        *appsv1.Deployment
	old, new *appsv1.ReplicaSet
	rs       *appsv1.ReplicaSet
	job      *batchv1.Job
	sts      *appsv1.StatefulSet
	ds       *appsv1.DaemonSet
	ns       *corev1.Namespace
}

func newSettled() *settled {
	template := corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "v2"}}}}
	d := &appsv1.Deployment{ObjectMeta: meta("web", "web"), Spec: appsv1.DeploymentSpec{Replicas: ptr.To[int32](10), Template: template},
		Status: appsv1.DeploymentStatus{Replicas: 10, UpdatedReplicas: 10, ReadyReplicas: 10, AvailableReplicas: 10,
			Conditions: []appsv1.DeploymentCondition{{Type: appsv1.DeploymentProgressing, Status: corev1.ConditionTrue, Reason: "NewReplicaSetAvailable"}}}}
	child := func(name, image string, replicas int32) *appsv1.ReplicaSet {
		t := *template.DeepCopy()
		t.Labels[appsv1.DefaultDeploymentUniqueLabelKey] = name
		t.Spec.Containers[0].Image = image
		return &appsv1.ReplicaSet{ObjectMeta: meta("web-"+name, "web-"+name, controlledBy("Deployment", "web", "web")),
			Spec:   appsv1.ReplicaSetSpec{Replicas: ptr.To(replicas), Template: t},
			Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: replicas, AvailableReplicas: replicas}}
	}
	finished := metav1.Now()
	return &settled{d: d, old: child("old", "v1", 0), new: child("new", "v2", 10),
		rs: &appsv1.ReplicaSet{ObjectMeta: meta("rs", "rs"), Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)},
			Status: appsv1.ReplicaSetStatus{Replicas: 2, ReadyReplicas: 2}},
		job: &batchv1.Job{ObjectMeta: meta("job", "job"), Status: batchv1.JobStatus{Succeeded: 10,
			Conditions: []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: finished}}}},
		sts: &appsv1.StatefulSet{ObjectMeta: meta("db", "db"), Spec: appsv1.StatefulSetSpec{Replicas: ptr.To[int32](5)},
			Status: appsv1.StatefulSetStatus{Replicas: 5, ReadyReplicas: 5, UpdatedReplicas: 5, CurrentRevision: "db-1", UpdateRevision: "db-1"}},
		ds: &appsv1.DaemonSet{ObjectMeta: meta("ds", "ds"),
			Status: appsv1.DaemonSetStatus{DesiredNumberScheduled: 3, CurrentNumberScheduled: 3, UpdatedNumberScheduled: 3, NumberAvailable: 3, NumberReady: 3}},
		ns: &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}},
	}
}

func (s *settled) objects() []client.Object {
	return []client.Object{s.d, s.old, s.new, s.rs, s.job, s.sts, s.ds, s.ns}
}

func TestConverged(t *testing.T) {
	tests := []struct {
		name   string
		change func(*settled)
		want   []string
	}{
		{name: "all settled", change: func(*settled) {}},
		{name: "deployment with an old ReplicaSet still holding pods", change: func(s *settled) {
			s.old.Status.Replicas = 2
		}, want: []string{"Deployment chaos/web: old ReplicaSet web-old has 2 pods", "ReplicaSet chaos/web-old: 0 ready, 2 pods of 0 (generation 0 observed 0)"}},
		{name: "deployment not all available", change: func(s *settled) {
			s.d.Status.AvailableReplicas = 9
			s.d.Status.Conditions[0].Reason = "ReplicaSetUpdated"
		}, want: []string{`Deployment chaos/web: 10 updated, 9 available, 10 ready, 10 pods of 10; Progressing reason "ReplicaSetUpdated"`}},
		{name: "deployment spec not yet observed", change: func(s *settled) {
			s.d.Generation, s.d.Status.ObservedGeneration = 3, 2
		}, want: []string{"Deployment chaos/web: generation 3 observed 2"}},
		{name: "replicaset short of ready pods", change: func(s *settled) {
			s.rs.Status.ReadyReplicas = 1
		}, want: []string{"ReplicaSet chaos/rs: 1 ready, 2 pods of 2 (generation 0 observed 0)"}},
		{name: "job running", change: func(s *settled) {
			s.job.Status = batchv1.JobStatus{Succeeded: 7, Active: 3}
		}, want: []string{"Job chaos/job: 7 succeeded, 3 active, 0 failed, not complete"}},
		{name: "job failed", change: func(s *settled) {
			s.job.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: "BackoffLimitExceeded"}}
		}, want: []string{"Job chaos/job: failed: BackoffLimitExceeded"}},
		{name: "statefulset mid-update", change: func(s *settled) {
			s.sts.Status.UpdatedReplicas, s.sts.Status.UpdateRevision = 3, "db-2"
		}, want: []string{`StatefulSet chaos/db: 5 ready, 3 updated, 5 pods of 5, revision "db-1" to "db-2" (generation 0 observed 0)`}},
		{name: "daemonset short of available pods", change: func(s *settled) {
			s.ds.Status.NumberAvailable = 2
		}, want: []string{"DaemonSet chaos/ds: 3 scheduled, 3 updated, 2 available, 0 misscheduled of 3 desired (generation 0 observed 0)"}},
		{name: "namespace being deleted", change: func(s *settled) {
			s.ns.DeletionTimestamp, s.ns.Finalizers = ptr.To(metav1.Now()), []string{"test"}
			s.ns.Status.Phase = corev1.NamespaceTerminating
		}, want: []string{"Namespace chaos: being deleted (Terminating)"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := newSettled()
			tt.change(s)
			c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(s.objects()...).Build()
			for _, namespaces := range [][]string{nil, {ns}} {
				got, err := Converged(t.Context(), c, namespaces...)
				if err != nil {
					t.Fatal(err)
				}
				if diff := cmp.Diff(tt.want, got); diff != "" {
					t.Errorf("Converged(%v) (-want +got):\n%s", namespaces, diff)
				}
			}
		})
	}
}

// TestConvergedIgnoresKubeSystem: with no namespace given, kube-system's workloads are not
// the suite's.
func TestConvergedIgnoresKubeSystem(t *testing.T) {
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceSystem, Name: "coredns"}, Spec: appsv1.ReplicaSetSpec{Replicas: ptr.To[int32](2)}}
	c := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(rs).Build()
	got, err := Converged(t.Context(), c)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 0 {
		t.Errorf("Converged() = %v, want nothing", got)
	}
	if got, _ := Converged(t.Context(), c, metav1.NamespaceSystem); len(got) != 1 {
		t.Errorf("Converged(kube-system) = %v, want the ReplicaSet", got)
	}
}
