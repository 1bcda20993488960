package garbagecollector

import "testing"

func TestRequestString(t *testing.T) {
	for req, want := range map[request]string{
		discoverRequest:           "discovery",
		{Op: opDelete, UID: "u1"}: "attemptToDelete u1",
		{Op: opOrphan, UID: "u2"}: "attemptToOrphan u2",
	} {
		if got := req.String(); got != want {
			t.Errorf("%#v.String() = %q, want %q", req, got, want)
		}
	}
}
