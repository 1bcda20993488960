//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"

	"k8s.io/client-go/rest"
)

// How a manager's Event writes were counted (ManagerResult.EventSource).
const (
	// eventsFromMetrics: the API server's apiserver_request_total of core/v1 Events
	// created, patched or updated (eventWrites).
	eventsFromMetrics = "apiserver_request_total{group=\"\",resource=\"events\"}"
	// eventsFromAudit: the API server's audit log (-by-controller), Event writes whose
	// User-Agent is the manager's.
	eventsFromAudit = "audit log"
)

// apiServerScraper reads the API server's /metrics as the cluster's administrator.
type apiServerScraper struct {
	url    string
	client *http.Client
}

func newAPIServerScraper(cfg *rest.Config) (*apiServerScraper, error) {
	hc, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, err
	}
	return &apiServerScraper{url: strings.TrimSuffix(cfg.Host, "/") + "/metrics", client: hc}, nil
}

// eventWrites is the API server's count of core/v1 Event creates, patches and updates
// since it started. Both managers write Events through client-go's core/v1 recorders (the
// correlator patches a repeated Event's count), and in the benchmark's cluster nothing else
// writes core/v1 Events: kube-scheduler writes events.k8s.io/v1 Events (group
// "events.k8s.io", not counted), kwok's fast stages none, the driver none. So, unlike the
// manager's rest_client_requests_total (whose labels do not name the resource), this
// separates the manager's Event writes from its other requests; -by-controller's audit
// log, which names the writer, confirms it.
func (s *apiServerScraper) eventWrites(ctx context.Context) (float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.url, nil)
	if err != nil {
		return 0, err
	}
	resp, err := s.client.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return 0, fmt.Errorf("%s: %s", resp.Status, body)
	}
	return sumMetricWhere(resp.Body, "apiserver_request_total", isEventWrite)
}

// isEventWrite selects apiserver_request_total's samples of core/v1 Event writes.
func isEventWrite(labels map[string]string) bool {
	switch labels["verb"] {
	case "POST", "PATCH", "PUT":
		return labels["group"] == "" && labels["resource"] == "events" && labels["subresource"] == ""
	}
	return false
}
