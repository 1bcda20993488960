package cronjob

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/events"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/manager"
)

// The Reconciler against fake clients and a fake clock, for what the API server alone
// cannot stage: a cache lagging behind the API server.

// splitClient reads from a (possibly outdated) cache and writes to the API server, like the
// clients kcm's controllers get.
type splitClient struct {
	client.Client
	cache client.Reader
}

func (s splitClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	return s.cache.Get(ctx, key, obj, opts...)
}

func (s splitClient) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return s.cache.List(ctx, list, opts...)
}

func fakeClient(objs ...client.Object) client.Client {
	return fake.NewClientBuilder().WithScheme(manager.Scheme()).
		WithIndex(&batchv1.Job{}, index.ControllerUID, index.ControllerUIDOf).
		WithStatusSubresource(&batchv1.CronJob{}).
		WithObjects(objs...).Build()
}

func copies(objs []client.Object) []client.Object {
	out := make([]client.Object, len(objs))
	for i, o := range objs {
		out[i] = o.DeepCopyObject().(client.Object)
	}
	return out
}

func ownedJob(cj *batchv1.CronJob, name string, mods ...func(*batchv1.Job)) *batchv1.Job {
	j := job(name, mods...)
	j.OwnerReferences = []metav1.OwnerReference{*metav1.NewControllerRef(cj, batchv1.SchemeGroupVersion.WithKind("CronJob"))}
	return j
}

func activeRef(j *batchv1.Job) func(*batchv1.CronJob) {
	return func(cj *batchv1.CronJob) {
		cj.Status.Active = append(cj.Status.Active, corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: j.Namespace, Name: j.Name, UID: j.UID})
	}
}

func TestReconcileAgainstTheAPIServer(t *testing.T) {
	// Hourly; the 11:00 run (cj-29540820) is due at 11:00:10.
	now := at("2026-03-02T11:00:10Z")
	base := cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"))
	due := ownedJob(base, "cj-29540820")
	// The 10:00 run, still running at 11:00.
	previous := ownedJob(base, "cj-29540760")
	replace := func(cj *batchv1.CronJob) { cj.Spec.ConcurrencyPolicy = batchv1.ReplaceConcurrent }

	tests := []struct {
		name         string
		cache, api   []client.Object
		wantJobs     []string // in the API server
		wantActive   []string
		wantLast     string
		wantEvents   []string // reasons
		wantRequeue  time.Duration
		wantConflict bool
		wantTerm     bool
		wantErr      string
		wantNote     string // one of the Events in full
	}{
		{
			name:  "due: creates the Job and lists it",
			cache: []client.Object{base}, api: []client.Object{base},
			wantJobs: []string{"cj-29540820"}, wantActive: []string{"cj-29540820"}, wantLast: "2026-03-02T11:00:00Z",
			wantEvents: []string{"SuccessfulCreate"}, wantRequeue: 59*time.Minute + 50*time.Second + nextScheduleDelta,
		},
		{
			// The cache has the Job but not the status write that listed it: the API
			// server's CronJob says the run is done.
			name:     "cache behind its own status write: asks the API server, starts nothing",
			cache:    []client.Object{base, due},
			api:      []client.Object{cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T11:00:00Z"), activeRef(due)), due},
			wantJobs: []string{"cj-29540820"}, wantActive: []string{"cj-29540820"}, wantLast: "2026-03-02T11:00:00Z",
			wantRequeue: 59*time.Minute + 50*time.Second + nextScheduleDelta,
		},
		{
			// Created before, the status write lost: the Job is taken into status.
			name:  "the Job exists already, status lost: listed without a second create",
			cache: []client.Object{base}, api: []client.Object{base, due},
			wantJobs: []string{"cj-29540820"}, wantActive: []string{"cj-29540820"}, wantLast: "2026-03-02T11:00:00Z",
			wantRequeue: 59*time.Minute + 50*time.Second + nextScheduleDelta,
		},
		{
			name:  "someone else's Job has the name: left alone, back at the next time",
			cache: []client.Object{base}, api: []client.Object{base, job("cj-29540820")},
			wantJobs: []string{"cj-29540820"}, wantLast: "2026-03-02T10:00:00Z",
			wantRequeue: 59*time.Minute + 50*time.Second + nextScheduleDelta,
		},
		{
			name:     "an active Job gone from the API server: MissingJob",
			cache:    []client.Object{cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T11:00:00Z"), activeRef(due))},
			api:      []client.Object{cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T11:00:00Z"), activeRef(due))},
			wantLast: "2026-03-02T11:00:00Z", wantEvents: []string{"MissingJob"},
			wantRequeue: 59*time.Minute + 50*time.Second + nextScheduleDelta,
		},
		{
			name:     "an active Job not in the cache yet: kept",
			cache:    []client.Object{cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T11:00:00Z"), activeRef(due))},
			api:      []client.Object{cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T11:00:00Z"), activeRef(due)), due},
			wantJobs: []string{"cj-29540820"}, wantActive: []string{"cj-29540820"}, wantLast: "2026-03-02T11:00:00Z",
			wantRequeue: 59*time.Minute + 50*time.Second + nextScheduleDelta,
		},
		{
			// Upstream's Replace reads each active Job live before deleting it: one the cache
			// still shows but the API server no longer has is a FailedGet, and nothing starts.
			name: "Replace: an active Job the API server no longer has: FailedGet, nothing started",
			cache: []client.Object{
				cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), replace, activeRef(previous)),
				previous,
			},
			api:      []client.Object{cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), replace, activeRef(previous))},
			wantLast: "2026-03-02T10:00:00Z", wantActive: []string{"cj-29540760"},
			wantEvents: []string{"FailedGet"}, wantErr: `jobs.batch "cj-29540760" not found`,
			wantNote: `Warning FailedGet Get job: jobs.batch "cj-29540760" not found`,
		},
		{
			name: "Replace: the active Job deleted, the next one started",
			cache: []client.Object{
				cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), replace, activeRef(previous)),
				previous,
			},
			api: []client.Object{
				cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), replace, activeRef(previous)),
				previous,
			},
			wantJobs: []string{"cj-29540820"}, wantActive: []string{"cj-29540820"}, wantLast: "2026-03-02T11:00:00Z",
			wantEvents: []string{"SuccessfulDelete", "SuccessfulCreate"}, wantRequeue: 59*time.Minute + 50*time.Second + nextScheduleDelta,
		},
		{
			name:  "a schedule that never fires: terminal, nothing written",
			cache: []client.Object{cronJob("0 0 30 2 *", "2026-03-01T00:00:00Z")}, api: []client.Object{cronJob("0 0 30 2 *", "2026-03-01T00:00:00Z")},
			wantEvents: []string{"InvalidSchedule"}, wantTerm: true,
		},
		{
			name:     "an outdated cache cannot overwrite status: conflict, retried",
			cache:    []client.Object{base},
			api:      []client.Object{cronJob("0 * * * *", "2026-03-01T00:00:00Z", lastScheduled("2026-03-02T10:00:00Z"), func(cj *batchv1.CronJob) { cj.ResourceVersion = "1000" })},
			wantJobs: []string{"cj-29540820"}, wantLast: "2026-03-02T10:00:00Z", wantEvents: []string{"SuccessfulCreate"},
			wantConflict: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ctx := context.Background()
			api, cache := fakeClient(copies(tt.api)...), fakeClient(copies(tt.cache)...)
			rec := events.NewFakeRecorder(20)
			r := &Reconciler{
				Client:    splitClient{Client: api, cache: cache},
				APIReader: api,
				Recorder:  rec,
				Clock:     clocktesting.NewFakePassiveClock(now),
			}
			res, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: client.ObjectKeyFromObject(base)})
			switch {
			case tt.wantConflict:
				if !apierrors.IsConflict(err) {
					t.Errorf("err = %v, want a conflict", err)
				}
			case tt.wantTerm:
				if !errors.Is(err, reconcile.TerminalError(nil)) {
					t.Errorf("err = %v, want a terminal error", err)
				}
			case tt.wantErr != "":
				if err == nil || err.Error() != tt.wantErr {
					t.Errorf("err = %v, want %s", err, tt.wantErr)
				}
			case err != nil:
				t.Fatalf("Reconcile: %v", err)
			}
			if res.RequeueAfter != tt.wantRequeue {
				t.Errorf("requeue after %v, want %v", res.RequeueAfter, tt.wantRequeue)
			}

			jobs := &batchv1.JobList{}
			if err := api.List(ctx, jobs); err != nil {
				t.Fatal(err)
			}
			var names []string
			for _, j := range jobs.Items {
				names = append(names, j.Name)
			}
			if !slices.Equal(names, tt.wantJobs) {
				t.Errorf("jobs = %v, want %v", names, tt.wantJobs)
			}
			got := &batchv1.CronJob{}
			if err := api.Get(ctx, client.ObjectKeyFromObject(base), got); err != nil {
				t.Fatal(err)
			}
			var active []string
			for _, r := range got.Status.Active {
				active = append(active, r.Name)
			}
			if !slices.Equal(active, tt.wantActive) {
				t.Errorf("active = %v, want %v", active, tt.wantActive)
			}
			switch {
			case tt.wantLast == "" && got.Status.LastScheduleTime != nil:
				t.Errorf("lastScheduleTime = %v, want none", got.Status.LastScheduleTime)
			case tt.wantLast != "" && (got.Status.LastScheduleTime == nil || !got.Status.LastScheduleTime.Time.Equal(at(tt.wantLast))):
				t.Errorf("lastScheduleTime = %v, want %s", got.Status.LastScheduleTime, tt.wantLast)
			}
			close(rec.Events)
			var reasons, all []string
			for e := range rec.Events {
				reasons = append(reasons, strings.Fields(e)[1])
				all = append(all, e)
			}
			if tt.wantNote != "" && !slices.Contains(all, tt.wantNote) {
				t.Errorf("events = %q, want %q among them", all, tt.wantNote)
			}
			if !slices.Equal(reasons, tt.wantEvents) {
				t.Errorf("events = %v, want %v", reasons, tt.wantEvents)
			}
		})
	}
}
