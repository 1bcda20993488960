package storagemetrics

import (
	"testing"

	dto "github.com/prometheus/client_model/go"
	"k8s.io/component-base/metrics/legacyregistry"
)

// The families carry upstream's names, types, label names and label values, with
// upstream's buckets.
func TestRecord(t *testing.T) {
	RecordOperation("kubernetes.io/csi:hostpath.csi.k8s.io", "volume_attach", 0.2, true, false)
	RecordEndToEnd("kubernetes.io/host-path", "delete", 3)
	RecordCSIOperation("hostpath.csi.k8s.io", "ControllerPublishVolume", "OK", 0.05, true)

	families, err := legacyregistry.DefaultGatherer.Gather()
	if err != nil {
		t.Fatal(err)
	}
	byName := map[string]*dto.MetricFamily{}
	for _, f := range families {
		byName[f.GetName()] = f
	}
	for _, tt := range []struct {
		name   string
		help   string
		labels map[string]string
	}{
		{"storage_operation_duration_seconds", "[BETA] Storage operation duration", map[string]string{
			"volume_plugin": "kubernetes.io/csi:hostpath.csi.k8s.io", "operation_name": "volume_attach",
			"status": "fail-unknown", "migrated": "false"}},
		{"volume_operation_total_seconds", "[BETA] Storage operation end to end duration in seconds", map[string]string{
			"plugin_name": "kubernetes.io/host-path", "operation_name": "delete"}},
		{"csi_operations_seconds", "[ALPHA] Container Storage Interface operation duration with gRPC error code status total", map[string]string{
			"driver_name": "hostpath.csi.k8s.io", "method_name": "ControllerPublishVolume", "grpc_status_code": "OK", "migrated": "true"}},
	} {
		f := byName[tt.name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM || f.GetHelp() != tt.help || len(f.GetMetric()) != 1 {
			t.Errorf("%s: got %v", tt.name, f)
			continue
		}
		m := f.GetMetric()[0]
		got := map[string]string{}
		for _, l := range m.GetLabel() {
			got[l.GetName()] = l.GetValue()
		}
		if len(got) != len(tt.labels) {
			t.Errorf("%s: labels %v, want %v", tt.name, got, tt.labels)
		}
		for k, v := range tt.labels {
			if got[k] != v {
				t.Errorf("%s: labels %v, want %v", tt.name, got, tt.labels)
			}
		}
		h := m.GetHistogram()
		if h.GetSampleCount() != 1 || len(h.GetBucket()) != 13 || h.GetBucket()[0].GetUpperBound() != 0.1 || h.GetBucket()[12].GetUpperBound() != 600 {
			t.Errorf("%s: histogram %v, want one observation in upstream's 13 buckets", tt.name, h)
		}
	}
}
