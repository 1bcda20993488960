package ttlafterfinished

import (
	"context"
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/manager"
)

var now = time.Date(2026, 3, 2, 10, 0, 0, 0, time.UTC)

func job(mods ...func(*batchv1.Job)) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j", UID: "j-uid"}}
	for _, m := range mods {
		m(j)
	}
	return j
}

func ttl(s int32) func(*batchv1.Job) {
	return func(j *batchv1.Job) { j.Spec.TTLSecondsAfterFinished = &s }
}

func condition(t batchv1.JobConditionType, status corev1.ConditionStatus, at time.Time) func(*batchv1.Job) {
	return func(j *batchv1.Job) {
		j.Status.Conditions = append(j.Status.Conditions, batchv1.JobCondition{Type: t, Status: status, LastTransitionTime: metav1.NewTime(at)})
	}
}

func completeAt(at time.Time) func(*batchv1.Job) {
	return condition(batchv1.JobComplete, corev1.ConditionTrue, at)
}

func TestExpiry(t *testing.T) {
	finished := now.Add(-time.Minute)
	tests := []struct {
		name       string
		job        *batchv1.Job
		wantOK     bool
		wantExpiry time.Time
		wantErr    bool
	}{
		{name: "no TTL", job: job(completeAt(finished))},
		{name: "not finished", job: job(ttl(10))},
		{name: "about to fail is not finished", job: job(ttl(10), condition(batchv1.JobFailureTarget, corev1.ConditionTrue, finished))},
		{name: "Complete=False is not finished", job: job(ttl(10), condition(batchv1.JobComplete, corev1.ConditionFalse, finished))},
		{name: "complete", job: job(ttl(10), completeAt(finished)), wantOK: true, wantExpiry: finished.Add(10 * time.Second)},
		{name: "failed", job: job(ttl(3600), condition(batchv1.JobFailureTarget, corev1.ConditionTrue, finished.Add(-time.Hour)), condition(batchv1.JobFailed, corev1.ConditionTrue, finished)),
			wantOK: true, wantExpiry: finished.Add(time.Hour)},
		{name: "zero TTL: at once", job: job(ttl(0), completeAt(finished)), wantOK: true, wantExpiry: finished},
		{name: "being deleted", job: job(ttl(10), completeAt(finished), func(j *batchv1.Job) { j.DeletionTimestamp = &metav1.Time{Time: now} })},
		{name: "finished at an unknown time", job: job(ttl(10), completeAt(time.Time{})), wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, expiresAt, ok, err := expiry(tt.job)
			if (err != nil) != tt.wantErr || ok != tt.wantOK || !expiresAt.Equal(tt.wantExpiry) {
				t.Errorf("expiry = %v, %v, %v; want %v, %v, error %v", expiresAt, ok, err, tt.wantExpiry, tt.wantOK, tt.wantErr)
			}
		})
	}
}

// TestReconcile runs Reconcile against fake clients: cached is what the cache shows, fresh
// what the API server has.
func TestReconcile(t *testing.T) {
	finished := now.Add(-10 * time.Second)
	tests := []struct {
		name         string
		cached       *batchv1.Job
		fresh        *batchv1.Job // nil: as cached
		wantDeleted  bool
		wantRequeue  time.Duration
		wantTerminal bool
	}{
		{name: "expired: deleted", cached: job(ttl(10), completeAt(finished)), wantDeleted: true},
		{name: "not yet: back at the exact expiry", cached: job(ttl(15), completeAt(finished)), wantRequeue: 5 * time.Second},
		{name: "cache outdated, TTL raised since: kept, back at the new expiry",
			cached: job(ttl(5), completeAt(finished)), fresh: job(ttl(60), completeAt(finished)), wantRequeue: 50 * time.Second},
		{name: "cache outdated, TTL removed since: kept",
			cached: job(ttl(5), completeAt(finished)), fresh: job(completeAt(finished))},
		{name: "cache outdated, gone already", cached: job(ttl(5), completeAt(finished)), fresh: &batchv1.Job{}},
		{name: "no TTL: nothing", cached: job(completeAt(finished))},
		{name: "unknown finish time: terminal", cached: job(ttl(5), completeAt(time.Time{})), wantTerminal: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			fresh := tt.fresh
			if fresh == nil {
				fresh = tt.cached.DeepCopy()
			}
			builder := fake.NewClientBuilder().WithScheme(manager.Scheme())
			if fresh.Name != "" {
				builder = builder.WithObjects(fresh)
			}
			api := builder.Build()
			cache := fake.NewClientBuilder().WithScheme(manager.Scheme()).WithObjects(tt.cached).Build()
			// Deletions go to the API server; reads come from the cache.
			r := &Reconciler{
				Client:    splitClient{Client: api, reader: cache},
				APIReader: api,
				Clock:     clocktesting.NewFakePassiveClock(now),
			}
			res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(tt.cached)})
			if (err != nil) != tt.wantTerminal || (err != nil && !isTerminal(err)) {
				t.Fatalf("err = %v, want terminal %v", err, tt.wantTerminal)
			}
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tt.wantRequeue)
			}
			if fresh.Name == "" {
				return
			}
			err = api.Get(ctx, client.ObjectKeyFromObject(fresh), &batchv1.Job{})
			if deleted := apierrors.IsNotFound(err); deleted != tt.wantDeleted {
				t.Errorf("deleted = %v (%v), want %v", deleted, err, tt.wantDeleted)
			}
		})
	}
}

// splitClient reads from one client and writes through another, like kcm's clients that
// read the shared cache.
type splitClient struct {
	client.Client
	reader client.Reader
}

func (s splitClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return s.reader.Get(ctx, key, obj, opts...)
}

func isTerminal(err error) bool {
	return errors.Is(err, reconcile.TerminalError(nil))
}
