//go:build chaos && linux

package chaos_test

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"

	"github.com/kcm/kcm/test/chaos/faultproxy"
	"github.com/kcm/kcm/test/chaos/invariants"
)

// result is one manager's row for one fault.
type result struct {
	Manager string `json:"manager"`
	Fault   string `json:"fault"`
	// Violations are the invariants broken while the workload ran through the fault.
	Violations []invariants.Violation `json:"violations"`
	// WorstOvershoot is the most live pods a Deployment had over its replicas (maxSurge
	// included in what is allowed).
	WorstOvershoot int `json:"worstOvershoot"`
	// Unjudged are checks the watcher dropped while a watch of its was broken, LateAdds the
	// objects it saw too late to judge, WatchErrors its broken watches: how much of the fault
	// it saw.
	Unjudged    int `json:"unjudged"`
	LateAdds    int `json:"lateAdds"`
	WatchErrors int `json:"watchErrors"`

	Converged       bool    `json:"converged"`
	ConvergeSeconds float64 `json:"convergeSeconds"`
	// Requests are the manager's requests the proxy saw while the fault lasted.
	Requests   faultproxy.Stats `json:"requests"`
	Restarts   int              `json:"restarts"`
	QuietCores float64          `json:"quietCores"`
	RSSBefore  int64            `json:"rssBefore"`
	RSSAfter   int64            `json:"rssAfter"`
}

func (r result) String() string {
	return fmt.Sprintf("%s / %s: %d violations, overshoot %d, converged %v in %.1fs, %d requests, %d restarts, %.3f cores quiet, RSS %d -> %d MiB",
		r.Manager, r.Fault, len(r.Violations), r.WorstOvershoot, r.Converged, r.ConvergeSeconds, r.Requests.Requests, r.Restarts,
		r.QuietCores, r.RSSBefore>>20, r.RSSAfter>>20)
}

// renderTable is fault x (invariants held, worst overshoot, time to converge, requests
// during the fault, restarts, quiet CPU, RSS), a row a manager.
func renderTable(rows []result) string {
	var b strings.Builder
	fmt.Fprintf(&b, "\nchaos (%s form)\n", form.Name)
	w := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "fault\tmanager\tinvariants\tovershoot\tconverged after\trequests (429/5xx/reset/held)\trestarts\tquiet cores\tRSS before → after")
	for _, r := range rows {
		held := "held"
		if len(r.Violations) > 0 {
			held = fmt.Sprintf("%d broken", len(r.Violations))
		}
		if r.Unjudged > 0 {
			held += fmt.Sprintf(" (%d unjudged)", r.Unjudged)
		}
		conv := fmt.Sprintf("%.1fs", r.ConvergeSeconds)
		if !r.Converged {
			conv = fmt.Sprintf("no (%.0fs)", r.ConvergeSeconds)
		}
		s := r.Requests
		fmt.Fprintf(w, "%s\t%s\t%s\t%d\t%s\t%d (%d/%d/%d/%d)\t%d\t%.3f\t%d → %d MiB\n", short(r.Fault), r.Manager, held, r.WorstOvershoot,
			conv, s.Requests, s.Throttled, s.ServerErrors, s.Resets, s.Held, r.Restarts, r.QuietCores, r.RSSBefore>>20, r.RSSAfter>>20)
	}
	w.Flush()
	return b.String()
}

// short is a fault's name up to its colon.
func short(name string) string {
	before, _, _ := strings.Cut(name, ":")
	return before
}

func writeResults(path string, f formSpec, rows []result) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	data, err := json.MarshalIndent(struct {
		Form    formSpec `json:"form"`
		Results []result `json:"results"`
	}{f, rows}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(data, '\n'), 0o644)
}
