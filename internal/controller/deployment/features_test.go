package deployment

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// With DeploymentReplicaSetTerminatingReplicas off, upstream's status carries no
// terminatingReplicas (one written before is cleared); on, the computed count is written.
func TestTerminatingReplicasGate(t *testing.T) {
	for _, tt := range []struct {
		gate bool
		want *int32
	}{{gate: true, want: ptr.To[int32](2)}, {gate: false, want: nil}} {
		written := &appsv1.Deployment{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "d"},
			Status:     appsv1.DeploymentStatus{TerminatingReplicas: ptr.To[int32](5)},
		}
		cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(written).WithStatusSubresource(written).Build()
		if err := cl.Get(context.Background(), client.ObjectKeyFromObject(written), written); err != nil {
			t.Fatal(err)
		}
		d := written.DeepCopy()
		d.Status.TerminatingReplicas = ptr.To[int32](2) // as calculateStatus computes it
		s := &syncer{Reconciler: &Reconciler{Client: cl, TerminatingReplicas: tt.gate}, d: d, written: written}
		if err := s.writeStatus(context.Background()); err != nil {
			t.Fatal(err)
		}
		got := &appsv1.Deployment{}
		if err := cl.Get(context.Background(), client.ObjectKeyFromObject(written), got); err != nil {
			t.Fatal(err)
		}
		if !ptr.Equal(got.Status.TerminatingReplicas, tt.want) {
			t.Errorf("gate %v: status.terminatingReplicas = %v, want %v", tt.gate, ptr.Deref(got.Status.TerminatingReplicas, -1), ptr.Deref(tt.want, -1))
		}
	}
}
