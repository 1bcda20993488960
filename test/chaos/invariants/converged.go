package invariants

import (
	"context"
	"fmt"
	"strings"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Converged lists what is not settled now, one line each ("Kind namespace/name: why"), in
// the namespaces given, or in all but kube-system if none:
//   - a Deployment not complete: observedGeneration behind, updated, available, ready or
//     status replicas not spec.replicas, an old ReplicaSet with pods, or Progressing not
//     NewReplicaSetAvailable;
//   - a Job without Complete=True;
//   - a StatefulSet with replicas, ready or updated pods not spec.replicas, or its current
//     revision not its update revision;
//   - a DaemonSet whose desired, current, updated and available pods differ, or with
//     misscheduled pods;
//   - a ReplicaSet with fewer ready pods than spec.replicas, or another number of pods;
//   - a namespace being deleted.
//
// The suite polls it after each fault until it returns nothing.
func Converged(ctx context.Context, c client.Reader, namespaces ...string) ([]string, error) {
	scopes := namespaces
	if len(scopes) == 0 {
		scopes = []string{""}
	}
	var pending []string
	for _, ns := range scopes {
		p, err := convergedIn(ctx, c, ns)
		if err != nil {
			return nil, err
		}
		pending = append(pending, p...)
	}
	p, err := namespacesDeleting(ctx, c, namespaces)
	return append(pending, p...), err
}

func convergedIn(ctx context.Context, c client.Reader, ns string) ([]string, error) {
	var (
		deployments  appsv1.DeploymentList
		replicaSets  appsv1.ReplicaSetList
		statefulSets appsv1.StatefulSetList
		daemonSets   appsv1.DaemonSetList
		jobs         batchv1.JobList
	)
	for _, list := range []client.ObjectList{&deployments, &replicaSets, &statefulSets, &daemonSets, &jobs} {
		if err := c.List(ctx, list, client.InNamespace(ns)); err != nil {
			return nil, err
		}
	}
	var pending []string
	add := func(o client.Object, kind, why string) {
		if why != "" && (ns != "" || o.GetNamespace() != metav1.NamespaceSystem) {
			pending = append(pending, fmt.Sprintf("%s %s/%s: %s", kind, o.GetNamespace(), o.GetName(), why))
		}
	}
	for i := range deployments.Items {
		d := &deployments.Items[i]
		add(d, "Deployment", deploymentPending(d, replicaSets.Items))
	}
	for i := range replicaSets.Items {
		add(&replicaSets.Items[i], "ReplicaSet", replicaSetPending(&replicaSets.Items[i]))
	}
	for i := range statefulSets.Items {
		add(&statefulSets.Items[i], "StatefulSet", statefulSetPending(&statefulSets.Items[i]))
	}
	for i := range daemonSets.Items {
		add(&daemonSets.Items[i], "DaemonSet", daemonSetPending(&daemonSets.Items[i]))
	}
	for i := range jobs.Items {
		add(&jobs.Items[i], "Job", jobPending(&jobs.Items[i]))
	}
	return pending, nil
}

// namespacesDeleting lists the namespaces given (or all) that are being deleted.
func namespacesDeleting(ctx context.Context, c client.Reader, names []string) ([]string, error) {
	var all []corev1.Namespace
	if len(names) == 0 {
		var list corev1.NamespaceList
		if err := c.List(ctx, &list); err != nil {
			return nil, err
		}
		all = list.Items
	}
	for _, name := range names {
		var n corev1.Namespace
		switch err := c.Get(ctx, client.ObjectKey{Name: name}, &n); {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, err
		}
		all = append(all, n)
	}
	var pending []string
	for _, n := range all {
		if n.DeletionTimestamp != nil {
			pending = append(pending, fmt.Sprintf("Namespace %s: being deleted (%s)", n.Name, n.Status.Phase))
		}
	}
	return pending, nil
}

// deploymentPending says why a Deployment's rollout is not complete, "" if it is.
func deploymentPending(d *appsv1.Deployment, sets []appsv1.ReplicaSet) string {
	var why []string
	want := ptr.Deref(d.Spec.Replicas, 1)
	s := d.Status
	if s.ObservedGeneration < d.Generation {
		why = append(why, fmt.Sprintf("generation %d observed %d", d.Generation, s.ObservedGeneration))
	}
	if s.UpdatedReplicas != want || s.AvailableReplicas != want || s.ReadyReplicas != want || s.Replicas != want {
		why = append(why, fmt.Sprintf("%d updated, %d available, %d ready, %d pods of %d", s.UpdatedReplicas, s.AvailableReplicas, s.ReadyReplicas, s.Replicas, want))
	}
	for i := range sets {
		rs := &sets[i]
		if ref := metav1.GetControllerOf(rs); ref == nil || ref.UID != d.UID || sameTemplate(rs.Spec.Template, d.Spec.Template) {
			continue
		}
		if rs.Status.Replicas > 0 {
			why = append(why, fmt.Sprintf("old ReplicaSet %s has %d pods", rs.Name, rs.Status.Replicas))
		}
	}
	progressing := ""
	for _, c := range s.Conditions {
		if c.Type == appsv1.DeploymentProgressing {
			progressing = c.Reason
		}
	}
	if progressing != "NewReplicaSetAvailable" {
		why = append(why, fmt.Sprintf("Progressing reason %q", progressing))
	}
	return strings.Join(why, "; ")
}

// sameTemplate compares a ReplicaSet's template with its Deployment's, without the
// pod-template-hash label the Deployment controller adds.
func sameTemplate(rs, d corev1.PodTemplateSpec) bool {
	rs, d = *rs.DeepCopy(), *d.DeepCopy()
	delete(rs.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	delete(d.Labels, appsv1.DefaultDeploymentUniqueLabelKey)
	return equality.Semantic.DeepEqual(rs, d)
}

func replicaSetPending(rs *appsv1.ReplicaSet) string {
	want, s := ptr.Deref(rs.Spec.Replicas, 1), rs.Status
	if s.ObservedGeneration < rs.Generation || s.ReadyReplicas < want || s.Replicas != want {
		return fmt.Sprintf("%d ready, %d pods of %d (generation %d observed %d)", s.ReadyReplicas, s.Replicas, want, rs.Generation, s.ObservedGeneration)
	}
	return ""
}

func statefulSetPending(sts *appsv1.StatefulSet) string {
	want, s := ptr.Deref(sts.Spec.Replicas, 1), sts.Status
	if s.ObservedGeneration < sts.Generation || s.Replicas != want || s.ReadyReplicas != want || s.UpdatedReplicas != want || s.CurrentRevision != s.UpdateRevision {
		return fmt.Sprintf("%d ready, %d updated, %d pods of %d, revision %q to %q (generation %d observed %d)",
			s.ReadyReplicas, s.UpdatedReplicas, s.Replicas, want, s.CurrentRevision, s.UpdateRevision, sts.Generation, s.ObservedGeneration)
	}
	return ""
}

func daemonSetPending(ds *appsv1.DaemonSet) string {
	s := ds.Status
	if s.ObservedGeneration < ds.Generation || s.CurrentNumberScheduled != s.DesiredNumberScheduled || s.UpdatedNumberScheduled != s.DesiredNumberScheduled ||
		s.NumberAvailable != s.DesiredNumberScheduled || s.NumberMisscheduled != 0 {
		return fmt.Sprintf("%d scheduled, %d updated, %d available, %d misscheduled of %d desired (generation %d observed %d)",
			s.CurrentNumberScheduled, s.UpdatedNumberScheduled, s.NumberAvailable, s.NumberMisscheduled, s.DesiredNumberScheduled, ds.Generation, s.ObservedGeneration)
	}
	return ""
}

func jobPending(j *batchv1.Job) string {
	for _, c := range j.Status.Conditions {
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return ""
		case batchv1.JobFailed:
			return fmt.Sprintf("failed: %s", c.Reason)
		}
	}
	return fmt.Sprintf("%d succeeded, %d active, %d failed, not complete", j.Status.Succeeded, j.Status.Active, j.Status.Failed)
}
