package debugz

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/options"
)

// configzJSON is kcm's /configz object for args, decoded as generic JSON.
func configzJSON(t *testing.T, args ...string) map[string]any {
	t.Helper()
	opts := options.New()
	// Only the flag set: /configz shows what was given, validated or not.
	if err := opts.FlagSet().Parse(args); err != nil {
		t.Fatal(err)
	}
	cfg, err := Configuration(opts.FlagSet(), Aliases(controller.Registry()))
	if err != nil {
		t.Fatal(err)
	}
	return decode(t, cfg)
}

func decode(t *testing.T, v any) map[string]any {
	t.Helper()
	data, ok := v.([]byte)
	if !ok {
		var err error
		if data, err = json.Marshal(v); err != nil {
			t.Fatal(err)
		}
	}
	var out map[string]any
	if err := json.Unmarshal(data, &out); err != nil {
		t.Fatal(err)
	}
	return out
}

// leafDiff lists, sorted, the fields (dotted paths) whose values differ between want and got.
func leafDiff(want, got map[string]any) []string {
	var diffs []string
	var walk func(prefix string, w, g any)
	walk = func(prefix string, w, g any) {
		wm, wok := w.(map[string]any)
		gm, gok := g.(map[string]any)
		if wok && gok {
			keys := map[string]bool{}
			for k := range wm {
				keys[k] = true
			}
			for k := range gm {
				keys[k] = true
			}
			for k := range keys {
				walk(prefix+"."+k, wm[k], gm[k])
			}
			return
		}
		if !reflect.DeepEqual(w, g) {
			diffs = append(diffs, fmt.Sprintf("%s: upstream %v, kcm %v", strings.TrimPrefix(prefix, "."), w, g))
		}
	}
	walk("", want, got)
	sort.Strings(diffs)
	return diffs
}

func TestConfigzDefaultsAreUpstreams(t *testing.T) {
	got := configzJSON(t)
	if diffs := leafDiff(decode(t, []byte(upstreamDefaults)), got); len(diffs) > 0 {
		t.Errorf("kcm's /configz without flags differs from upstream's:\n  %s", strings.Join(diffs, "\n  "))
	}
	if got["kind"] != "KubeControllerManagerConfiguration" || got["apiVersion"] != "kubecontrollermanager.config.k8s.io/v1alpha1" {
		t.Errorf("kind %v, apiVersion %v", got["kind"], got["apiVersion"])
	}
}

// TestConfigzFollowsEveryFlagAsUpstream compares kcm's /configz with upstream's for a command
// line that sets every flag upstream's configuration holds to a value other than its default
// (recorded from upstream's option code by hack/tools/k8s/cmd/upstream-configz -probe):
// a flag kcm does not carry into its field, or carries into another, shows as a difference.
func TestConfigzFollowsEveryFlagAsUpstream(t *testing.T) {
	data, err := os.ReadFile(filepath.Join("testdata", "upstream-configz-probe.json"))
	if err != nil {
		t.Fatal(err)
	}
	var probe struct {
		Args    []string       `json:"args"`
		Configz map[string]any `json:"configz"`
	}
	if err := json.Unmarshal(data, &probe); err != nil {
		t.Fatal(err)
	}
	if diffs := leafDiff(probe.Configz, configzJSON(t, probe.Args...)); len(diffs) > 0 {
		t.Errorf("kcm's /configz differs from upstream's for %q:\n  %s", probe.Args, strings.Join(diffs, "\n  "))
	}
	// Every flag of the table is set away from its default, so each field it sets differs
	// from the defaults: the comparison above checks all of them.
	defaults := decode(t, []byte(upstreamDefaults))
	if diffs := leafDiff(defaults, probe.Configz); len(diffs) < len(configzFields) {
		t.Errorf("the probe changes %d fields, fewer than the %d flags of the table", len(diffs), len(configzFields))
	}
}

func TestCanonicalControllers(t *testing.T) {
	aliases := map[string]string{"ttl": "ttl-controller", "csrsigning": "certificatesigningrequest-signing-controller"}
	for _, tc := range []struct {
		in, want []string
	}{
		{in: []string{"*"}, want: []string{"*"}},
		{in: []string{"*", "-ttl", "csrsigning"}, want: []string{"*", "-ttl-controller", "certificatesigningrequest-signing-controller"}},
		{in: []string{"ttl-controller", "unknown", "-unknown"}, want: []string{"ttl-controller", "unknown", "-unknown"}},
		{in: []string{}, want: []string{}},
	} {
		if got := canonicalControllers(tc.in, aliases); !reflect.DeepEqual(got, tc.want) {
			t.Errorf("canonicalControllers(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}

// TestConfigzLeaderMigrationFile: with a migration configuration file, /configz shows the
// file's content (the probe above covers the default configuration, without a file).
func TestConfigzLeaderMigrationFile(t *testing.T) {
	file := filepath.Join(t.TempDir(), "migration.yaml")
	const migration = `apiVersion: controllermanager.config.k8s.io/v1alpha1
kind: LeaderMigrationConfiguration
leaderName: my-migration
resourceLock: leases
controllerLeaders:
- name: route-controller
  component: kube-controller-manager
`
	if err := os.WriteFile(file, []byte(migration), 0o600); err != nil {
		t.Fatal(err)
	}
	generic := configzJSON(t, "--enable-leader-migration", "--leader-migration-config="+file)["Generic"].(map[string]any)
	want := map[string]any{
		"leaderName":        "my-migration",
		"resourceLock":      "leases",
		"controllerLeaders": []any{map[string]any{"name": "route-controller", "component": "kube-controller-manager"}},
	}
	if generic["LeaderMigrationEnabled"] != true || !reflect.DeepEqual(generic["LeaderMigration"], want) {
		t.Errorf("LeaderMigrationEnabled %v, LeaderMigration %v; want true, %v", generic["LeaderMigrationEnabled"], generic["LeaderMigration"], want)
	}

	// Upstream does not start with a file it cannot read.
	opts := options.New()
	if err := opts.FlagSet().Parse([]string{"--enable-leader-migration", "--leader-migration-config=" + file + ".missing"}); err != nil {
		t.Fatal(err)
	}
	if _, err := Configuration(opts.FlagSet(), nil); err == nil {
		t.Error("a missing leader migration file was accepted")
	}
}
