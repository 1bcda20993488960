package syncmetrics

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/component-base/metrics/legacyregistry"
)

func TestCode(t *testing.T) {
	cases := map[string]struct {
		err  error
		want string
	}{
		"success":           {want: "200"},
		"conflict":          {err: fmt.Errorf("updating: %w", apierrors.NewConflict(certificatesv1.Resource("clustertrustbundles"), "x", errors.New("stale"))), want: "409"},
		"not an API status": {err: errors.New("connection refused"), want: "500"},
	}
	for name, tc := range cases {
		if got := Code(tc.err); got != tc.want {
			t.Errorf("%s: code %s, want %s", name, got, tc.want)
		}
	}
}

// TestSyncs: the pair as /metrics shows it, registered once however often Register runs.
func TestSyncs(t *testing.T) {
	s := New("syncmetrics_test", "Number of syncs.", "The time a sync took.")
	s.Register()
	s.Register()
	s.Record(time.Now(), nil)
	s.Record(time.Now(), apierrors.NewConflict(certificatesv1.Resource("clustertrustbundles"), "x", errors.New("stale")))
	s.Record(time.Now(), nil)

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]string{}
	for _, mf := range families {
		switch mf.GetName() {
		case "syncmetrics_test_sync_total":
			for _, m := range mf.GetMetric() {
				seen["total "+m.GetLabel()[0].GetValue()] = fmt.Sprint(m.GetCounter().GetValue())
			}
		case "syncmetrics_test_sync_duration_seconds":
			for _, m := range mf.GetMetric() {
				seen["duration "+m.GetLabel()[0].GetValue()] = fmt.Sprint(m.GetHistogram().GetSampleCount(), len(m.GetHistogram().GetBucket()))
			}
		default:
			continue
		}
		if !strings.HasPrefix(mf.GetHelp(), "[ALPHA] ") {
			t.Errorf("%s: help %q, want an ALPHA metric", mf.GetName(), mf.GetHelp())
		}
	}
	want := map[string]string{"total 200": "2", "total 409": "1", "duration 200": "2 15", "duration 409": "1 15"}
	if fmt.Sprint(seen) != fmt.Sprint(want) {
		t.Errorf("got %v, want %v", seen, want)
	}
}
