package job

import (
	"fmt"
	"strconv"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
)

// t0 is the fixed "now" of the table tests.
var t0 = time.Date(2026, 6, 1, 12, 0, 0, 0, time.UTC)

func now() metav1.Time { return metav1.NewTime(t0) }

func plainJob(completions *int32, parallelism int32) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "job", UID: "job-uid"},
		Spec: batchv1.JobSpec{
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "x"}},
			Completions:  completions,
			Parallelism:  ptr.To(parallelism),
			BackoffLimit: ptr.To[int32](6),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "x"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "c", Image: "img"}},
				},
			},
		},
	}
}

func indexedJob(completions int32) *batchv1.Job {
	j := plainJob(ptr.To(completions), completions)
	j.Spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	return j
}

var podSeq int

// newPod is a pod of the Job with the tracking finalizer, in phase.
func newPod(phase corev1.PodPhase) *corev1.Pod {
	podSeq++
	name := fmt.Sprintf("p%d", podSeq)
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(name),
			Finalizers:        []string{batchv1.JobTrackingFinalizer},
			CreationTimestamp: metav1.NewTime(t0.Add(-time.Hour)),
		},
		Status: corev1.PodStatus{Phase: phase},
	}
}

func podAt(index int, phase corev1.PodPhase) *corev1.Pod {
	p := newPod(phase)
	p.Annotations = map[string]string{batchv1.JobCompletionIndexAnnotation: strconv.Itoa(index)}
	return p
}

// exited gives the pod container "c" terminated with code at t.
func exited(p *corev1.Pod, code int32, at time.Time) *corev1.Pod {
	p.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name:  "c",
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, FinishedAt: metav1.NewTime(at)}},
	}}
	return p
}

func withoutFinalizer(p *corev1.Pod) *corev1.Pod {
	p.Finalizers = nil
	return p
}

func withCondition(p *corev1.Pod, t corev1.PodConditionType) *corev1.Pod {
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{Type: t, Status: corev1.ConditionTrue})
	return p
}

func deleting(p *corev1.Pod) *corev1.Pod {
	p.DeletionTimestamp = ptr.To(metav1.NewTime(t0))
	return p
}

func withAnnotation(p *corev1.Pod, k, v string) *corev1.Pod {
	if p.Annotations == nil {
		p.Annotations = map[string]string{}
	}
	p.Annotations[k] = v
	return p
}
