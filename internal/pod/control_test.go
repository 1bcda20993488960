package pod

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/events"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/kcm/kcm/internal/expectations"
)

func TestCreate(t *testing.T) {
	terminating := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: 403, Reason: metav1.StatusReasonForbidden,
		Message: `pods "web" is forbidden: unable to create new content in namespace ns because it is being terminated`,
		Details: &metav1.StatusDetails{Causes: []metav1.StatusCause{{Type: corev1.NamespaceTerminatingCause}}},
	}}
	quota := apierrors.NewForbidden(schema.GroupResource{Resource: "pods"}, "web", errors.New("exceeded quota"))
	for _, tc := range []struct {
		name      string
		refuse    error
		wantEvent string // "" for none
	}{
		{"created", nil, "Normal SuccessfulCreate Created pod: web"},
		{"refused: a Warning with the error", quota, "Warning FailedCreate Error creating: " + quota.Error()},
		{"the namespace is being deleted: nothing reported", terminating, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := fake.NewClientBuilder().WithInterceptorFuncs(interceptor.Funcs{
				Create: func(ctx context.Context, c client.WithWatch, obj client.Object, opts ...client.CreateOption) error {
					if tc.refuse != nil {
						return tc.refuse
					}
					return c.Create(ctx, obj, opts...)
				},
			}).Build()
			rec := events.NewFakeRecorder(10)
			owner := &corev1.ReplicationController{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "rc"}}
			p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "web"}}
			err := Create(context.Background(), c, rec, owner, p)
			if !errors.Is(err, tc.refuse) {
				t.Errorf("error %v, want %v", err, tc.refuse)
			}
			if got := NamespaceTerminating(err); got != (tc.refuse == terminating) {
				t.Errorf("NamespaceTerminating = %v", got)
			}
			got := ""
			select {
			case got = <-rec.Events:
			default:
			}
			if got != tc.wantEvent || len(rec.Events) != 0 {
				t.Errorf("Event %q (and %d more), want %q only", got, len(rec.Events), tc.wantEvent)
			}
		})
	}
}

func TestCreateExpected(t *testing.T) {
	exp := expectations.New(nil)
	owner := types.NamespacedName{Namespace: "ns", Name: "web"}
	var tried atomic.Int32
	// Slow start: batches of 1, 2, 2; the second fails once, so the third is never tried.
	created, err := CreateExpected(exp, owner, 5, func(i int) error {
		tried.Add(1)
		if i == 1 {
			return errors.New("exceeded quota")
		}
		return nil
	})
	if created != 2 || err == nil || tried.Load() != 3 {
		t.Fatalf("created %d, err %v, tried %d; want 2, the quota error, 3", created, err, tried.Load())
	}
	// The two made are still expected; the failed one and the two never tried are not.
	exp.CreationObserved(owner)
	if exp.Satisfied(owner) {
		t.Fatal("satisfied with one creation still to observe")
	}
	exp.CreationObserved(owner)
	if !exp.Satisfied(owner) {
		t.Fatal("not satisfied once both creations made were observed")
	}
}
