package debugz

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	cmv1alpha1 "k8s.io/controller-manager/config/v1alpha1"
	migrationconfig "k8s.io/controller-manager/pkg/leadermigration/config"
	v1alpha1 "k8s.io/kube-controller-manager/config/v1alpha1"
)

// ConfigzName is the name upstream registers its configuration under: /configz answers
// {"kubecontrollermanager.config.k8s.io": {...}}.
const ConfigzName = "kubecontrollermanager.config.k8s.io"

// configzField is one upstream flag whose value upstream copies into a field of /configz.
type configzField struct {
	Flag string
	// Type is the flag's pflag type upstream.
	Type string
	// Path is the field's JSON keys from the configuration's root.
	Path []string
}

// Configuration returns what upstream's /configz shows for the command line fs holds:
// upstream's defaults (recorded from upstream's option code), every field a flag sets taken
// from that flag, then the flags upstream does not simply copy: --controllers with aliases
// replaced by canonical names, --service-cluster-ip-range split into its two ranges, and
// --enable-leader-migration filling the migration configuration from
// --leader-migration-config (or the default one).
func Configuration(fs *pflag.FlagSet, aliases map[string]string) (*v1alpha1.KubeControllerManagerConfiguration, error) {
	cfg := &v1alpha1.KubeControllerManagerConfiguration{}
	if err := json.Unmarshal([]byte(upstreamDefaults), cfg); err != nil {
		return nil, fmt.Errorf("upstream's recorded defaults: %w", err)
	}
	// The flags' values are laid over the defaults as one JSON object: decoding it into cfg
	// sets exactly the fields it names, converted to their types (metav1.Duration, float32,
	// *bool, ...) as upstream's JSON encoding reads them back.
	overlay := map[string]any{}
	for _, f := range configzFields {
		fl := fs.Lookup(f.Flag)
		if fl == nil {
			return nil, fmt.Errorf("no flag --%s, which sets %s upstream", f.Flag, strings.Join(f.Path, "."))
		}
		v, err := flagValue(f.Type, fl.Value)
		if err != nil {
			return nil, fmt.Errorf("--%s: %w", f.Flag, err)
		}
		setPath(overlay, f.Path, v)
	}
	data, err := json.Marshal(overlay)
	if err != nil {
		return nil, err
	}
	if err := json.Unmarshal(data, cfg); err != nil {
		return nil, err
	}

	if f := fs.Lookup("controllers"); f != nil {
		cfg.Generic.Controllers = canonicalControllers(sliceValue(f.Value), aliases)
	}
	if f := fs.Lookup("service-cluster-ip-range"); f != nil {
		// Upstream splits the dual-stack list: the first range, then the second one.
		cidrs := strings.Split(f.Value.String(), ",")
		cfg.NodeIPAMController.ServiceCIDR = cidrs[0]
		if len(cidrs) > 1 {
			cfg.NodeIPAMController.SecondaryServiceCIDR = cidrs[1]
		}
	}
	if err := leaderMigration(fs, &cfg.Generic); err != nil {
		return nil, err
	}
	return cfg, nil
}

// canonicalControllers is upstream's --controllers in /configz: each alias replaced by the
// controller's name, a leading "-" kept.
func canonicalControllers(entries []string, aliases map[string]string) []string {
	out := make([]string, len(entries))
	for i, entry := range entries {
		name := strings.TrimPrefix(entry, "-")
		if canonical, ok := aliases[name]; ok {
			name = canonical
		}
		if strings.HasPrefix(entry, "-") {
			name = "-" + name
		}
		out[i] = name
	}
	return out
}

// leaderMigration is upstream's leader migration options applied to the configuration
// (k8s.io/controller-manager's LeaderMigrationOptions.ApplyTo): when enabled, the
// configuration file's content, or the default migration configuration without one. A file
// that cannot be read or is invalid fails, as it fails upstream's start.
func leaderMigration(fs *pflag.FlagSet, generic *cmv1alpha1.GenericControllerManagerConfiguration) error {
	enabled := false
	if f := fs.Lookup("enable-leader-migration"); f != nil {
		var err error
		if enabled, err = strconv.ParseBool(f.Value.String()); err != nil {
			return fmt.Errorf("--enable-leader-migration: %w", err)
		}
	}
	generic.LeaderMigrationEnabled = enabled
	if !enabled {
		return nil
	}
	file := ""
	if f := fs.Lookup("leader-migration-config"); f != nil {
		file = f.Value.String()
	}
	migration := migrationconfig.DefaultLeaderMigrationConfiguration()
	if file != "" {
		read, err := migrationconfig.ReadLeaderMigrationConfiguration(file)
		if err != nil {
			return err
		}
		if errs := migrationconfig.ValidateLeaderMigrationConfiguration(read); len(errs) != 0 {
			return fmt.Errorf("failed to parse leader migration configuration: %v", errs)
		}
		migration = read
	}
	return cmv1alpha1.Convert_config_LeaderMigrationConfiguration_To_v1alpha1_LeaderMigrationConfiguration(
		migration, &generic.LeaderMigration, nil)
}

// flagValue is a flag's value as the JSON value of a field of upstream's type for it.
// Values kcm only accepts are held as the text given, so each is parsed by its type here.
func flagValue(typ string, v pflag.Value) (any, error) {
	text := v.String()
	switch typ {
	case "bool":
		return strconv.ParseBool(text)
	case "int", "int32":
		return strconv.ParseInt(text, 0, 64)
	case "float32", "float64":
		return strconv.ParseFloat(text, 64)
	case "duration":
		d, err := time.ParseDuration(text)
		return metav1.Duration{Duration: d}, err
	case "string", "ip":
		return text, nil
	case "stringSlice":
		return sliceValue(v), nil
	}
	return nil, fmt.Errorf("flag type %q has no /configz field upstream", typ)
}

// sliceValue is a list flag's items.
func sliceValue(v pflag.Value) []string {
	if s, ok := v.(pflag.SliceValue); ok {
		return s.GetSlice()
	}
	text := strings.TrimSuffix(strings.TrimPrefix(v.String(), "["), "]")
	if text == "" {
		return []string{}
	}
	return strings.Split(text, ",")
}

// setPath sets obj[path[0]][path[1]]... to v, making the objects on the way.
func setPath(obj map[string]any, path []string, v any) {
	for _, k := range path[:len(path)-1] {
		child, ok := obj[k].(map[string]any)
		if !ok {
			child = map[string]any{}
			obj[k] = child
		}
		obj = child
	}
	obj[path[len(path)-1]] = v
}
