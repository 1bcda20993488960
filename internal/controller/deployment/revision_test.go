package deployment

import (
	"maps"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
)

func TestMaxAndLastRevision(t *testing.T) {
	rss := []*appsv1.ReplicaSet{
		withRevision(newRS("a", 0, 0, 1), "3"), withRevision(newRS("b", 0, 0, 2), "7"),
		withRevision(newRS("c", 0, 0, 3), "x"), newRS("d", 0, 0, 4), withRevision(newRS("e", 0, 0, 5), "5"),
	}
	if got := maxRevision(rss); got != 7 {
		t.Errorf("maxRevision = %d, want 7", got)
	}
	if got := lastRevision(rss); got != 5 {
		t.Errorf("lastRevision = %d, want 5", got)
	}
	if got := lastRevision(rss[:1]); got != 0 {
		t.Errorf("lastRevision of one = %d, want 0", got)
	}
	if got := lastRevision([]*appsv1.ReplicaSet{withRevision(newRS("a", 0, 0, 1), "2"), withRevision(newRS("b", 0, 0, 1), "2")}); got != 2 {
		t.Errorf("lastRevision of equal revisions = %d, want 2", got)
	}
}

func TestSetNewReplicaSetAnnotations(t *testing.T) {
	d := newDeployment("d", 4) // maxSurge 25% → 1
	d.Annotations = map[string]string{
		"team": "a", corev1.LastAppliedConfigAnnotation: "{}", RevisionAnnotation: "9",
		appsv1.DeprecatedRollbackTo: "1", DesiredReplicasAnnotation: "99",
	}
	tests := []struct {
		name        string
		rs          map[string]string
		newRevision string
		exists      bool
		want        map[string]string
		wantChanged bool
	}{
		{name: "creating: copied, revision, sizes", rs: nil, newRevision: "3", exists: false, wantChanged: true,
			want: map[string]string{"team": "a", RevisionAnnotation: "3", DesiredReplicasAnnotation: "4", MaxReplicasAnnotation: "5"}},
		{name: "existing, up to date", rs: map[string]string{"team": "a", RevisionAnnotation: "3"}, newRevision: "3", exists: true,
			want: map[string]string{"team": "a", RevisionAnnotation: "3"}},
		{name: "existing with a higher revision keeps it", rs: map[string]string{"team": "a", RevisionAnnotation: "8"}, newRevision: "3", exists: true,
			want: map[string]string{"team": "a", RevisionAnnotation: "8"}},
		{name: "rollback: new revision, old one in history", rs: map[string]string{"team": "a", RevisionAnnotation: "1"}, newRevision: "3",
			exists: true, wantChanged: true,
			want: map[string]string{"team": "a", RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"}},
		{name: "second rollback appends", rs: map[string]string{"team": "a", RevisionAnnotation: "3", RevisionHistoryAnnotation: "1"},
			newRevision: "5", exists: true, wantChanged: true,
			want: map[string]string{"team": "a", RevisionAnnotation: "5", RevisionHistoryAnnotation: "1,3"}},
		{name: "changed Deployment annotation is copied", rs: map[string]string{"team": "b", RevisionAnnotation: "3"}, newRevision: "3",
			exists: true, wantChanged: true, want: map[string]string{"team": "a", RevisionAnnotation: "3"}},
		{name: "unparsable revision: left alone", rs: map[string]string{"team": "a", RevisionAnnotation: "x"}, newRevision: "3", exists: true,
			want: map[string]string{"team": "a", RevisionAnnotation: "x"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rs := newRS("new", 0, 0, 1)
			rs.Annotations = maps.Clone(tt.rs)
			changed := setNewReplicaSetAnnotations(d, rs, tt.newRevision, tt.exists, maxRevisionHistoryChars)
			if changed != tt.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tt.wantChanged)
			}
			if !maps.Equal(rs.Annotations, tt.want) {
				t.Errorf("annotations = %v, want %v", rs.Annotations, tt.want)
			}
		})
	}
}

func TestAppendRevisionHistory(t *testing.T) {
	tests := []struct {
		name, history, rev string
		limit              int
		want               string
		wantOK             bool
	}{
		{name: "first", history: "", rev: "4", limit: 10, want: "4", wantOK: true},
		{name: "append", history: "1,2", rev: "4", limit: 10, want: "1,2,4", wantOK: true},
		{name: "oldest dropped to fit", history: "10,20,30", rev: "40", limit: 9, want: "20,30,40", wantOK: true},
		{name: "cannot fit", history: "1", rev: strings.Repeat("9", 12), limit: 10, want: "1", wantOK: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := appendRevisionHistory(tt.history, tt.rev, tt.limit)
			if got != tt.want || ok != tt.wantOK {
				t.Errorf("appendRevisionHistory = %q, %v; want %q, %v", got, ok, tt.want, tt.wantOK)
			}
		})
	}
}

func TestReplicasAnnotations(t *testing.T) {
	rs := newRS("a", 1, 1, 1)
	if !replicasAnnotationsNeedUpdate(rs, 3, 4) || !setReplicasAnnotations(rs, 3, 4) {
		t.Fatal("missing annotations need setting")
	}
	if rs.Annotations[DesiredReplicasAnnotation] != "3" || rs.Annotations[MaxReplicasAnnotation] != "4" {
		t.Errorf("annotations = %v", rs.Annotations)
	}
	if replicasAnnotationsNeedUpdate(rs, 3, 4) || setReplicasAnnotations(rs, 3, 4) {
		t.Error("up-to-date annotations reported as changed")
	}
	if !replicasAnnotationsNeedUpdate(rs, 3, 5) {
		t.Error("a new max is a change")
	}
	rs.Annotations[DesiredReplicasAnnotation] = "-1"
	if _, ok := desiredReplicas(rs); ok {
		t.Error("a negative desired-replicas annotation is not valid")
	}
	rs.Annotations[DesiredReplicasAnnotation] = "4294967295"
	if _, ok := desiredReplicas(rs); ok {
		t.Error("an out-of-range desired-replicas annotation is not valid")
	}
}

func TestSetAnnotationsFromReplicaSet(t *testing.T) {
	d := newDeployment("d", 1)
	d.Annotations = map[string]string{"change-cause": "edit", RevisionAnnotation: "2", corev1.LastAppliedConfigAnnotation: "{}", "only-d": "x"}
	rs := newRS("a", 0, 0, 1)
	rs.Annotations = map[string]string{"change-cause": "create", RevisionAnnotation: "1", DesiredReplicasAnnotation: "1"}
	setAnnotationsFromReplicaSet(d, rs)
	want := map[string]string{"change-cause": "create", RevisionAnnotation: "2", corev1.LastAppliedConfigAnnotation: "{}"}
	if !maps.Equal(d.Annotations, want) {
		t.Errorf("annotations = %v, want %v", d.Annotations, want)
	}
}

func TestRollbackTo(t *testing.T) {
	for _, tt := range []struct {
		value string
		want  *int64
	}{{"", nil}, {"x", nil}, {"0", new(int64(0))}, {"4", new(int64(4))}} {
		d := newDeployment("d", 1)
		if tt.value != "" {
			d.Annotations = map[string]string{appsv1.DeprecatedRollbackTo: tt.value}
		}
		got := rollbackTo(d)
		if (got == nil) != (tt.want == nil) || (got != nil && *got != *tt.want) {
			t.Errorf("rollbackTo(%q) = %v, want %v", tt.value, got, tt.want)
		}
	}
}
