package pvcprotection

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/scheme"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// With PersistentVolumeClaimUnusedSinceTime off, upstream neither queues a claim for lacking
// the Unused condition nor writes the condition; the finalizer is still added.
func TestUnusedSinceTimeGate(t *testing.T) {
	bound := func() *corev1.PersistentVolumeClaim {
		return &corev1.PersistentVolumeClaim{
			ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "data", Finalizers: []string{Finalizer}},
			Status:     corev1.PersistentVolumeClaimStatus{Phase: corev1.ClaimBound},
		}
	}
	for _, track := range []bool{true, false} {
		r := &Reconciler{TrackUnused: track}
		if got := r.claimNeedsWork(bound()); got != track {
			t.Errorf("TrackUnused %v: a protected bound claim without Unused needs work = %v, want %v", track, got, track)
		}
	}

	pvc := bound()
	pvc.Finalizers = nil
	cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(pvc).WithStatusSubresource(pvc).Build()
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(pvc), pvc); err != nil {
		t.Fatal(err)
	}
	r := &Reconciler{Client: cl, TrackUnused: false}
	if err := r.syncClaim(context.Background(), pvc, nil); err != nil {
		t.Fatal(err)
	}
	got := &corev1.PersistentVolumeClaim{}
	if err := cl.Get(context.Background(), client.ObjectKeyFromObject(pvc), got); err != nil {
		t.Fatal(err)
	}
	if len(got.Finalizers) != 1 || got.Finalizers[0] != Finalizer {
		t.Errorf("finalizers = %v, want the protection finalizer added", got.Finalizers)
	}
	if findUnused(got) != nil {
		t.Errorf("Unused condition written with the gate off: %+v", findUnused(got))
	}
}
