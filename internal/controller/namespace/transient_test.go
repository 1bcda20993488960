package namespace

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

func TestTransient(t *testing.T) {
	gr := schema.GroupResource{Resource: "pods"}
	throttled := apierrors.NewTooManyRequests("slow down", 1)
	unavailable := apierrors.NewServiceUnavailable("rolling")
	reset := &url.Error{Op: "Get", URL: "https://api/x", Err: syscall.ECONNRESET}
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{"nil", nil, false},
		{"429", throttled, true},
		{"500", apierrors.NewInternalError(errors.New("boom")), true},
		{"503", unavailable, true},
		{"504 server timeout", apierrors.NewServerTimeout(gr, "list", 1), true},
		{"wrapped, as the pods' error is", fmt.Errorf("failed to delete pods: %w", unavailable), true},
		{"connection reset", reset, true},
		{"cut mid-body", &url.Error{Op: "Get", URL: "https://api/x", Err: io.ErrUnexpectedEOF}, true},
		{"conflict", apierrors.NewConflict(gr, "p", errors.New("changed")), false},
		{"forbidden", apierrors.NewForbidden(gr, "p", errors.New("no")), false},
		{"all of an aggregate transient", utilerrors.NewAggregate([]error{throttled, unavailable, reset}), true},
		{"one of an aggregate not", utilerrors.NewAggregate([]error{throttled, apierrors.NewForbidden(gr, "p", errors.New("no"))}), false},
		{"a discovery group failing: an aggregated API down", &discovery.ErrGroupDiscoveryFailed{
			Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: unavailable}}, false},
		{"anything else", errors.New("webhook said no"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := transient(tt.err); got != tt.want {
				t.Errorf("transient(%v) = %v, want %v", tt.err, got, tt.want)
			}
		})
	}
}

func TestTransientBackoffDoublesToItsCapAndForgets(t *testing.T) {
	var b transientBackoff
	var got []time.Duration
	for range 8 {
		got = append(got, b.next("ns"))
	}
	want := []time.Duration{100 * time.Millisecond, 200 * time.Millisecond, 400 * time.Millisecond, 800 * time.Millisecond,
		1600 * time.Millisecond, 3200 * time.Millisecond, 5 * time.Second, 5 * time.Second}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("delays %v, want %v", got, want)
	}
	if d := b.next("other"); d != transientBase {
		t.Errorf("another namespace starts at %v, got %v", transientBase, d)
	}
	b.forget("ns")
	if d := b.next("ns"); d != transientBase {
		t.Errorf("after forget: %v, want %v", d, transientBase)
	}
}

// A pass that fails only for the API server's momentary failure comes back within the
// transient backoff, without an error (which would grow the queue's backoff up to a minute);
// one that fails otherwise returns its error to the queue.
func TestReconcileRetriesTransientFailuresSoon(t *testing.T) {
	deleted := metav1.NewTime(time.Now().Add(-time.Minute))
	ns := &corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{Name: "going", DeletionTimestamp: &deleted, Finalizers: []string{"keep"}},
		Spec:       corev1.NamespaceSpec{Finalizers: []corev1.FinalizerName{corev1.FinalizerKubernetes}},
		Status:     corev1.NamespaceStatus{Phase: corev1.NamespaceTerminating},
	}
	for _, tt := range []struct {
		name        string
		discoverErr error
		wantRequeue time.Duration
		wantErr     bool
	}{
		{"API server unavailable", apierrors.NewServiceUnavailable("rolling"), transientBase, false},
		{"an aggregated API down", &discovery.ErrGroupDiscoveryFailed{
			Groups: map[schema.GroupVersion]error{{Group: "metrics.k8s.io", Version: "v1beta1"}: apierrors.NewServiceUnavailable("down")}}, 0, true},
	} {
		t.Run(tt.name, func(t *testing.T) {
			cl := fake.NewClientBuilder().WithScheme(scheme.Scheme).WithObjects(ns.DeepCopy()).WithStatusSubresource(&corev1.Namespace{}).Build()
			r := &Reconciler{Client: cl, Clock: clock.RealClock{}, SyncPeriod: time.Minute,
				Discover: func() ([]*metav1.APIResourceList, error) { return nil, tt.discoverErr }}
			res, err := r.Reconcile(context.Background(), reconcile.Request{NamespacedName: client.ObjectKey{Name: "going"}})
			if (err != nil) != tt.wantErr || res.RequeueAfter != tt.wantRequeue {
				t.Errorf("Reconcile = %+v, %v; want RequeueAfter %v, error %v", res, err, tt.wantRequeue, tt.wantErr)
			}
		})
	}
}
