package patch_test

import (
	"context"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"

	"github.com/kcm/kcm/internal/patch"
)

// A status written from a copy older than another writer's label change conflicts instead
// of taking the label back (an update of the status subresource writes metadata too).
func TestStatusFromAStaleCopyConflicts(t *testing.T) {
	ctx := context.Background()
	rs := &appsv1.ReplicaSet{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
	c := fake.NewClientBuilder().WithObjects(rs).WithStatusSubresource(rs).Build()
	stale := &appsv1.ReplicaSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rs), stale); err != nil {
		t.Fatal(err)
	}
	labelled := stale.DeepCopy()
	labelled.Labels = map[string]string{"test-rs": "patched"}
	if err := c.Update(ctx, labelled); err != nil {
		t.Fatal(err)
	}

	stale.Status.Replicas = 3
	if err := patch.Status(ctx, c, stale); !apierrors.IsConflict(err) {
		t.Fatalf("status from a stale copy: %v, want a conflict", err)
	}
	got := &appsv1.ReplicaSet{}
	if err := c.Get(ctx, client.ObjectKeyFromObject(rs), got); err != nil {
		t.Fatal(err)
	}
	if got.Labels["test-rs"] != "patched" {
		t.Fatalf("labels %v: the label was taken back", got.Labels)
	}

	// From the current copy the status is written.
	got.Status.Replicas = 3
	if err := patch.Status(ctx, c, got); err != nil {
		t.Fatal(err)
	}
	if got.Status.Replicas != 3 || got.Labels["test-rs"] != "patched" {
		t.Fatalf("after the write: replicas %d labels %v", got.Status.Replicas, got.Labels)
	}
}
