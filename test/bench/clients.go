//go:build linux

package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"maps"
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

// auditCounts is what requestsByClient counts per phase, keyed by phase name.
type auditCounts struct {
	// byClient: the manager's requests by client.
	byClient map[string]map[string]int
	// byRequest: the manager's requests by client, verb and resource (requestKey).
	byRequest map[string]map[string]int
	// events: the manager's Event writes.
	events map[string]int
}

// requestsByClient counts, per phase, the requests in the API server's audit log that the
// manager made, by client: the name both managers put last in their User-Agent
// (".../kubernetes/<commit>/<client>", e.g. replicaset-controller); requests without one
// (kcm's shared cache and leader election) count as "(manager)". It also counts them by
// client, verb and resource, and counts the manager's Event writes.
func requestsByClient(auditLog, binary string, phases []window) (*auditCounts, error) {
	// The API server names its rotated backups audit-<time>.log; counting the current file
	// alone would undercount without a word.
	rotated, err := filepath.Glob(strings.TrimSuffix(auditLog, ".log") + "-*.log")
	if err != nil {
		return nil, err
	}
	if len(rotated) > 0 {
		return nil, fmt.Errorf("the audit log %s was rotated (%s): its counts would be partial", auditLog, strings.Join(rotated, ", "))
	}
	f, err := os.Open(auditLog)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	out := &auditCounts{byClient: map[string]map[string]int{}, byRequest: map[string]map[string]int{}, events: map[string]int{}}
	for _, w := range phases {
		out.byClient[w.name] = map[string]int{}
		out.byRequest[w.name] = map[string]int{}
	}
	prefix := binary + "/"
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("reading %s: %w", auditLog, err)
		}
		if !strings.HasPrefix(e.UserAgent, prefix) {
			continue
		}
		for _, w := range phases {
			if !e.Received.Before(w.start) && e.Received.Before(w.end) {
				client := clientName(e.UserAgent)
				out.byClient[w.name][client]++
				out.byRequest[w.name][requestKey(client, &e)]++
				if e.eventWrite() {
					out.events[w.name]++
				}
				break
			}
		}
	}
	return out, sc.Err()
}

// requestKey names a request by client, verb and resource: "replicaset-controller update
// replicasets/status". Requests without a resource (discovery) are named by verb alone.
func requestKey(client string, e *auditEvent) string {
	resource := "-"
	if r := e.ObjectRef; r != nil && r.Resource != "" {
		resource = r.Resource
		if r.Subresource != "" {
			resource += "/" + r.Subresource
		}
	}
	return client + " " + e.Verb + " " + resource
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

// requestRows is how many lines of requests by verb and resource each phase shows.
const requestRows = 12

// printRequests writes, per phase, the managers' requests by client, verb and resource:
// with two managers, the rows that differ most between them first, so the table says
// where one manager's extra requests go.
func printRequests(w io.Writer, res *Result) {
	var managers []*ManagerResult
	for _, m := range res.Managers {
		if len(m.Phases) > 0 && m.Phases[0].ByRequest != nil {
			managers = append(managers, m)
		}
	}
	if len(managers) == 0 {
		return
	}
	for _, name := range phaseNames(managers[0]) {
		counts := make([]map[string]int, len(managers))
		keys := map[string]bool{}
		for i, m := range managers {
			if p := phaseNamed(m, name); p != nil {
				counts[i] = p.ByRequest
				for k := range p.ByRequest {
					keys[k] = true
				}
			}
		}
		rows := slices.Collect(maps.Keys(keys))
		weight := func(k string) int {
			if len(counts) == 2 {
				return abs(counts[1][k] - counts[0][k])
			}
			return counts[0][k]
		}
		sort.Slice(rows, func(i, j int) bool {
			if a, b := weight(rows[i]), weight(rows[j]); a != b {
				return a > b
			}
			return rows[i] < rows[j]
		})
		order := "most requests first"
		if len(counts) == 2 {
			order = "largest difference first"
		}
		fmt.Fprintf(w, "\n%s: API requests by client, verb and resource (from the audit log; %s)\n", name, order)
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		header := []string{"client verb resource"}
		for _, m := range managers {
			header = append(header, m.Name)
		}
		if len(managers) == 2 {
			header = append(header, managers[1].Name+" - "+managers[0].Name)
		}
		fmt.Fprintln(tw, strings.Join(header, "\t")+"\t")
		for _, k := range rows[:min(len(rows), requestRows)] {
			cells := []string{k}
			for i := range managers {
				cells = append(cells, fmt.Sprint(counts[i][k]))
			}
			if len(managers) == 2 {
				cells = append(cells, fmt.Sprintf("%+d", counts[1][k]-counts[0][k]))
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t")+"\t")
		}
		_ = tw.Flush()
	}
}

// phaseNames are m's phases in order, the quiet cluster after the first.
func phaseNames(m *ManagerResult) []string {
	var names []string
	for i, p := range m.Phases {
		names = append(names, p.Name)
		if i == 0 && m.Quiet != nil {
			names = append(names, m.Quiet.Name)
		}
	}
	return names
}

func phaseNamed(m *ManagerResult, name string) *PhaseResult {
	if m.Quiet != nil && m.Quiet.Name == name {
		return m.Quiet
	}
	for _, p := range m.Phases {
		if p.Name == name {
			return p
		}
	}
	return nil
}

func abs(n int) int { return max(n, -n) }
