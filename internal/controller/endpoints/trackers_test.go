package endpoints

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

func TestStaleTracker(t *testing.T) {
	key := types.NamespacedName{Namespace: "ns", Name: "svc"}
	at := func(rv string) *corev1.Endpoints {
		return &corev1.Endpoints{ObjectMeta: metav1.ObjectMeta{ResourceVersion: rv}}
	}
	var s staleTracker
	if s.isStale(key, nil) || s.isStale(key, at("1")) {
		t.Fatal("nothing written: never stale")
	}

	s.wrote(key, created)
	if !s.isStale(key, nil) {
		t.Error("created but not in the cache yet: stale")
	}
	if s.isStale(key, at("5")) || s.isStale(key, nil) {
		t.Error("once seen, the creation is forgotten")
	}

	s.wrote(key, "5")
	if !s.isStale(key, at("5")) {
		t.Error("the replaced version: stale")
	}
	if s.isStale(key, at("6")) || s.isStale(key, at("5")) {
		t.Error("once a newer version is seen, the write is forgotten")
	}

	s.wrote(key, created)
	s.rv[key] = written{rv: created, at: time.Now().Add(-staleTimeout - time.Second)}
	if s.isStale(key, nil) {
		t.Error("a memory past staleTimeout is dropped")
	}
}
