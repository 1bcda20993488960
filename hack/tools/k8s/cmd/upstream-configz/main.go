// Command upstream-configz finds out how upstream kube-controller-manager v1.37.1 fills its
// /configz answer (its KubeControllerManagerConfiguration, converted to
// kubecontrollermanager.config.k8s.io/v1alpha1) from its command line, by running upstream's
// own option code: it builds the configuration for an empty command line, then once per flag
// with that flag alone set to a value different from its default, and records which field
// changed and that it holds the flag's value. It prints a Go source file for
// internal/debugz: upstream's default answer and the field each flag sets. With -probe FILE it
// also writes upstream's answer for one command line setting every such flag at once (and
// --controllers with aliases), which internal/debugz's test compares kcm's answer with.
//
// Flags that change several fields, or a field to something other than their value, are
// reported on stderr and make the command fail unless internal/debugz handles them by hand
// (handledByKCM below).
package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"go/format"
	"math"
	"os"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	cliflag "k8s.io/component-base/cli/flag"
	kcmv1alpha1 "k8s.io/kube-controller-manager/config/v1alpha1"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	kcmconfig "k8s.io/kubernetes/cmd/kube-controller-manager/app/config"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	conversion "k8s.io/kubernetes/pkg/controller/apis/config/v1alpha1"
)

// notProbed are flags that cannot be probed one by one here: the secure port would be opened
// by ApplyTo (it stays 0 in every probe; the serving options are not part of the
// configuration), and the feature-gate flags belong to a process-wide registry.
var notProbed = map[string]bool{
	"secure-port": true, "feature-gates": true, "emulated-version": true, "min-compatibility-version": true,
}

// handledByKCM are the flags whose effect on the configuration is not a copy of their value;
// internal/debugz reproduces each by hand and its test checks it against the probe file.
var handledByKCM = map[string]string{
	// Aliases are replaced by the canonical controller names.
	"controllers": "aliases replaced by canonical names",
	// Turns LeaderMigrationEnabled on and fills LeaderMigration from --leader-migration-config
	// or from the default migration configuration.
	"enable-leader-migration": "fills LeaderMigration",
	// Split at commas into ServiceCIDR and SecondaryServiceCIDR.
	"service-cluster-ip-range": "split into two fields",
}

func main() {
	probeFile := flag.String("probe", "", "also write upstream's /configz for a command line setting every mapped flag to this file")
	flag.Parse()
	if err := run(*probeFile); err != nil {
		fmt.Fprintln(os.Stderr, "upstream-configz:", err)
		os.Exit(1)
	}
}

// mapping is one flag and the configuration field (a path of JSON keys) it sets.
type mapping struct {
	flag, typ string
	path      []string
}

func run(probeFile string) error {
	base, err := configz(nil)
	if err != nil {
		return err
	}
	baseLeaves := leaves(base)

	var mappings []mapping
	var failures []string
	defaults := upstreamFlags()
	names := make([]string, 0, len(defaults))
	for name := range defaults {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		f := defaults[name]
		if notProbed[name] {
			continue
		}
		values, ok := probeValues(f)
		if !ok {
			continue
		}
		// Each probe value must land, unchanged, in the same single field.
		var path string
		var problem string
		for _, value := range values {
			out, err := configz([]string{"--" + name + "=" + value})
			if err != nil {
				return fmt.Errorf("--%s=%s: %w", name, value, err)
			}
			changed := diff(baseLeaves, leaves(out))
			switch {
			case len(changed) == 0:
				problem = "none"
			case len(changed) != 1:
				problem = fmt.Sprintf("--%s=%s changes %d fields: %q", name, value, len(changed), changed)
			case path != "" && changed[0] != path:
				problem = fmt.Sprintf("--%s changes %q or %q", name, path, changed[0])
			case !sameValue(f.Value.Type(), value, leaves(out)[changed[0]]):
				problem = fmt.Sprintf("--%s=%s sets %q to %s", name, value, changed[0], leaves(out)[changed[0]])
			default:
				path = changed[0]
			}
			if problem != "" {
				break
			}
		}
		if _, ok := handledByKCM[name]; ok {
			continue
		}
		switch problem {
		case "":
			mappings = append(mappings, mapping{flag: name, typ: f.Value.Type(), path: strings.Split(path, "\x00")})
		case "none":
		default:
			failures = append(failures, problem)
		}
	}
	if len(failures) > 0 {
		return fmt.Errorf("flags that do not copy their value into one field:\n  %s", strings.Join(failures, "\n  "))
	}
	if err := printGo(base, mappings); err != nil {
		return err
	}
	if probeFile != "" {
		return writeProbe(probeFile, defaults, mappings)
	}
	return nil
}

// writeProbe writes upstream's answer for one command line setting every mapped flag at once,
// with --controllers naming controllers by alias, and leader migration on with its default
// configuration.
func writeProbe(file string, defaults map[string]*pflag.Flag, mappings []mapping) error {
	args := []string{"--controllers=*,-ttl,bootstrapsigner,-serviceaccount-token,csrsigning", "--enable-leader-migration"}
	for _, m := range mappings {
		if m.flag == "controllers" {
			continue
		}
		v, _ := probeValues(defaults[m.flag])
		args = append(args, "--"+m.flag+"="+v[0])
	}
	args = append(args, "--service-cluster-ip-range=10.96.0.0/12,fd00:10:96::/112")
	out, err := configz(args)
	if err != nil {
		return err
	}
	var doc any
	if err := json.Unmarshal(out, &doc); err != nil {
		return err
	}
	data, err := json.MarshalIndent(map[string]any{
		"comment": "Written by hack/tools/k8s/cmd/upstream-configz -probe: upstream kube-controller-manager v1.37.1's /configz for args. DO NOT EDIT.",
		"args":    args,
		"configz": doc,
	}, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(file, append(data, '\n'), 0o644)
}

// upstreamFlags returns upstream's flags that feed its options, by name.
func upstreamFlags() map[string]*pflag.Flag {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		panic(err)
	}
	fss := s.Flags(app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases())
	flags := map[string]*pflag.Flag{}
	for _, fs := range fss.FlagSets {
		// Upstream's command line normalises "_" to "-" (cliflag.WordSepNormalizeFunc).
		fs.VisitAll(func(f *pflag.Flag) { flags[strings.ReplaceAll(f.Name, "_", "-")] = f })
	}
	return flags
}

// configz returns upstream's /configz object for a command line, as its Run builds it: the
// options applied to a Config, the component configuration converted to v1alpha1.
func configz(args []string) ([]byte, error) {
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return nil, err
	}
	known, disabled, aliases := app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()
	fs := pflag.NewFlagSet("kube-controller-manager", pflag.ContinueOnError)
	fs.SetNormalizeFunc(cliflag.WordSepNormalizeFunc)
	for _, f := range s.Flags(known, disabled, aliases).FlagSets {
		fs.AddFlagSet(f)
	}
	if err := fs.Parse(append([]string{"--secure-port=0"}, args...)); err != nil {
		return nil, err
	}
	c := &kcmconfig.Config{}
	if err := s.ApplyTo(c, known, disabled, aliases); err != nil {
		return nil, err
	}
	ext := &kcmv1alpha1.KubeControllerManagerConfiguration{}
	if err := conversion.Convert_config_KubeControllerManagerConfiguration_To_v1alpha1_KubeControllerManagerConfiguration(&c.ComponentConfig, ext, nil); err != nil {
		return nil, err
	}
	ext.SetGroupVersionKind(kcmv1alpha1.SchemeGroupVersion.WithKind("KubeControllerManagerConfiguration"))
	// Upstream fills the ignored resources from a map: their order changes from run to run.
	gc := ext.GarbageCollectorController.GCIgnoredResources
	sort.Slice(gc, func(i, j int) bool {
		return gc[i].Group+"/"+gc[i].Resource < gc[j].Group+"/"+gc[j].Resource
	})
	return json.Marshal(ext)
}

// probeValues returns values of the flag's type that differ from its default; a text flag
// is also given a list, which a flag split by upstream would not copy.
func probeValues(f *pflag.Flag) ([]string, bool) {
	def := f.DefValue
	switch f.Value.Type() {
	case "bool":
		b, _ := strconv.ParseBool(def)
		return []string{strconv.FormatBool(!b)}, true
	case "int", "int32":
		n, _ := strconv.ParseInt(def, 10, 64)
		return []string{strconv.FormatInt(n+7, 10), strconv.FormatInt(n+11, 10)}, true
	case "float32", "float64":
		x, _ := strconv.ParseFloat(def, 64)
		return []string{strconv.FormatFloat(x+0.25, 'g', -1, 64), strconv.FormatFloat(x+0.5, 'g', -1, 64)}, true
	case "duration":
		d, _ := time.ParseDuration(def)
		return []string{(d + 7*time.Second).String(), (d + 11*time.Minute).String()}, true
	case "string":
		return []string{"probe-" + f.Name, "probe-a,probe-b"}, true
	case "ip":
		return []string{"127.0.0.7"}, true
	case "stringSlice":
		return []string{"probe-a,probe-b", "probe-c"}, true
	}
	return nil, false
}

// sameValue reports whether a field's JSON holds the flag's value.
func sameValue(typ, value string, got json.RawMessage) bool {
	switch typ {
	case "float32", "float64":
		var x float64
		if json.Unmarshal(got, &x) != nil {
			return false
		}
		want, _ := strconv.ParseFloat(value, 64)
		return math.Abs(x-want) < 1e-6
	case "stringSlice":
		var list []string
		return json.Unmarshal(got, &list) == nil && reflect.DeepEqual(list, strings.Split(value, ","))
	case "string", "ip", "duration":
		var s string
		return json.Unmarshal(got, &s) == nil && s == value
	}
	return string(got) == value
}

// leaves flattens a JSON object into its leaf values by path (keys joined by NUL); lists are
// leaves.
func leaves(doc []byte) map[string]json.RawMessage {
	var root map[string]json.RawMessage
	if err := json.Unmarshal(doc, &root); err != nil {
		panic(err)
	}
	out := map[string]json.RawMessage{}
	var walk func(prefix string, obj map[string]json.RawMessage)
	walk = func(prefix string, obj map[string]json.RawMessage) {
		for k, v := range obj {
			var child map[string]json.RawMessage
			if bytes.HasPrefix(bytes.TrimSpace(v), []byte("{")) && json.Unmarshal(v, &child) == nil && len(child) > 0 {
				walk(prefix+k+"\x00", child)
				continue
			}
			out[prefix+k] = v
		}
	}
	walk("", root)
	return out
}

// diff lists the paths whose values differ, sorted.
func diff(a, b map[string]json.RawMessage) []string {
	var paths []string
	for p, v := range b {
		if !bytes.Equal(a[p], v) {
			paths = append(paths, p)
		}
	}
	for p := range a {
		if _, ok := b[p]; !ok {
			paths = append(paths, p)
		}
	}
	sort.Strings(paths)
	return paths
}

func printGo(base []byte, mappings []mapping) error {
	var pretty bytes.Buffer
	if err := json.Indent(&pretty, base, "", "  "); err != nil {
		return err
	}
	var b strings.Builder
	b.WriteString("// Code generated by hack/tools/k8s/cmd/upstream-configz from k8s.io/kubernetes v1.37.1. DO NOT EDIT.\n\n")
	b.WriteString("package debugz\n\n")
	b.WriteString("// upstreamDefaults is upstream's /configz object for a command line without flags (the\n")
	b.WriteString("// garbage collector's ignored resources sorted: upstream lists them in map order).\n")
	fmt.Fprintf(&b, "const upstreamDefaults = `%s`\n\n", pretty.String())
	b.WriteString("// configzFields lists every upstream flag whose value upstream copies into one field of\n")
	b.WriteString("// /configz, with that field's JSON path. --controllers, --enable-leader-migration and\n")
	b.WriteString("// --service-cluster-ip-range are not copies: configz.go handles them.\n")
	b.WriteString("var configzFields = []configzField{\n")
	for _, m := range mappings {
		fmt.Fprintf(&b, "\t{Flag: %q, Type: %q, Path: %#v},\n", m.flag, m.typ, m.path)
	}
	b.WriteString("}\n")
	src, err := format.Source([]byte(b.String()))
	if err != nil {
		return err
	}
	_, err = os.Stdout.Write(src)
	return err
}
