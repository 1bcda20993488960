package legacytokencleaner

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestTrackingLongEnough(t *testing.T) {
	now := time.Date(2023, 1, 10, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	for _, tt := range []struct {
		since  string
		period time.Duration
		want   bool
		err    bool
	}{
		// Tracking counts from the day after it began: 2023-01-02 00:00 + 8 days = 2023-01-10 00:00.
		{since: "2023-01-01", period: 8 * day, want: true},
		{since: "2023-01-01", period: 8*day + 12*time.Hour, want: true},
		{since: "2023-01-01", period: 8*day + 13*time.Hour, want: false},
		{since: "2023-01-10", period: time.Second, want: false},
		{since: "2023-01-09", period: time.Second, want: true},
		{since: "", err: true},
		{since: "2023-01-01-1", err: true},
	} {
		got, err := TrackingLongEnough(now, tt.period, tt.since)
		if (err != nil) != tt.err || got != tt.want {
			t.Errorf("since %q period %v: got %v, %v; want %v (error %v)", tt.since, tt.period, got, err, tt.want, tt.err)
		}
	}
}

func TestDecide(t *testing.T) {
	now := time.Date(2023, 1, 10, 12, 0, 0, 0, time.UTC)
	day := 24 * time.Hour
	type secret struct {
		created      time.Time
		lastUsed     string
		invalidSince string
		deleting     bool
		typ          corev1.SecretType
	}
	old := now.Add(-30 * day)
	for _, tt := range []struct {
		name         string
		period       time.Duration
		secret       secret
		notGenerated bool
		referenced   bool
		want         Action
		wantLabel    string
		wantErr      bool
	}{
		{name: "never used: marked invalid today", period: 7 * day, secret: secret{created: old}, want: MarkInvalid, wantLabel: "2023-01-10"},
		{name: "last used before the period: marked", period: 7 * day, secret: secret{created: old, lastUsed: "2023-01-02"}, want: MarkInvalid, wantLabel: "2023-01-10"},
		{name: "last used on the period's first day: kept", period: 7 * day, secret: secret{created: old, lastUsed: "2023-01-03"}, want: Keep},
		{name: "used today: kept", period: time.Second, secret: secret{created: old, lastUsed: "2023-01-10"}, want: Keep},
		{name: "used yesterday, short period: marked", period: time.Second, secret: secret{created: old, lastUsed: "2023-01-09"}, want: MarkInvalid, wantLabel: "2023-01-10"},
		{name: "malformed last-used: kept, with an error", period: 7 * day, secret: secret{created: old, lastUsed: "2023-01-02-1"}, want: Keep, wantErr: true},
		{name: "created within the period: kept", period: 7 * day, secret: secret{created: now.Add(-6 * day)}, want: Keep},
		{name: "created exactly a period ago: kept", period: 7 * day, secret: secret{created: now.Add(-7 * day)}, want: Keep},
		{name: "being deleted: kept", period: 7 * day, secret: secret{created: old, deleting: true}, want: Keep},
		{name: "not a token: kept", period: 7 * day, secret: secret{created: old, typ: corev1.SecretTypeOpaque}, want: Keep},
		{name: "not listed by its ServiceAccount: kept", period: 7 * day, secret: secret{created: old}, notGenerated: true, want: Keep},
		{name: "referenced by a pod: kept", period: 7 * day, secret: secret{created: old}, referenced: true, want: Keep},
		{name: "referenced by a pod, already invalid for long: kept", period: 7 * day, secret: secret{created: old, invalidSince: "2022-12-01"}, referenced: true, want: Keep},
		{name: "invalid for less than the period: kept", period: 7 * day, secret: secret{created: old, invalidSince: "2023-01-04"}, want: Keep},
		{name: "invalid since the period's first day: kept", period: 7 * day, secret: secret{created: old, invalidSince: "2023-01-03"}, want: Keep},
		{name: "invalid for longer than the period: deleted", period: 7 * day, secret: secret{created: old, invalidSince: "2023-01-02"}, want: Delete},
		{name: "invalid today, short period: kept until tomorrow", period: time.Second, secret: secret{created: old, invalidSince: "2023-01-10"}, want: Keep},
		{name: "invalid yesterday, short period: deleted", period: time.Second, secret: secret{created: old, invalidSince: "2023-01-09"}, want: Delete},
		{name: "malformed invalid-since: marked again", period: 7 * day, secret: secret{created: old, invalidSince: "yesterday"}, want: MarkInvalid, wantLabel: "2023-01-10"},
		{name: "invalid long ago but used again: kept, label left alone", period: 7 * day, secret: secret{created: old, invalidSince: "2022-12-01", lastUsed: "2023-01-09"}, want: Keep},
	} {
		t.Run(tt.name, func(t *testing.T) {
			s := &corev1.Secret{
				ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(tt.secret.created), Labels: map[string]string{}},
				Type:       corev1.SecretTypeServiceAccountToken,
			}
			if tt.secret.typ != "" {
				s.Type = tt.secret.typ
			}
			if tt.secret.deleting {
				s.DeletionTimestamp = &metav1.Time{Time: now}
			}
			if tt.secret.lastUsed != "" {
				s.Labels[LastUsedLabel] = tt.secret.lastUsed
			}
			if tt.secret.invalidSince != "" {
				s.Labels[InvalidSinceLabel] = tt.secret.invalidSince
			}
			d := Decide(now, tt.period, Facts{Secret: s, AutoGenerated: !tt.notGenerated, Referenced: tt.referenced})
			if d.Action != tt.want || d.InvalidSince != tt.wantLabel || (d.Err != nil) != tt.wantErr {
				t.Errorf("Decide = %+v, want action %v label %q error %v", d, tt.want, tt.wantLabel, tt.wantErr)
			}
		})
	}
}
