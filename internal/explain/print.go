package explain

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/track"
)

// Print: the report for people (a tree whose first line is the summary) or for programs
// (-o json|yaml).

// Output formats.
const (
	OutputTree = "tree"
	OutputJSON = "json"
	OutputYAML = "yaml"
)

// write prints the report in the format.
func write(w io.Writer, r Report, format string, now time.Time) error {
	switch format {
	case OutputJSON:
		b, err := json.MarshalIndent(r, "", "  ")
		if err != nil {
			return err
		}
		_, err = fmt.Fprintf(w, "%s\n", b)
		return err
	case OutputYAML:
		b, err := yaml.Marshal(r)
		if err != nil {
			return err
		}
		_, err = w.Write(b)
		return err
	}
	_, err := io.WriteString(w, treeText(r, now))
	return err
}

// treeText is the report for people: the summary line, the causes, then the chain.
func treeText(r Report, now time.Time) string {
	var b strings.Builder
	fmt.Fprintln(&b, r.Summary)
	if len(r.Causes) > 1 {
		fmt.Fprintln(&b, "Causes:")
		for _, c := range r.Causes {
			fmt.Fprintf(&b, "  - %s\n", causeLine(Ref{}, c))
		}
	}
	fmt.Fprintln(&b)
	causes := map[Ref][]Cause{}
	for _, c := range r.Causes {
		causes[c.Object] = append(causes[c.Object], c)
	}
	writeNode(&b, r.Tree, "", "", causes, now)
	if r.Leader != nil && len(r.Leaders) == 0 && len(r.Leader.Controllers) == 0 {
		// One leader for every view.
		switch {
		case r.Leader.Error != "":
			fmt.Fprintf(&b, "\n(controllers' views not read: %s)\n", r.Leader.Error)
		case r.Leader.URL != "":
			fmt.Fprintf(&b, "\n(controllers' views from %s)\n", r.Leader.URL)
		}
		return b.String()
	}
	// Controller groups: each leader says whose views it gave.
	leaders := r.Leaders
	if r.Leader != nil {
		leaders = append(slices.Clone(leaders), *r.Leader)
	}
	if len(leaders) > 0 {
		fmt.Fprintln(&b)
	}
	for _, l := range leaders {
		names := strings.Join(l.Controllers, ", ")
		switch {
		case l.Error != "":
			fmt.Fprintf(&b, "(views of %s not read: %s)\n", names, l.Error)
		case l.URL != "":
			fmt.Fprintf(&b, "(views of %s from %s, holder %s)\n", names, l.URL, l.Holder)
		}
	}
	return b.String()
}

// writeNode writes a link and its children: first the link's line (prefix), then its
// details and children indented (indent).
func writeNode(b *strings.Builder, n Node, prefix, indent string, causes map[Ref][]Cause, now time.Time) {
	line := fmt.Sprintf("%s/%s  %s", n.Object.Kind, n.Object.Name, n.Status)
	if n.Controller != "" {
		line += "  [" + n.Controller + "]"
	}
	fmt.Fprintln(b, prefix+line)
	detail := func(format string, args ...any) {
		fmt.Fprintf(b, "%s    %s\n", indent, fmt.Sprintf(format, args...))
	}
	if n.Desired != "" || n.Actual != "" {
		switch {
		case n.Desired == "":
			detail("actual: %s", n.Actual)
		case n.Actual == "":
			detail("desired: %s", n.Desired)
		default:
			detail("desired: %s; actual: %s", n.Desired, n.Actual)
		}
	}
	if n.Message != "" {
		detail("%s", n.Message)
	}
	for _, c := range causes[n.Object] {
		detail("cause: %s: %s", c.Reason, c.Message)
	}
	if r := n.Rule; r != nil {
		verdict := "converged"
		if !r.Converged {
			verdict = "not converged"
		}
		detail("%s's rule: %s: %s", n.Controller, verdict, r.Why)
	}
	if n.View != nil {
		for _, l := range viewLines(n.View, now) {
			detail("%s", l)
		}
	}
	for i, c := range n.Children {
		branch, next := "├─ ", "│  "
		if i == len(n.Children)-1 {
			branch, next = "└─ ", "   "
		}
		writeNode(b, c, indent+branch, indent+next, causes, now)
	}
}

// viewLines is a controller's view in words: queue state, last sync, expectations,
// stale-cache wait, convergence.
func viewLines(v *track.View, now time.Time) []string {
	q := "queue: " + v.Queue.State
	switch {
	case v.Queue.State == track.BackingOff && v.Queue.NextAttempt != nil:
		q += fmt.Sprintf(" after %d failures, next attempt in %s", v.Queue.Retries, ago(v.Queue.NextAttempt.Sub(now)))
	case v.Queue.State == track.Waiting && v.Queue.RequeueAt != nil:
		q += " until " + ago(v.Queue.RequeueAt.Sub(now)) + " from now"
	case v.Queue.State == track.Queued && v.Queue.QueuedSince != nil:
		q += " for " + ago(now.Sub(*v.Queue.QueuedSince))
	case v.Queue.Retries > 0:
		q += fmt.Sprintf(" (%d failures in a row)", v.Queue.Retries)
	}
	lines := []string{q}
	if n := len(v.Syncs); n > 0 {
		s := v.Syncs[n-1]
		l := fmt.Sprintf("last sync: %s %s ago, took %.3fs", s.Result, ago(now.Sub(s.Start)), s.DurationSeconds)
		if s.Error != "" {
			l += ": " + oneLine(s.Error)
		}
		lines = append(lines, l)
	}
	if e := v.Expectations; e != nil {
		lines = append(lines, fmt.Sprintf("expects %d creations, %d deletions (since %s ago)", e.Creations, e.Deletions, ago(now.Sub(e.Since))))
	}
	if s := v.Stale; s != nil {
		lines = append(lines, fmt.Sprintf("waits for its cache: wrote %s at %s, sees %s (since %s ago)", s.Resource, s.Written, s.Seen, ago(now.Sub(s.Since))))
	}
	if v.RateLimiterWaitSeconds >= 0.001 {
		lines = append(lines, fmt.Sprintf("waited %.3fs on the client's rate limiter", v.RateLimiterWaitSeconds))
	}
	if c := v.Convergence; c != nil {
		l := "converged by its rule: "
		if c.Converged {
			l += "yes"
		} else {
			l += "no"
			if c.Since != nil {
				l += " for " + ago(now.Sub(*c.Since))
			}
		}
		if c.Rule != "" {
			l += " (" + c.Rule + ")"
		}
		lines = append(lines, l)
	}
	return lines
}

// ago is a duration rounded for people.
func ago(d time.Duration) string {
	if d < 0 {
		d = 0
	}
	if d < 10*time.Second {
		return d.Round(100 * time.Millisecond).String()
	}
	return d.Round(time.Second).String()
}
