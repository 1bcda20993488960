package garbagecollector

import (
	"context"
	"testing"
	"time"

	"k8s.io/client-go/discovery/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/component-base/metrics/legacyregistry"
)

// TestDiscoveryWithoutResourcesCounts: a discovery pass that finds no deletable resource is
// a resources sync error, as upstream, and comes back after the period.
func TestDiscoveryWithoutResourcesCounts(t *testing.T) {
	registerMetrics()
	before := syncErrorCount(t)
	r := &Reconciler{discovery: &fake.FakeDiscovery{Fake: &clienttesting.Fake{}}, DiscoveryPeriod: time.Minute}
	res, err := r.discover(context.Background())
	if err != nil || res.RequeueAfter != time.Minute {
		t.Fatalf("discover = %v, %v; want a requeue after the period", res, err)
	}
	after := syncErrorCount(t)
	if after != before+1 {
		t.Errorf("resources_sync_error_total went from %v to %v, want one more", before, after)
	}
}

// syncErrorCount reads the counter from the registry kcm's /metrics serves.
func syncErrorCount(t *testing.T) float64 {
	t.Helper()
	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range families {
		if f.GetName() == "garbagecollector_controller_resources_sync_error_total" {
			return f.GetMetric()[0].GetCounter().GetValue()
		}
	}
	t.Fatal("garbagecollector_controller_resources_sync_error_total is not registered")
	return 0
}
