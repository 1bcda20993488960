package job_test

import (
	"maps"
	"slices"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/testenv"
)

// seriesDelta is a series of the legacy registry /metrics serves (a counter's value, a
// histogram's sample count) expected to grow by at least delta.
type seriesDelta struct {
	name   string
	labels map[string]string
	delta  float64
}

// grew reads the series now and returns a check that each has grown by its delta since, and
// that its family is gathered with exactly the series' label names.
func grew(want ...seriesDelta) func(Gomega) {
	before := make([]float64, len(want))
	for i, w := range want {
		before[i] = testenv.Sample(w.name, w.labels)
	}
	return func(g Gomega) {
		for i, w := range want {
			g.Expect(testenv.LabelNames(w.name)).To(Equal(slices.Sorted(maps.Keys(w.labels))), "label names of %s (nil: not gathered)", w.name)
			g.Expect(testenv.Sample(w.name, w.labels)-before[i]).To(BeNumerically(">=", w.delta), "%s%v", w.name, w.labels)
		}
	}
}

var _ = Describe("job-controller metrics", func() {
	var ns string
	BeforeEach(func() { ns = env.Namespace(ctx, "job-metrics") })

	It("counts syncs, pod creations, finished pods, failure policy actions and the finished Job as upstream", func() {
		sync := map[string]string{"completion_mode": "NonIndexed", "result": "success", "action": "pods_created"}
		check := grew(
			seriesDelta{"job_controller_job_syncs_total", sync, 2},
			seriesDelta{"job_controller_job_sync_duration_seconds", sync, 2},
			seriesDelta{"job_controller_job_syncs_total", map[string]string{"completion_mode": "NonIndexed", "result": "success", "action": "tracking"}, 1},
			seriesDelta{"job_controller_job_pods_creation_total", map[string]string{"reason": "new", "status": "succeeded"}, 1},
			// With a pod failure policy the API server defaults podReplacementPolicy to Failed.
			seriesDelta{"job_controller_job_pods_creation_total", map[string]string{"reason": "recreate_failed", "status": "succeeded"}, 1},
			seriesDelta{"job_controller_pod_failures_handled_by_failure_policy_total", map[string]string{"action": "Count"}, 1},
			seriesDelta{"job_controller_job_pods_finished_total", map[string]string{"completion_mode": "NonIndexed", "result": "failed"}, 1},
			seriesDelta{"job_controller_job_pods_finished_total", map[string]string{"completion_mode": "NonIndexed", "result": "succeeded"}, 1},
			seriesDelta{"job_controller_terminated_pods_tracking_finalizer_total", map[string]string{"event": "add"}, 2},
			seriesDelta{"job_controller_terminated_pods_tracking_finalizer_total", map[string]string{"event": "delete"}, 2},
			seriesDelta{"job_controller_jobs_finished_total", map[string]string{"completion_mode": "NonIndexed", "result": "succeeded", "reason": "CompletionsReached"}, 1},
		)
		j := newJob(ns, "counted", ptr.To[int32](1), 1)
		j.Spec.PodFailurePolicy = &batchv1.PodFailurePolicy{Rules: []batchv1.PodFailurePolicyRule{{
			Action:      batchv1.PodFailurePolicyActionCount,
			OnExitCodes: &batchv1.PodFailurePolicyOnExitCodesRequirement{Operator: batchv1.PodFailurePolicyOnExitCodesOpIn, Values: []int32{42}},
		}}}
		create(j)

		first := waitActive(j, 1)[0]
		fail(&first, 42)
		Eventually(func(g Gomega) {
			pods := activePods(g, j)
			g.Expect(pods).To(HaveLen(1))
			g.Expect(pods[0].Name).NotTo(Equal(first.Name))
		}).WithTimeout(10 * time.Second).Should(Succeed())
		second := waitActive(j, 1)[0]
		succeed(&second)
		expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		Eventually(check).Should(Succeed())
	})

	It("counts the finished indexes of an Indexed Job", func() {
		check := grew(
			seriesDelta{"job_controller_job_finished_indexes_total", map[string]string{"status": "succeeded", "backoffLimit": "global"}, 2},
			seriesDelta{"job_controller_job_pods_finished_total", map[string]string{"completion_mode": "Indexed", "result": "succeeded"}, 2},
			seriesDelta{"job_controller_jobs_finished_total", map[string]string{"completion_mode": "Indexed", "result": "succeeded", "reason": "CompletionsReached"}, 1},
		)
		j := create(indexed(newJob(ns, "indexes", ptr.To[int32](2), 2)))
		for _, p := range waitActive(j, 2) {
			succeed(&p)
		}
		expectFinishedWith(j, batchv1.JobSuccessCriteriaMet, batchv1.JobComplete, batchv1.JobReasonCompletionsReached)
		Eventually(check).Should(Succeed())
	})

	It("counts a Job another controller manages, and leaves it alone", func() {
		other := map[string]string{"controller_name": "example.com/metrics-controller"}
		check := grew(seriesDelta{"job_controller_jobs_by_external_controller_total", other, 1})
		j := newJob(ns, "elsewhere", ptr.To[int32](1), 1)
		j.Spec.ManagedBy = ptr.To("example.com/metrics-controller")
		create(j)
		Eventually(check).Should(Succeed())
		// The witness that job-controller saw it: counted, yet no pod created.
		Consistently(func(g Gomega) []corev1.Pod { return allPods(g, j) }).WithTimeout(time.Second).Should(BeEmpty())
	})
})
