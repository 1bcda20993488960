package job

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"strconv"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/sets"

	"github.com/kcm/kcm/internal/pod"
)

// indexesOf returns the completion indexes of the pods that have one.
func indexesOf(pods []*corev1.Pod) []int {
	set := sets.New[int]()
	for _, p := range pods {
		if ix := completionIndex(p); ix != unknownCompletionIndex {
			set.Insert(ix)
		}
	}
	return sets.List(set)
}

// firstPendingIndexes returns up to count indexes below completions that no active pod
// runs and that have neither succeeded nor failed; with podReplacementPolicy Failed, the
// indexes of terminating pods are not pending either.
func firstPendingIndexes(s *syncState, count, completions int) []int {
	if count <= 0 {
		return nil
	}
	busy := s.succeededIndexes.with(indexesOf(s.active)...)
	if onlyReplaceFailedPods(s.job) {
		var terminating []*corev1.Pod
		for _, p := range s.pods {
			if pod.IsTerminating(p) {
				terminating = append(terminating, p)
			}
		}
		busy = busy.with(indexesOf(terminating)...)
	}
	if s.failedIndexes != nil {
		busy = busy.union(*s.failedIndexes)
	}
	var out []int
	for ix := 0; ix < completions && len(out) < count; ix++ {
		if i := sort.Search(len(busy), func(i int) bool { return busy[i].last >= ix }); i < len(busy) && busy[i].first <= ix {
			ix = busy[i].last // skip the whole range
			continue
		}
		out = append(out, ix)
	}
	return out
}

// deleteFirst orders pods for removal as upstream's ActivePods does for Jobs (see
// pod.ActiveFirst): unlike ReplicaSets, Jobs ignore the pod-deletion-cost annotation.
func deleteFirst(pods []*corev1.Pod) {
	sort.SliceStable(pods, func(i, j int) bool { return pod.ActiveFirst(pods[i], pods[j]) })
}

// activePodsForRemoval picks the active pods to delete: for an Indexed Job every pod
// without a valid index and all but one pod of a repeated index first, then as many more
// as needed to remove at least rmAtLeast, in deleteFirst order.
func activePodsForRemoval(job *batchv1.Job, active []*corev1.Pod, rmAtLeast int) []*corev1.Pod {
	var rm, keep []*corev1.Pod
	if isIndexed(job) {
		byIndex := map[int][]*corev1.Pod{}
		for _, p := range active {
			ix, ok := validIndex(p, job)
			if !ok {
				rm = append(rm, p)
				continue
			}
			byIndex[ix] = append(byIndex[ix], p)
		}
		ixs := make([]int, 0, len(byIndex))
		for ix := range byIndex {
			ixs = append(ixs, ix)
		}
		slices.Sort(ixs)
		for _, ix := range ixs {
			same := byIndex[ix]
			deleteFirst(same)
			rm = append(rm, same[:len(same)-1]...)
			keep = append(keep, same[len(same)-1])
		}
	} else {
		keep = append(keep, active...)
	}
	if n := rmAtLeast - len(rm); n > 0 {
		deleteFirst(keep)
		rm = append(rm, keep[:min(n, len(keep))]...)
	}
	return rm
}

// podsWithDelayedDeletion returns, for each index with backoffLimitPerIndex that has
// neither succeeded, failed nor an active pod, its latest failed pod: that pod keeps its
// finalizer (so it stays around) until its replacement exists, because the replacement
// inherits its failure count from it.
func podsWithDelayedDeletion(s *syncState) map[int]*corev1.Pod {
	active := sets.New(indexesOf(s.active)...)
	out := map[int]*corev1.Pod{}
	for _, p := range s.pods {
		if !hasTrackingFinalizer(p) || s.expectedRmFinalizers.Has(p.UID) || !isPodFailed(p, s.job) {
			continue
		}
		ix, ok := validIndex(p, s.job)
		if !ok || s.succeededIndexes.has(ix) || (s.failedIndexes != nil && s.failedIndexes.has(ix)) || active.Has(ix) {
			continue
		}
		if prev, ok := out[ix]; ok {
			if absoluteFailureCount(prev) > absoluteFailureCount(p) || finishTime(p).Before(finishTime(prev)) {
				continue
			}
		}
		out[ix] = p
	}
	return out
}

// isIndexFailed reports whether a failed pod fails its index: a FailIndex rule matched, or
// its counted failure exhausts backoffLimitPerIndex.
func isIndexFailed(job *batchv1.Job, p *corev1.Pod) bool {
	if !isPodFailed(p, job) {
		return false
	}
	v := matchPodFailurePolicy(job.Spec.PodFailurePolicy, p)
	if v.action != nil && *v.action == batchv1.PodFailurePolicyActionFailIndex {
		return true
	}
	return v.counts && failureCount(p) >= *job.Spec.BackoffLimitPerIndex
}

// failureCount is the pod's job-index-failure-count annotation: the counted failures of
// its index before it (0 when absent or invalid).
func failureCount(p *corev1.Pod) int32 {
	return annotationInt32(p, batchv1.JobIndexFailureCountAnnotation)
}

// absoluteFailureCount adds the ignored failures of the index.
func absoluteFailureCount(p *corev1.Pod) int32 {
	return failureCount(p) + annotationInt32(p, batchv1.JobIndexIgnoredFailureCountAnnotation)
}

func annotationInt32(p *corev1.Pod, key string) int32 {
	v, ok := p.Annotations[key]
	if !ok {
		return 0
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 || n > math.MaxInt32 {
		return 0
	}
	return int32(n)
}

// replacementFailureCounts are the failure counts a new pod of an index starts with: those
// of the pod it replaces plus that pod's own failure, counted or ignored.
func replacementFailureCounts(job *batchv1.Job, replaced *corev1.Pod) (counted, ignored int32) {
	if replaced == nil {
		return 0, 0
	}
	counted = failureCount(replaced)
	ignored = annotationInt32(replaced, batchv1.JobIndexIgnoredFailureCountAnnotation)
	if countsAsFailure(job, replaced) {
		counted++
	} else {
		ignored++
	}
	return counted, ignored
}

// podForJob is the pod the Job creates: its template with the tracking finalizer,
// controlled by the Job and, for an index, with the index annotation, label, environment
// variable and hostname <job>-<index>. replaced is the failed pod of that index it
// replaces, if any (backoffLimitPerIndex).
func podForJob(job *batchv1.Job, index int, replaced *corev1.Pod) *corev1.Pod {
	t := job.Spec.Template.DeepCopy()
	generateName := job.Name + "-"
	if index != unknownCompletionIndex {
		for i := range t.Spec.InitContainers {
			addIndexEnv(&t.Spec.InitContainers[i])
		}
		for i := range t.Spec.Containers {
			addIndexEnv(&t.Spec.Containers[i])
		}
		if t.Annotations == nil {
			t.Annotations = map[string]string{}
		}
		if t.Labels == nil {
			t.Labels = map[string]string{}
		}
		ix := strconv.Itoa(index)
		t.Annotations[batchv1.JobCompletionIndexAnnotation] = ix
		t.Labels[batchv1.JobCompletionIndexAnnotation] = ix
		t.Spec.Hostname = fmt.Sprintf("%s-%d", job.Name, index)
		generateName = generateNameWithIndex(job.Name, index)
		if hasBackoffLimitPerIndex(job) {
			counted, ignored := replacementFailureCounts(job, replaced)
			t.Annotations[batchv1.JobIndexFailureCountAnnotation] = strconv.Itoa(int(counted))
			if ignored > 0 {
				t.Annotations[batchv1.JobIndexIgnoredFailureCountAnnotation] = strconv.Itoa(int(ignored))
			}
		}
	}
	finalizers := t.Finalizers
	if !slices.Contains(finalizers, batchv1.JobTrackingFinalizer) {
		finalizers = append(finalizers, batchv1.JobTrackingFinalizer)
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       job.Namespace,
			GenerateName:    generateName,
			Labels:          t.Labels,
			Annotations:     t.Annotations,
			Finalizers:      finalizers,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(job, jobGVK)},
		},
		Spec: t.Spec,
	}
}

// addIndexEnv exposes the completion index to a container as JOB_COMPLETION_INDEX, read
// from the pod's index label, unless the container sets it itself.
func addIndexEnv(c *corev1.Container) {
	for _, e := range c.Env {
		if e.Name == completionIndexEnv {
			return
		}
	}
	c.Env = append(c.Env, corev1.EnvVar{
		Name: completionIndexEnv,
		ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{
			FieldPath: fmt.Sprintf("metadata.labels['%s']", batchv1.JobCompletionIndexAnnotation),
		}},
	})
}

// generateNameWithIndex is "<job>-<index>-", the job name shortened so that the whole
// prefix survives the API server's generated-name limit.
func generateNameWithIndex(jobName string, index int) string {
	suffix := "-" + strconv.Itoa(index) + "-"
	if len(jobName)+len(suffix) > maxGeneratedNameLength {
		jobName = jobName[:maxGeneratedNameLength-len(suffix)]
	}
	return jobName + suffix
}
