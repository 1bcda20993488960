package resourcequota

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
	quota "k8s.io/apiserver/pkg/quota/v1"
)

func TestRaised(t *testing.T) {
	for _, tc := range []struct {
		name               string
		recorded, measured corev1.ResourceList
		want               corev1.ResourceList
	}{
		{"count above: raised", rl("pods", "1"), rl("pods", "2"), rl("pods", "2")},
		{"count below: kept, the cache may lag a charge", rl("pods", "3"), rl("pods", "2"), rl("pods", "3")},
		{"never recorded: the count", nil, rl("pods", "2"), rl("pods", "2")},
		{"each resource on its own", rl("pods", "3", "requests.cpu", "1"), rl("pods", "2", "requests.cpu", "2"), rl("pods", "3", "requests.cpu", "2")},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := raised(tc.recorded, tc.measured); !quota.Equals(got, tc.want) {
				t.Errorf("raised(%v, %v) = %v, want %v", tc.recorded, tc.measured, got, tc.want)
			}
		})
	}
}

func TestPendingRecountsTake(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "q"}
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		name   string
		asks   []recountMode
		synced bool // a full recount ran, the next due at t0+1m
		at     time.Duration
		want   recountMode
	}{
		{"nothing asked (sync period, retry): full", nil, true, 0, fullRecount},
		{"a creation: raise only", []recountMode{raiseOnly}, true, 0, raiseOnly},
		{"a creation and a deletion: full", []recountMode{raiseOnly, fullRecount}, true, 0, fullRecount},
		{"a deletion and a creation: full", []recountMode{fullRecount, raiseOnly}, true, 0, fullRecount},
		{"a creation when a full recount is due: full", []recountMode{raiseOnly}, true, time.Minute, fullRecount},
		{"a creation before any full recount: full", []recountMode{raiseOnly}, false, 0, fullRecount},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := &pendingRecounts{}
			if tc.synced {
				p.synced(key, t0.Add(time.Minute))
			}
			for _, m := range tc.asks {
				p.ask(key, m)
			}
			if got := p.take(key, t0.Add(tc.at)); got != tc.want {
				t.Errorf("take = %v, want %v", got, tc.want)
			}
			if got := p.take(key, t0.Add(tc.at)); got != fullRecount {
				t.Errorf("a second take = %v, want full (the request was taken)", got)
			}
		})
	}
}
