package storageversionmigrator

import (
	"errors"
	"slices"
	"testing"
	"time"

	svmv1 "k8s.io/api/storagemigration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

func TestRunningMessage(t *testing.T) {
	for _, tc := range []struct {
		name string
		p    *progress
		err  error
		want string
	}{
		{"not counted", nil, nil, "The migration is running"},
		{"nothing listed", &progress{ToPatch: 0, Total: 0}, nil, "The migration is running"},
		{"in progress", &progress{ToPatch: 3, Total: 10}, nil, "The migration is running, 3/10 objects not yet migrated"},
		{"done", &progress{ToPatch: 0, Total: 10}, nil, "The migration is running, 10 objects verified migrated"},
		{"transient", &progress{ToPatch: 3, Total: 10}, errors.New("boom"), "The migration is running, 3/10 objects not yet migrated; transient error: boom"},
	} {
		if got := runningMessage(tc.p, tc.err); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

func TestFailedMessage(t *testing.T) {
	err := errors.New("boom")
	if got, want := failedMessage(nil, err), "migration encountered unhandled error: boom"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
	if got, want := failedMessage(&progress{ToPatch: 2, Total: 5}, err), "2/5 not yet migrated. migration encountered unhandled error: boom"; got != want {
		t.Errorf("%q, want %q", got, want)
	}
}

func migration(name string, created int, gr metav1.GroupResource, conds ...metav1.Condition) svmv1.StorageVersionMigration {
	return svmv1.StorageVersionMigration{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(time.Unix(int64(created), 0))},
		Spec:       svmv1.StorageVersionMigrationSpec{Resource: gr},
		Status:     svmv1.StorageVersionMigrationStatus{Conditions: conds},
	}
}

func cond(t svmv1.MigrationConditionType, s metav1.ConditionStatus) metav1.Condition {
	return metav1.Condition{Type: string(t), Status: s}
}

func TestTurns(t *testing.T) {
	widgets := metav1.GroupResource{Group: "example.com", Resource: "widgets"}
	other := metav1.GroupResource{Resource: "configmaps"}
	running := cond(svmv1.MigrationRunning, metav1.ConditionTrue)
	closed := cond(svmv1.MigrationRunning, metav1.ConditionFalse)
	succeeded := cond(svmv1.MigrationSucceeded, metav1.ConditionTrue)
	failed := cond(svmv1.MigrationFailed, metav1.ConditionTrue)
	for _, tc := range []struct {
		name        string
		svms        []svmv1.StorageVersionMigration
		wantClosing []string
		wantStart   string
	}{
		{"the oldest waiting starts", []svmv1.StorageVersionMigration{
			migration("b", 2, widgets), migration("a", 3, widgets), migration("c", 1, other)}, nil, "b"},
		{"same creation time: by name", []svmv1.StorageVersionMigration{
			migration("b", 1, widgets), migration("a", 1, widgets)}, nil, "a"},
		{"one running: none starts, wherever it is listed", []svmv1.StorageVersionMigration{
			migration("a", 1, widgets), migration("b", 2, widgets, running)}, nil, ""},
		{"finished and still running: closed, and the next starts", []svmv1.StorageVersionMigration{
			migration("a", 1, widgets, running, succeeded), migration("b", 2, widgets)}, []string{"a"}, "b"},
		{"failed and running: closed", []svmv1.StorageVersionMigration{
			migration("a", 1, widgets, running, failed)}, []string{"a"}, ""},
		{"finished and closed: nothing", []svmv1.StorageVersionMigration{
			migration("a", 1, widgets, closed, succeeded)}, nil, ""},
		{"finished without running: never started again", []svmv1.StorageVersionMigration{
			migration("a", 1, widgets, failed)}, nil, ""},
		{"other resources only", []svmv1.StorageVersionMigration{migration("c", 1, other)}, nil, ""},
	} {
		closing, start := turns(tc.svms, widgets)
		var names []string
		for _, c := range closing {
			names = append(names, c.Name)
		}
		if !slices.Equal(names, tc.wantClosing) {
			t.Errorf("%s: closing %v, want %v", tc.name, names, tc.wantClosing)
		}
		startName := ""
		if start != nil {
			startName = start.Name
		}
		if startName != tc.wantStart {
			t.Errorf("%s: start %q, want %q", tc.name, startName, tc.wantStart)
		}
	}
}

func TestCandidates(t *testing.T) {
	obj := func(name, rv string) metav1.PartialObjectMetadata {
		return metav1.PartialObjectMetadata{ObjectMeta: metav1.ObjectMeta{Name: name, ResourceVersion: rv}}
	}
	got, err := candidates([]metav1.PartialObjectMetadata{obj("older", "9"), obj("same", "100"), obj("newer", "101"), obj("longer", "1000")}, "100")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, o := range got {
		names = append(names, o.Name)
	}
	if want := []string{"older", "same"}; !slices.Equal(names, want) {
		t.Errorf("candidates %v, want %v (written since the recorded version: skipped)", names, want)
	}
	if _, err := candidates([]metav1.PartialObjectMetadata{obj("bad", "x1")}, "100"); err == nil {
		t.Error("an incomparable resource version: no error")
	}
}

func TestOutcomeOf(t *testing.T) {
	gr := schema.GroupResource{Resource: "widgets"}
	for _, tc := range []struct {
		name string
		err  error
		want patchOutcome
	}{
		{"rewritten", nil, migrated},
		{"written since", apierrors.NewConflict(gr, "a", errors.New("changed")), migrated},
		{"deleted since", apierrors.NewNotFound(gr, "a"), migrated},
		{"throttled", apierrors.NewTooManyRequests("slow down", 1), transient},
		{"server timeout", apierrors.NewServerTimeout(gr, "patch", 1), transient},
		{"unavailable", apierrors.NewServiceUnavailable("down"), transient},
		{"internal", apierrors.NewInternalError(errors.New("etcd")), transient},
		{"timeout", apierrors.NewTimeoutError("slow", 1), transient},
		{"forbidden", apierrors.NewForbidden(gr, "a", errors.New("no")), fail},
		{"invalid", apierrors.NewBadRequest("bad"), fail},
	} {
		if got := outcomeOf(tc.err); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestCRDFinish(t *testing.T) {
	current := crdState{Generation: 3, StorageVersion: "v2", HasMigrating: true, MigratingGeneration: 3}
	changed := crdState{Generation: 4, StorageVersion: "v2", HasMigrating: true, MigratingGeneration: 3}
	for _, tc := range []struct {
		name            string
		crd             crdState
		success         bool
		reason, message string
		stored          []string
	}{
		{"succeeded", current, true, "MigrationSucceeded", "The migration has succeeded and the stored versions have been updated", []string{"v2"}},
		{"succeeded, CRD changed since", changed, true, "MigrationSucceeded", "The migration has succeeded but the stored versions have not been updated due to a generation mismatch", nil},
		{"no StorageMigrating condition", crdState{Generation: 3, StorageVersion: "v2"}, true, "MigrationSucceeded", "The migration has succeeded but the stored versions have not been updated due to a generation mismatch", nil},
		// As upstream's finishCRDMigration: the stored versions follow the generation check,
		// not the outcome.
		{"failed", current, false, "MigrationFailed", "The migration has failed", []string{"v2"}},
		{"failed, CRD changed since", changed, false, "MigrationFailed", "The migration has failed", nil},
	} {
		reason, message, stored := crdFinish(tc.crd, tc.success)
		if reason != tc.reason || message != tc.message || !slices.Equal(stored, tc.stored) {
			t.Errorf("%s: (%q, %q, %v), want (%q, %q, %v)", tc.name, reason, message, stored, tc.reason, tc.message, tc.stored)
		}
	}
}

func TestAddConditionOnce(t *testing.T) {
	now := metav1.Now()
	svm := &svmv1.StorageVersionMigration{}
	if !addConditionOnce(svm, svmv1.MigrationRunning, reasonRunning, "m", now) {
		t.Fatal("first add: not added")
	}
	if addConditionOnce(svm, svmv1.MigrationRunning, "Other", "n", now) {
		t.Error("second add of a true condition: added")
	}
	svm.Status.Conditions[0].Status = metav1.ConditionFalse
	if addConditionOnce(svm, svmv1.MigrationRunning, "Other", "n", now) {
		t.Error("add over a false condition: added (upstream keeps it)")
	}
	if len(svm.Status.Conditions) != 1 || svm.Status.Conditions[0].Reason != reasonRunning {
		t.Errorf("conditions %v", svm.Status.Conditions)
	}
}

func TestMigratable(t *testing.T) {
	if !migratable(&metav1.APIResource{Verbs: []string{"get", "list", "patch", "update", "watch"}}) {
		t.Error("list, patch and update: not migratable")
	}
	if migratable(&metav1.APIResource{Verbs: []string{"get", "list", "patch"}}) {
		t.Error("no update: migratable")
	}
}

func TestReadCRD(t *testing.T) {
	u := &unstructured.Unstructured{Object: map[string]any{
		"metadata": map[string]any{"name": "widgets.example.com", "resourceVersion": "42", "generation": int64(3)},
		"spec": map[string]any{"versions": []any{
			map[string]any{"name": "v1", "storage": false},
			map[string]any{"name": "v2", "storage": true},
		}},
		"status": map[string]any{"conditions": []any{
			map[string]any{"type": "Established", "status": "True"},
			map[string]any{"type": "StorageMigrating", "status": "True", "observedGeneration": int64(2)},
		}},
	}}
	want := crdState{Name: "widgets.example.com", ResourceVersion: "42", Generation: 3, StorageVersion: "v2",
		HasMigrating: true, MigratingGeneration: 2}
	if got := readCRD(u); got != want {
		t.Errorf("%+v, want %+v", got, want)
	}
	unstructured.RemoveNestedField(u.Object, "status")
	if got := readCRD(u); got.HasMigrating || got.StorageVersion != "v2" {
		t.Errorf("without status: %+v", got)
	}
}
