package podautoscaler

import (
	"testing"

	autoscalingv2 "k8s.io/api/autoscaling/v2"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/event"
)

// The flag's tolerance, replaced per direction by behavior's (HPAConfigurableTolerance).
func TestTolerances(t *testing.T) {
	withTolerance := func(up, down string) *autoscalingv2.HorizontalPodAutoscalerBehavior {
		b := &autoscalingv2.HorizontalPodAutoscalerBehavior{ScaleUp: &autoscalingv2.HPAScalingRules{}, ScaleDown: &autoscalingv2.HPAScalingRules{}}
		if up != "" {
			b.ScaleUp.Tolerance = ptr.To(resource.MustParse(up))
		}
		if down != "" {
			b.ScaleDown.Tolerance = ptr.To(resource.MustParse(down))
		}
		return b
	}
	cases := []struct {
		name     string
		gate     bool
		behavior *autoscalingv2.HorizontalPodAutoscalerBehavior
		want     Tolerances
	}{
		{name: "no behavior", gate: true, want: Tolerances{ScaleDown: 0.1, ScaleUp: 0.1}},
		{name: "both set", gate: true, behavior: withTolerance("0.05", "0.2"), want: Tolerances{ScaleDown: 0.2, ScaleUp: 0.05}},
		{name: "scale-up only", gate: true, behavior: withTolerance("0", ""), want: Tolerances{ScaleDown: 0.1, ScaleUp: 0}},
		{name: "gate off", gate: false, behavior: withTolerance("0.05", "0.2"), want: Tolerances{ScaleDown: 0.1, ScaleUp: 0.1}},
	}
	for _, tc := range cases {
		r := &Reconciler{Tolerance: 0.1, ConfigurableTolerance: tc.gate}
		hpa := &autoscalingv2.HorizontalPodAutoscaler{Spec: autoscalingv2.HorizontalPodAutoscalerSpec{Behavior: tc.behavior}}
		if got := r.tolerances(hpa); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// Memory is reported in binary units, as metrics-server reports it; everything else in
// decimal ones.
func TestBuildQuantity(t *testing.T) {
	if got := buildQuantity(corev1.ResourceMemory, 64*1024*1024*1000); got.String() != "64Mi" {
		t.Errorf("memory: %s", got.String())
	}
	if got := buildQuantity(corev1.ResourceCPU, 250); got.String() != "250m" {
		t.Errorf("cpu: %s", got.String())
	}
}

// HPAs are synced at once when created or deleted, and on spec changes only with
// HPAGeneration; status writes wait for the period.
func TestUpdatesSynced(t *testing.T) {
	hpa := func(gen int64) *autoscalingv2.HorizontalPodAutoscaler {
		h := &autoscalingv2.HorizontalPodAutoscaler{}
		h.Generation = gen
		return h
	}
	for _, gate := range []bool{true, false} {
		p := updatesSynced(gate)
		if !p.Create(event.CreateEvent{Object: hpa(1)}) || !p.Delete(event.DeleteEvent{Object: hpa(1)}) {
			t.Errorf("gate %v: creation or deletion not synced", gate)
		}
		if p.Update(event.UpdateEvent{ObjectOld: hpa(1), ObjectNew: hpa(1)}) {
			t.Errorf("gate %v: a status-only update synced at once", gate)
		}
		if got := p.Update(event.UpdateEvent{ObjectOld: hpa(1), ObjectNew: hpa(2)}); got != gate {
			t.Errorf("gate %v: a spec change synced at once: %v", gate, got)
		}
	}
}
