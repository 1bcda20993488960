package controller

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// README.md's controller table must say which controllers kcm has built: a controller that
// lands updates its row, and the table never claims one that does not run.
func TestREADMEControllerTable(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("..", "..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	row := regexp.MustCompile(`(?m)^\| ([a-z][-a-z]*-controller) \| (.+) \|$`)
	status := map[string]string{}
	for _, m := range row.FindAllStringSubmatch(string(data), -1) {
		status[m[1]] = m[2]
	}
	for _, d := range Registry() {
		s, ok := status[d.Name]
		switch {
		case !ok:
			t.Errorf("README.md's controller table has no row for %s", d.Name)
		case d.Built() && !strings.HasPrefix(s, "done"):
			t.Errorf("README.md says %s is %q, but kcm sets it up: mark it done", d.Name, s)
		case !d.Built() && strings.HasPrefix(s, "done"):
			t.Errorf("README.md says %s is done, but the registry has no setup for it", d.Name)
		}
	}
}
