package podcertificaterequestcleaner

import (
	"testing"
	"time"
)

func TestRemaining(t *testing.T) {
	created := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	cases := []struct {
		name string
		now  time.Time
		want time.Duration
	}{
		{"just created", created, DefaultThreshold},
		{"a second before the threshold", created.Add(DefaultThreshold - time.Second), time.Second},
		{"at the threshold it goes", created.Add(DefaultThreshold), 0},
		{"long after", created.Add(time.Hour), 0},
	}
	for _, c := range cases {
		if got := Remaining(created, DefaultThreshold, c.now); got != c.want {
			t.Errorf("%s: Remaining = %v, want %v", c.name, got, c.want)
		}
	}
}
