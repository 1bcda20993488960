package ttl

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/manager"
)

// TestReconcilePatchesOnlyWhenDifferent counts the API calls that an envtest spec cannot
// see: a patch that changes nothing leaves no trace on the node.
func TestReconcilePatchesOnlyWhenDifferent(t *testing.T) {
	tests := []struct {
		name        string
		annotations map[string]string
		desired     int
		wantPatch   bool
	}{
		{name: "already right", annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "15"}, desired: 15},
		{name: "already right at 0", annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "0"}, desired: 0},
		{name: "missing", desired: 0, wantPatch: true},
		{name: "other value", annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "0"}, desired: 15, wantPatch: true},
		{name: "unreadable", annotations: map[string]string{corev1.ObjectTTLAnnotationKey: "soon", "keep": "me"}, desired: 15, wantPatch: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", Annotations: tt.annotations}}
			patches := 0
			cl := fake.NewClientBuilder().WithScheme(manager.Scheme()).WithObjects(node).
				WithInterceptorFuncs(interceptor.Funcs{
					Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
						patches++
						return c.Patch(ctx, obj, patch, opts...)
					},
				}).Build()
			r := &Reconciler{Client: cl, nodes: map[string]struct{}{}, ttl: tt.desired}
			if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "n"}}); err != nil {
				t.Fatal(err)
			}
			if got := patches > 0; got != tt.wantPatch {
				t.Fatalf("patched %d times, want patch %v", patches, tt.wantPatch)
			}
			got := &corev1.Node{}
			if err := cl.Get(context.Background(), types.NamespacedName{Name: "n"}, got); err != nil {
				t.Fatal(err)
			}
			if v, ok := currentTTL(got); !ok || v != tt.desired {
				t.Errorf("annotation %q, want %d", got.Annotations[corev1.ObjectTTLAnnotationKey], tt.desired)
			}
			if tt.annotations["keep"] != "" && got.Annotations["keep"] != "me" {
				t.Errorf("other annotations lost: %v", got.Annotations)
			}
		})
	}
	t.Run("deleted node", func(t *testing.T) {
		r := &Reconciler{Client: fake.NewClientBuilder().WithScheme(manager.Scheme()).Build()}
		if _, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: types.NamespacedName{Name: "gone"}}); err != nil {
			t.Fatal(err)
		}
	})
}
