//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
)

// auditEvent is what the benchmark reads of an audit.k8s.io/v1 Event.
type auditEvent struct {
	UserAgent string    `json:"userAgent"`
	Received  time.Time `json:"requestReceivedTimestamp"`
	Verb      string    `json:"verb"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
	} `json:"objectRef"`
}

// eventWrite reports whether the request created or changed an Event (core/v1 or
// events.k8s.io/v1).
func (e *auditEvent) eventWrite() bool {
	switch e.Verb {
	case "create", "update", "patch":
		return e.ObjectRef != nil && e.ObjectRef.Resource == "events" && e.ObjectRef.Subresource == ""
	}
	return false
}

// window is a phase's span of time.
type window struct {
	name       string
	start, end time.Time
}

// requestsByClient counts, per phase, the requests in the API server's audit log that the
// manager made, by client: the name both managers put last in their User-Agent
// (".../kubernetes/<commit>/<client>", e.g. replicaset-controller); requests without one
// (kcm's shared cache and leader election) count as "(manager)". It also counts, per phase,
// the manager's Event writes.
func requestsByClient(auditLog, binary string, phases []window) (map[string]map[string]int, map[string]int, error) {
	// The API server names its rotated backups audit-<time>.log; counting the current file
	// alone would undercount without a word.
	rotated, err := filepath.Glob(strings.TrimSuffix(auditLog, ".log") + "-*.log")
	if err != nil {
		return nil, nil, err
	}
	if len(rotated) > 0 {
		return nil, nil, fmt.Errorf("the audit log %s was rotated (%s): its counts would be partial", auditLog, strings.Join(rotated, ", "))
	}
	f, err := os.Open(auditLog)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	out := map[string]map[string]int{}
	events := map[string]int{}
	for _, w := range phases {
		out[w.name] = map[string]int{}
	}
	prefix := binary + "/"
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, nil, fmt.Errorf("reading %s: %w", auditLog, err)
		}
		if !strings.HasPrefix(e.UserAgent, prefix) {
			continue
		}
		for _, w := range phases {
			if !e.Received.Before(w.start) && e.Received.Before(w.end) {
				out[w.name][clientName(e.UserAgent)]++
				if e.eventWrite() {
					events[w.name]++
				}
				break
			}
		}
	}
	return out, events, sc.Err()
}

const noClient = "(manager)"

// clientName is the part of a User-Agent after "kubernetes/<commit>/", without the
// "system:serviceaccount:kube-system:" both managers' clients put before the name when they
// use their own ServiceAccounts' credentials.
func clientName(userAgent string) string {
	_, rest, ok := strings.Cut(userAgent, " kubernetes/")
	if !ok {
		return noClient
	}
	_, name, ok := strings.Cut(rest, "/")
	if !ok || name == "" {
		return noClient
	}
	return strings.TrimPrefix(name, "system:serviceaccount:kube-system:")
}

// printClients writes, per manager, the requests of its busiest clients in each phase.
func printClients(w io.Writer, res *Result) {
	for _, m := range res.Managers {
		if len(m.Phases) == 0 || m.Phases[0].ByClient == nil {
			continue
		}
		phases := slices.Clone(m.Phases)
		if m.Quiet != nil {
			phases = slices.Insert(phases, 1, m.Quiet)
		}
		totals := map[string]int{}
		for _, p := range phases {
			for c, n := range p.ByClient {
				totals[c] += n
			}
		}
		clients := make([]string, 0, len(totals))
		for c := range totals {
			clients = append(clients, c)
		}
		sort.Slice(clients, func(i, j int) bool { return totals[clients[i]] > totals[clients[j]] })
		fmt.Fprintf(w, "\n%s: API requests by client (from the API server's audit log)\n", m.Name)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		header := []string{"client"}
		for _, p := range phases {
			header = append(header, p.Name)
		}
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
		for _, c := range clients {
			cells := []string{c}
			for _, p := range phases {
				cells = append(cells, fmt.Sprint(p.ByClient[c]))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		_ = tw.Flush()
	}
}
