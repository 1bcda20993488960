// Package options holds kcm's command line: upstream kube-controller-manager's flags, with
// upstream's names and defaults. Every flag upstream v1.37 accepts is accepted, so existing
// manifests keep working; those kcm does not act on yet are reported, never rejected. kcm
// adds one flag of its own, --controller-groups (own.go), which upstream's manifests never set.
package options

import (
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	apiserveroptions "k8s.io/apiserver/pkg/server/options"
	logsapi "k8s.io/component-base/logs/api/v1"
	_ "k8s.io/component-base/logs/json/register" // --logging-format=json, as upstream's main registers it
	cmoptions "k8s.io/controller-manager/options"

	"github.com/kcm/kcm/internal/features"
)

// Options is the parsed command line.
type Options struct {
	// Kubeconfig and Master say how to reach the API server; both empty means in-cluster.
	Kubeconfig string
	Master     string

	// Controllers is upstream's --controllers list: "*", "name", "-name", names or aliases.
	Controllers []string

	KubeAPIQPS         float32
	KubeAPIBurst       int32
	KubeAPIContentType string

	LeaderElection LeaderElection

	// ControllerGroups is --controller-groups, kcm's own flag (own.go): empty for upstream's one
	// Lease, "auto", or "name=controller,...;name=...". internal/groups parses and checks it
	// against the controllers that run.
	ControllerGroups string

	// The secure port, as upstream's: k8s.io/apiserver's serving, delegated authentication and
	// authorization options with upstream's defaults and flags (--secure-port 10257,
	// --bind-address, --tls-*, --client-ca-file, --requestheader-*, --authentication-*,
	// --authorization-*), and --profiling/--contention-profiling for its debug handlers.
	SecureServing  *apiserveroptions.SecureServingOptions
	Authentication *apiserveroptions.DelegatingAuthenticationOptions
	Authorization  *apiserveroptions.DelegatingAuthorizationOptions
	Debugging      *cmoptions.DebuggingOptions

	// RootCAFile is published as kube-root-ca.crt; empty means the CA of the kubeconfig.
	RootCAFile string

	// Logs is upstream's logging configuration: -v, --vmodule, --logging-format,
	// --log-flush-frequency and the --log-{text,json}-* options, applied by internal/logging.
	Logs *logsapi.LoggingConfiguration
	// Version is --version: "false", or anything else to print the version and quit.
	Version string

	// Concurrency maps each --concurrent-*-syncs flag name to its parsed value.
	Concurrency map[string]*int32

	// FeatureGates is --feature-gates (with --emulated-version and --min-compatibility-version):
	// upstream's gates and defaults, set by Parse.
	FeatureGates *features.Gates

	fs *pflag.FlagSet
	// accepted names the upstream flags registered only so they parse.
	accepted map[string]bool
}

// LeaderElection mirrors upstream's --leader-elect-* flags.
type LeaderElection struct {
	Enabled           bool
	LeaseDuration     time.Duration
	RenewDeadline     time.Duration
	RetryPeriod       time.Duration
	ResourceLock      string
	ResourceName      string
	ResourceNamespace string
}

// New returns Options bound to a new flag set holding every upstream flag. readByControllers
// names the upstream flags some controller kcm has built reads (controller.Flags): the help
// of every other accepted flag says kcm does not act on it yet.
func New(readByControllers ...string) *Options {
	o := &Options{Concurrency: map[string]*int32{}, accepted: map[string]bool{}, FeatureGates: features.New(),
		Logs: logsapi.NewLoggingConfiguration()}
	fs := pflag.NewFlagSet("kcm", pflag.ContinueOnError)
	fs.SortFlags = true
	// Like upstream, "--concurrent_rc_syncs" and "--concurrent-rc-syncs" are the same flag.
	fs.SetNormalizeFunc(wordSepNormalize)
	o.fs = fs

	fs.StringVar(&o.Kubeconfig, "kubeconfig", "", "Path to kubeconfig file with authorization and master location information (the master location can be overridden by the master flag).")
	fs.StringVar(&o.Master, "master", "", "The address of the Kubernetes API server (overrides any value in kubeconfig).")
	fs.StringSliceVar(&o.Controllers, "controllers", []string{"*"}, "A list of controllers to enable. '*' enables all on-by-default controllers, 'foo' enables the controller named 'foo', '-foo' disables the controller named 'foo'. Names and upstream aliases are accepted.")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", 20, "QPS to use while talking with kubernetes apiserver, for each controller's own client.")
	fs.Int32Var(&o.KubeAPIBurst, "kube-api-burst", 30, "Burst to use while talking with kubernetes apiserver, for each controller's own client.")
	fs.StringVar(&o.KubeAPIContentType, "kube-api-content-type", "application/vnd.kubernetes.protobuf", "Content type of requests sent to apiserver.")

	le := &o.LeaderElection
	fs.BoolVar(&le.Enabled, "leader-elect", true, "Start a leader election client and gain leadership before executing the main loop.")
	fs.DurationVar(&le.LeaseDuration, "leader-elect-lease-duration", 15*time.Second, "The duration that non-leader candidates will wait after observing a leadership renewal until attempting to acquire leadership.")
	fs.DurationVar(&le.RenewDeadline, "leader-elect-renew-deadline", 10*time.Second, "The interval between attempts by the acting master to renew a leadership slot before it stops leading.")
	fs.DurationVar(&le.RetryPeriod, "leader-elect-retry-period", 2*time.Second, "The duration the clients should wait between attempting acquisition and renewal of a leadership.")
	fs.StringVar(&le.ResourceLock, "leader-elect-resource-lock", "leases", "The type of resource object that is used for locking during leader election. Only 'leases' is supported.")
	fs.StringVar(&le.ResourceName, "leader-elect-resource-name", "kube-controller-manager", "The name of resource object that is used for locking during leader election.")
	fs.StringVar(&le.ResourceNamespace, "leader-elect-resource-namespace", "kube-system", "The namespace of resource object that is used for locking during leader election.")

	o.addServingFlags(fs)
	o.addOwnFlags(fs)

	fs.StringVar(&o.RootCAFile, "root-ca-file", "", "If set, this root certificate authority will be included in the kube-root-ca.crt ConfigMap of every namespace.")

	fs.StringVar(&o.Version, "version", "false", "Print version information and quit.")
	fs.Lookup("version").NoOptDefVal = "true"

	// Upstream's logging flags, with upstream's help and defaults.
	logsapi.AddFlags(o.Logs, fs)

	// --feature-gates, --emulated-version and --min-compatibility-version, as upstream adds them.
	o.FeatureGates.AddFlags(fs)

	for _, f := range append(append([]upstreamFlag{}, upstreamFlags...), cloudFlags...) {
		// pflag answers -h/--help itself.
		if f.Name == "help" || fs.Lookup(f.Name) != nil {
			continue
		}
		if strings.HasPrefix(f.Name, "concurrent-") && f.Type == "int32" {
			o.addConcurrencyFlag(f)
			continue
		}
		o.addAcceptedFlag(f, slices.Contains(readByControllers, f.Name))
	}
	return o
}

// FlagSet returns the flag set to parse the command line with.
func (o *Options) FlagSet() *pflag.FlagSet { return o.fs }

// Parse parses args (without the program name) and validates the result.
func (o *Options) Parse(args []string) error {
	if err := o.fs.Parse(args); err != nil {
		return err
	}
	if len(o.fs.Args()) > 0 {
		return fmt.Errorf("unexpected arguments %q: kcm takes only flags", o.fs.Args())
	}
	// As upstream, the gates are set right after parsing and checked before the other flags,
	// their errors standing alone with upstream's messages.
	if err := o.FeatureGates.Set(); err != nil {
		return err
	}
	if errs := o.FeatureGates.Validate(); len(errs) > 0 {
		return utilerrors.NewAggregate(errs)
	}
	// Then, as upstream validates its logging configuration first of the rest, against the
	// gates just set, its errors also standing alone in upstream's words.
	if errs := logsapi.Validate(o.Logs, o.FeatureGates.Gate(), nil); len(errs) > 0 {
		return errs.ToAggregate()
	}
	return o.Validate()
}

// Validate checks values that would only fail later, and less clearly.
func (o *Options) Validate() error {
	var errs []string
	// Upstream takes any --kube-api-qps (0: client-go's default, negative: no limit), but a
	// negative burst would fail every request of the controller.
	if o.KubeAPIBurst < 0 {
		errs = append(errs, "--kube-api-burst must be non-negative")
	}
	le := o.LeaderElection
	if le.Enabled {
		if le.ResourceLock != "leases" {
			errs = append(errs, fmt.Sprintf("--leader-elect-resource-lock=%q is not supported: only \"leases\" is", le.ResourceLock))
		}
		if le.LeaseDuration <= le.RenewDeadline {
			errs = append(errs, "--leader-elect-lease-duration must be greater than --leader-elect-renew-deadline")
		}
		if le.RenewDeadline <= le.RetryPeriod {
			errs = append(errs, "--leader-elect-renew-deadline must be greater than --leader-elect-retry-period")
		}
		if le.ResourceName == "" || le.ResourceNamespace == "" {
			errs = append(errs, "--leader-elect-resource-name and --leader-elect-resource-namespace must not be empty")
		}
	}
	for _, err := range o.validateServing() {
		errs = append(errs, err.Error())
	}
	for name, n := range o.Concurrency {
		if *n < 0 {
			errs = append(errs, fmt.Sprintf("--%s must not be negative", name))
		}
	}
	errs = append(errs, o.validateAccepted()...)
	if len(errs) > 0 {
		return fmt.Errorf("invalid flags: %s", strings.Join(errs, "; "))
	}
	return nil
}

// Workers returns the worker count a --concurrent-*-syncs flag sets.
func (o *Options) Workers(f Int32Flag) int { return int(o.Int32(f)) }

// SetButIgnored lists the flags given on the command line that nothing acts on: those only
// a stopped controller would act on (unused), and the upstream flags kcm merely accepts
// unless a running controller reads them (actedOn).
func (o *Options) SetButIgnored(actedOn, unused map[string]bool) []string {
	var names []string
	o.fs.Visit(func(f *pflag.Flag) {
		if unused[f.Name] || (o.accepted[f.Name] && !actedOn[f.Name]) {
			names = append(names, "--"+f.Name)
		}
	})
	sort.Strings(names)
	return names
}

// Flag is the typed handle of one upstream flag; zz_generated.upstream_flags.go declares one
// per scalar flag (NodeMonitorGracePeriod, ConcurrentJobSyncs, ...), so that a controller
// reads a flag by a Go name: a misspelt name does not compile, a wrong type does not either.
type Flag interface{ FlagName() string }

// Handle types, one per flag type.
type (
	BoolFlag     string
	Int32Flag    string
	IntFlag      string
	Float32Flag  string
	Float64Flag  string
	DurationFlag string
	StringFlag   string
)

func (f BoolFlag) FlagName() string     { return string(f) }
func (f Int32Flag) FlagName() string    { return string(f) }
func (f IntFlag) FlagName() string      { return string(f) }
func (f Float32Flag) FlagName() string  { return string(f) }
func (f Float64Flag) FlagName() string  { return string(f) }
func (f DurationFlag) FlagName() string { return string(f) }
func (f StringFlag) FlagName() string   { return string(f) }

// The typed reads. Parse has validated every scalar value, and a test checks that every
// handle names a flag of its type, so the conversions below cannot fail on a parsed
// command line; before Parse they read the defaults.

// Duration returns a duration flag's value.
func (o *Options) Duration(f DurationFlag) time.Duration {
	d, _ := time.ParseDuration(o.value(f))
	return d
}

// Float32 returns a float32 flag's value.
func (o *Options) Float32(f Float32Flag) float32 {
	v, _ := strconv.ParseFloat(o.value(f), 32)
	return float32(v)
}

// Float64 returns a float64 flag's value.
func (o *Options) Float64(f Float64Flag) float64 {
	v, _ := strconv.ParseFloat(o.value(f), 64)
	return v
}

// Int32 returns an int32 flag's value.
func (o *Options) Int32(f Int32Flag) int32 {
	v, _ := strconv.ParseInt(o.value(f), 10, 32)
	return int32(v)
}

// Int returns an int flag's value.
func (o *Options) Int(f IntFlag) int {
	v, _ := strconv.ParseInt(o.value(f), 10, 64)
	return int(v)
}

// Bool returns a bool flag's value.
func (o *Options) Bool(f BoolFlag) bool {
	v, _ := strconv.ParseBool(o.value(f))
	return v
}

// String returns a string flag's value.
func (o *Options) String(f StringFlag) string { return o.value(f) }

// value is a flag's current value as text.
func (o *Options) value(f Flag) string {
	if fl := o.fs.Lookup(f.FlagName()); fl != nil {
		return fl.Value.String()
	}
	return ""
}

// validateAccepted checks the values of the accepted scalar flags the way their types
// would, so that --node-monitor-grace-period=soon fails at startup as it does upstream.
func (o *Options) validateAccepted() []string {
	var errs []string
	o.fs.Visit(func(f *pflag.Flag) {
		if !o.accepted[f.Name] {
			return
		}
		v := f.Value.String()
		var err error
		switch f.Value.Type() {
		case "duration":
			_, err = time.ParseDuration(v)
		case "float32", "float64":
			_, err = strconv.ParseFloat(v, 64)
		case "int32", "int":
			_, err = strconv.ParseInt(v, 10, 32)
		case "bool":
			_, err = strconv.ParseBool(v)
		}
		if err != nil {
			errs = append(errs, fmt.Sprintf("invalid value %q for --%s: %v", v, f.Name, err))
		}
	})
	return errs
}

func (o *Options) addConcurrencyFlag(f upstreamFlag) {
	var def int32
	if _, err := fmt.Sscan(f.Default, &def); err != nil {
		panic(fmt.Sprintf("generated default %q of --%s is not an int32: %v", f.Default, f.Name, err))
	}
	v := new(int32)
	o.fs.Int32Var(v, f.Name, def, f.Usage)
	o.Concurrency[f.Name] = v
}

func (o *Options) addAcceptedFlag(f upstreamFlag, read bool) {
	o.accepted[f.Name] = true
	usage := f.Usage
	if !read {
		usage += " (accepted for compatibility; kcm does not act on it yet)"
	}
	flag := o.fs.VarPF(&acceptedValue{typ: f.Type, value: f.Default}, f.Name, f.Shorthand, usage)
	flag.DefValue = f.Default
	flag.NoOptDefVal = f.NoOptDefault
	if f.Deprecated {
		flag.Hidden = true
	}
}

func wordSepNormalize(_ *pflag.FlagSet, name string) pflag.NormalizedName {
	return pflag.NormalizedName(strings.ReplaceAll(name, "_", "-"))
}

// acceptedValue stores a flag kcm does not act on, whatever its type.
type acceptedValue struct {
	typ   string
	value string
}

func (v *acceptedValue) String() string     { return v.value }
func (v *acceptedValue) Set(s string) error { v.value = s; return nil }
func (v *acceptedValue) Type() string       { return v.typ }

// upstreamFlag describes one flag of upstream kube-controller-manager.
type upstreamFlag struct {
	Name, Shorthand, Type, Default, NoOptDefault, Usage string
	Deprecated                                          bool
}
