//go:build linux

package process_test

import (
	"strings"
	"testing"

	. "github.com/onsi/gomega"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// TestEvaluateSelectors: a dashboard query selects the scrape's series its matchers match
// (job, instance and cluster being Prometheus' own labels), names a problem when a by() label
// or the family is missing, and counts the scrape itself for up.
func TestEvaluateSelectors(t *testing.T) {
	parser := expfmt.NewTextParser(model.UTF8Validation)
	scraped, err := parser.TextToMetricFamilies(strings.NewReader(`# TYPE rest_client_requests_total counter
rest_client_requests_total{code="200",host="h",method="GET"} 3
rest_client_requests_total{code="404",host="h",method="GET"} 1
rest_client_requests_total{code="201",host="h",method="POST"} 2
# TYPE workqueue_queue_duration_seconds histogram
workqueue_queue_duration_seconds_bucket{name="deployment",le="+Inf"} 1
workqueue_queue_duration_seconds_sum{name="deployment"} 0.1
workqueue_queue_duration_seconds_count{name="deployment"} 1
`))
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		query    string
		series   int
		problems []string
	}{
		{`sum(rate(rest_client_requests_total{job="kube-controller-manager", instance=~"$instance",code=~"2.."}[5m]))`, 2, nil},
		{`sum(rate(rest_client_requests_total{job="kube-controller-manager",code=~"5.."}[5m]))`, 0, nil},
		{`sum(rate(rest_client_requests_total{code!="404", method="GET"}[5m])) by (cluster, method)`, 1, nil},
		{`histogram_quantile(0.99, sum(rate(workqueue_queue_duration_seconds_bucket{cluster="$cluster"}[5m])) by (cluster, instance, name, le))`, 1, nil},
		{`sum(rate(workqueue_queue_duration_seconds_bucket{cluster="$cluster"}[5m])) by (verb, le)`, 0,
			[]string{"workqueue_queue_duration_seconds_bucket has no label verb to group by"}},
		{`go_goroutines{job="kube-controller-manager"}`, 0, []string{"no family serves go_goroutines"}},
		{`sum(up{cluster="$cluster", job="kube-controller-manager"})`, 1, nil},
	} {
		g := NewWithT(t)
		series, problems := evaluateSelectors(tc.query, scraped)
		g.Expect(series).To(Equal(tc.series), tc.query)
		g.Expect(problems).To(HaveLen(len(tc.problems)), tc.query)
		for i, p := range tc.problems {
			g.Expect(problems[i]).To(ContainSubstring(p), tc.query)
		}
	}
}
