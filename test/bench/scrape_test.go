//go:build linux

package main

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestScrapeManagerReadsTheViews: kcm's per-object views summed over controllers; a manager
// without them (upstream) reads 0 rather than failing.
func TestScrapeManagerReadsTheViews(t *testing.T) {
	base := "rest_client_requests_total{code=\"200\"} 7\ngo_gc_heap_live_bytes 1\ngo_gc_heap_goal_bytes 2\n" +
		"go_memstats_heap_sys_bytes 4\ngo_memstats_heap_released_bytes 1\n"
	views := "kcm_object_views{controller=\"a\"} 3\nkcm_object_views{controller=\"b\"} 2\n" +
		"kcm_object_views_bytes{controller=\"a\"} 1000\nkcm_object_views_bytes{controller=\"b\"} 500\n"
	for _, tt := range []struct {
		body              string
		views, viewsBytes float64
	}{
		{base + views, 5, 1500},
		{base, 0, 0},
	} {
		srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { fmt.Fprint(w, tt.body) }))
		m, err := scrapeManager(context.Background(), srv.URL)
		srv.Close()
		if err != nil {
			t.Fatal(err)
		}
		if m.requests != 7 || m.views != tt.views || m.viewsBytes != tt.viewsBytes {
			t.Errorf("scraped %+v, want 7 requests, %v views of %v bytes", m, tt.views, tt.viewsBytes)
		}
	}
}
