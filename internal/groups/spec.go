package groups

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// AutoSpec is the value of --controller-groups that chooses kcm's built-in split (Auto).
const AutoSpec = "auto"

// MaxNameLength bounds a group's name. The group's Lease is "<leader-elect-resource-name>-<group>":
// with upstream's resource name, kube-controller-manager (23 characters), a group of at most 30
// keeps that Lease name a DNS-1123 label (at most 63), as upstream's own Lease name is, with
// room for a resource name of up to 32 characters. A label-sized Lease name can stand wherever a
// label value must (a label selector naming the Lease, a metric's name label), and 30
// characters is ample for a name an operator types.
const MaxNameLength = 30

// Parse reads the value of --controller-groups into groups, sorted by name, each with its
// controllers' upstream names, sorted:
//
//   - "" (the default): nil, nil. Groups are off; one Lease leads every controller.
//   - "auto": Auto(running), kcm's built-in split.
//   - "name=controller,controller;name=controller,...": the groups named. Controllers may be
//     named by upstream name or alias (canonical maps either to the upstream name; false for
//     an unknown name).
//
// running are the upstream names of the controllers that run (after --controllers and the
// feature gates). Every one of them must be in exactly one group, so that each runs on one
// replica at a time; a controller named that does not run is dropped from its group (it is
// off, as it would be without groups), and a group left without controllers is dropped. The
// result may so be empty when nothing runs.
//
// Every mistake is reported at once, naming what to fix: a malformed entry, a group name that
// is not a DNS-1123 label of at most MaxNameLength characters or is used twice, a group naming
// no controller, an unknown controller, a controller in two groups, a running controller in
// none.
func Parse(value string, canonical func(name string) (string, bool), running []string) ([]Group, error) {
	value = strings.TrimSpace(value)
	switch value {
	case "":
		return nil, nil
	case AutoSpec:
		return Auto(running), nil
	}

	var problems []string
	var groups []Group
	groupOf := map[string]string{}   // controller → the first group naming it
	twice := map[string][]string{}   // controller → every group naming it, when more than one
	unknown := map[string][]string{} // unknown name → the groups naming it
	seenGroup := map[string]bool{}
	for _, entry := range strings.Split(value, ";") {
		if strings.TrimSpace(entry) == "" {
			continue // a trailing ";", harmless
		}
		name, list, ok := strings.Cut(entry, "=")
		name = strings.TrimSpace(name)
		if !ok || name == "" {
			problems = append(problems, fmt.Sprintf("%q is not name=controller,controller,...", strings.TrimSpace(entry)))
			continue
		}
		if msgs := nameProblems(name); len(msgs) > 0 {
			problems = append(problems, fmt.Sprintf("group name %q: %s", name, strings.Join(msgs, ", ")))
		}
		if seenGroup[name] {
			problems = append(problems, fmt.Sprintf("group %q is defined twice", name))
			continue
		}
		seenGroup[name] = true
		g := Group{Name: name}
		named := 0
		for _, c := range strings.Split(list, ",") {
			c = strings.TrimSpace(c)
			if c == "" {
				continue
			}
			named++
			n, ok := canonical(c)
			if !ok {
				unknown[c] = append(unknown[c], name)
				continue
			}
			switch first, seen := groupOf[n]; {
			case !seen:
				groupOf[n] = name
			case first == name:
				continue // named twice in one group (by name and alias, say): once is meant
			case len(twice[n]) == 0:
				twice[n] = []string{first, name}
			default:
				if !slices.Contains(twice[n], name) {
					twice[n] = append(twice[n], name)
				}
			}
			g.Controllers = append(g.Controllers, n)
		}
		if named == 0 {
			problems = append(problems, fmt.Sprintf("group %q names no controller", name))
		}
		groups = append(groups, g)
	}
	for _, c := range sortedKeys(unknown) {
		problems = append(problems, fmt.Sprintf("unknown controller %q (named in %s)", c, strings.Join(unknown[c], ", ")))
	}
	for _, c := range sortedKeys(twice) {
		problems = append(problems, fmt.Sprintf("controller %s is in more than one group (%s): each runs in one group only", c, strings.Join(twice[c], ", ")))
	}
	var ungrouped []string
	for _, c := range running {
		if _, ok := groupOf[c]; !ok && !slices.Contains(ungrouped, c) {
			ungrouped = append(ungrouped, c)
		}
	}
	if len(ungrouped) > 0 {
		slices.Sort(ungrouped)
		problems = append(problems, fmt.Sprintf("controllers that run are in no group: %s (add each to a group, or turn it off with --controllers)", strings.Join(ungrouped, ", ")))
	}
	if len(problems) > 0 {
		return nil, fmt.Errorf("invalid --controller-groups %q: %s", value, strings.Join(problems, "; "))
	}
	return keepRunning(groups, running), nil
}

// nameProblems says why name cannot name a group, if it cannot.
func nameProblems(name string) []string {
	msgs := validation.IsDNS1123Label(name)
	if len(name) > MaxNameLength {
		msgs = append(msgs, fmt.Sprintf("must be no more than %d characters (the group's Lease is \"<leader-elect-resource-name>-%s\")", MaxNameLength, name))
	}
	return msgs
}

// keepRunning keeps in each group the controllers that run, drops the groups left empty, and
// sorts groups and controllers.
func keepRunning(groups []Group, running []string) []Group {
	runs := map[string]bool{}
	for _, c := range running {
		runs[c] = true
	}
	out := []Group{}
	for _, g := range groups {
		var kept []string
		for _, c := range g.Controllers {
			if runs[c] && !slices.Contains(kept, c) {
				kept = append(kept, c)
			}
		}
		if len(kept) == 0 {
			continue
		}
		slices.Sort(kept)
		out = append(out, Group{Name: g.Name, Controllers: kept})
	}
	slices.SortFunc(out, func(a, b Group) int { return strings.Compare(a.Name, b.Name) })
	return out
}

func sortedKeys(m map[string][]string) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}
