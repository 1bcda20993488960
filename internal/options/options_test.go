package options

import (
	"github.com/spf13/pflag"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every upstream flag must parse, with upstream's default, so that existing manifests keep
// working and an unset flag means what it means upstream.
func TestEveryUpstreamFlagIsAcceptedWithUpstreamDefault(t *testing.T) {
	o := New()
	for _, f := range upstreamFlags {
		if f.Name == "help" {
			continue
		}
		got := o.FlagSet().Lookup(f.Name)
		if got == nil {
			t.Errorf("--%s is not accepted", f.Name)
			continue
		}
		if got.DefValue != f.Default {
			t.Errorf("--%s defaults to %q, upstream to %q", f.Name, got.DefValue, f.Default)
		}
		if got.NoOptDefVal != f.NoOptDefault {
			t.Errorf("--%s: value when given bare is %q, upstream %q", f.Name, got.NoOptDefVal, f.NoOptDefault)
		}
	}
}

// kcm is a drop-in: beside kube-controller-manager's flags it has only cloud-controller-manager's,
// for the cloud loops it also runs, and its own (ownFlags), whose help says they are kcm's and
// whose defaults leave upstream's behaviour unchanged.
func TestNoFlagBeyondUpstreamButKcmsOwn(t *testing.T) {
	upstream := map[string]bool{}
	for _, f := range append(append([]upstreamFlag{}, upstreamFlags...), cloudFlags...) {
		upstream[f.Name] = true
	}
	own := map[string]bool{}
	for _, name := range OwnFlagNames() {
		if upstream[name] {
			t.Errorf("--%s is upstream's, not kcm's own", name)
		}
		own[name] = true
	}
	o := New()
	o.FlagSet().VisitAll(func(f *pflag.Flag) {
		switch {
		case own[f.Name]:
			if !strings.HasPrefix(f.Usage, "kcm's own flag, not upstream's: ") {
				t.Errorf("--%s is kcm's own, its help does not begin by saying so: %q", f.Name, f.Usage)
			}
			if f.DefValue != "" {
				t.Errorf("--%s defaults to %q: an unset flag of kcm's must change nothing", f.Name, f.DefValue)
			}
		case !upstream[f.Name]:
			t.Errorf("--%s is neither an upstream flag nor one of kcm's own", f.Name)
		}
	})
	for name := range own {
		if o.FlagSet().Lookup(name) == nil {
			t.Errorf("--%s is listed as kcm's own but not registered", name)
		}
	}
}

// The arguments kubeadm v1.37 writes into the kube-controller-manager static pod.
var kubeadmArgs = []string{
	"--allocate-node-cidrs=true",
	"--authentication-kubeconfig=/etc/kubernetes/controller-manager.conf",
	"--authorization-kubeconfig=/etc/kubernetes/controller-manager.conf",
	"--bind-address=127.0.0.1",
	"--client-ca-file=/etc/kubernetes/pki/ca.crt",
	"--cluster-cidr=10.244.0.0/16",
	"--cluster-name=kubernetes",
	"--cluster-signing-cert-file=/etc/kubernetes/pki/ca.crt",
	"--cluster-signing-key-file=/etc/kubernetes/pki/ca.key",
	"--controllers=*,bootstrapsigner,tokencleaner",
	"--kubeconfig=/etc/kubernetes/controller-manager.conf",
	"--leader-elect=true",
	"--requestheader-client-ca-file=/etc/kubernetes/pki/front-proxy-ca.crt",
	"--root-ca-file=/etc/kubernetes/pki/ca.crt",
	"--service-account-private-key-file=/etc/kubernetes/pki/sa.key",
	"--service-cluster-ip-range=10.96.0.0/12",
	"--use-service-account-credentials=true",
}

func TestKubeadmArguments(t *testing.T) {
	o := New()
	if err := o.Parse(kubeadmArgs); err != nil {
		t.Fatalf("kubeadm's arguments are rejected: %v", err)
	}
	if o.Kubeconfig != "/etc/kubernetes/controller-manager.conf" || o.RootCAFile != "/etc/kubernetes/pki/ca.crt" || o.SecureServing.BindAddress.String() != "127.0.0.1" {
		t.Errorf("flags kcm acts on were not parsed: %+v", o)
	}
	if got := strings.Join(o.Controllers, ","); got != "*,bootstrapsigner,tokencleaner" {
		t.Errorf("controllers = %q", got)
	}
	ignored := o.SetButIgnored(nil, nil)
	for _, want := range []string{"--allocate-node-cidrs", "--use-service-account-credentials", "--cluster-signing-cert-file"} {
		if !contains(ignored, want) {
			t.Errorf("%s not reported as ignored: %v", want, ignored)
		}
	}
	for _, acted := range []string{"--kubeconfig", "--root-ca-file", "--leader-elect", "--controllers", "--bind-address"} {
		if contains(ignored, acted) {
			t.Errorf("%s is acted on but reported as ignored", acted)
		}
	}
}

func TestParse(t *testing.T) {
	tests := []struct {
		name    string
		args    []string
		check   func(*Options) bool
		wantErr string
	}{
		{name: "defaults", check: func(o *Options) bool {
			le := o.LeaderElection
			return o.KubeAPIQPS == 20 && o.KubeAPIBurst == 30 && le.Enabled && le.LeaseDuration == 15*time.Second &&
				le.RenewDeadline == 10*time.Second && le.RetryPeriod == 2*time.Second &&
				le.ResourceName == "kube-controller-manager" && le.ResourceNamespace == "kube-system" &&
				o.SecureServing.BindPort == 10257 && o.Workers(ConcurrentDeploymentSyncs) == 5 && o.Workers(ConcurrentGCSyncs) == 20
		}},
		{name: "concurrency flag", args: []string{"--concurrent-deployment-syncs=7"}, check: func(o *Options) bool {
			return o.Workers(ConcurrentDeploymentSyncs) == 7
		}},
		{name: "underscores normalise to dashes, as upstream", args: []string{"--concurrent_rc_syncs=9"}, check: func(o *Options) bool {
			return o.Workers(ConcurrentRCSyncs) == 9
		}},
		{name: "bare bool flag", args: []string{"--profiling", "--leader-elect"}, check: func(o *Options) bool { return o.LeaderElection.Enabled }},
		{name: "-v", args: []string{"-v=4"}, check: func(o *Options) bool { return o.Logs.Verbosity == 4 }},
		{name: "qps as upstream: 0 is client-go's default, negative no limit", args: []string{"--kube-api-qps=-1", "--kube-api-burst=0"}, check: func(o *Options) bool {
			return o.KubeAPIQPS == -1 && o.KubeAPIBurst == 0
		}},
		{name: "negative burst", args: []string{"--kube-api-burst=-1"}, wantErr: "--kube-api-burst must be non-negative"},
		{name: "lock", args: []string{"--leader-elect-resource-lock=endpoints"}, wantErr: "only \"leases\""},
		{name: "lease timings", args: []string{"--leader-elect-lease-duration=5s"}, wantErr: "lease-duration"},
		{name: "lease timings do not matter without election", args: []string{"--leader-elect=false", "--leader-elect-lease-duration=1s"}, check: func(o *Options) bool { return !o.LeaderElection.Enabled }},
		{name: "negative workers", args: []string{"--concurrent-job-syncs=-1"}, wantErr: "--concurrent-job-syncs"},
		{name: "unknown flag", args: []string{"--no-such-flag"}, wantErr: "no-such-flag"},
		{name: "positional argument", args: []string{"extra"}, wantErr: "unexpected arguments"},
		{name: "controller groups off by default", check: func(o *Options) bool { return o.ControllerGroups == "" }},
		{name: "controller groups", args: []string{"--controller-groups=apps=deployment,replicaset;rest=ttl"}, check: func(o *Options) bool {
			return o.ControllerGroups == "apps=deployment,replicaset;rest=ttl"
		}},
		{name: "bad value of a flag kcm acts on", args: []string{"--kube-api-burst=many"}, wantErr: "kube-api-burst"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o := New()
			err := o.Parse(tt.args)
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want one mentioning %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !tt.check(o) {
				t.Errorf("unexpected options: %+v", o)
			}
		})
	}
}

func TestSetButIgnoredReportsFlagsOfControllersNotRunning(t *testing.T) {
	o := New()
	if err := o.Parse([]string{"--concurrent-deployment-syncs=3", "--concurrent-gc-syncs=3"}); err != nil {
		t.Fatal(err)
	}
	got := o.SetButIgnored(nil, map[string]bool{"concurrent-deployment-syncs": true})
	if strings.Join(got, ",") != "--concurrent-deployment-syncs" {
		t.Errorf("ignored = %v", got)
	}
}

func TestAcceptedFlagsReadByControllers(t *testing.T) {
	o := New()
	args := []string{"--node-monitor-grace-period=20s", "--node-eviction-rate=0.5", "--large-cluster-size-threshold=7", "--enable-garbage-collector=false", "--cluster-name=x"}
	if err := o.Parse(args); err != nil {
		t.Fatal(err)
	}
	if o.Duration(NodeMonitorGracePeriod) != 20*time.Second || o.Float32(NodeEvictionRate) != 0.5 ||
		o.Int32(LargeClusterSizeThreshold) != 7 || o.Bool(EnableGarbageCollector) {
		t.Errorf("typed reads of accepted flags are wrong")
	}
	if o.Duration(NodeStartupGracePeriod) != time.Minute {
		t.Errorf("an unset flag reads as upstream's default")
	}
	got := o.SetButIgnored(map[string]bool{"node-monitor-grace-period": true, "node-eviction-rate": true}, nil)
	if want := "--cluster-name,--enable-garbage-collector,--large-cluster-size-threshold"; strings.Join(got, ",") != want {
		t.Errorf("ignored = %v, want %s", got, want)
	}
	for _, bad := range []string{"--node-monitor-grace-period=soon", "--node-eviction-rate=fast", "--large-cluster-size-threshold=big", "--enable-garbage-collector=maybe"} {
		if err := New().Parse([]string{bad}); err == nil || !strings.Contains(err.Error(), "invalid value") {
			t.Errorf("%s: error = %v", bad, err)
		}
	}
}

// Every generated handle names a flag kcm registers, of the handle's type, so that a typed
// read can never meet a missing flag or a value of another type.
func TestHandlesMatchTheirFlags(t *testing.T) {
	o := New()
	types := map[string]string{}
	for _, h := range append(append([]Flag{}, handles...), cloudHandles...) {
		var want string
		switch h.(type) {
		case BoolFlag:
			want = "bool"
		case Int32Flag:
			want = "int32"
		case IntFlag:
			want = "int"
		case Float32Flag:
			want = "float32"
		case Float64Flag:
			want = "float64"
		case DurationFlag:
			want = "duration"
		case StringFlag:
			want = "string"
		}
		types[h.FlagName()] = want
	}
	if len(types) < 100 {
		t.Fatalf("only %d handles generated", len(types))
	}
	for name, want := range types {
		f := o.FlagSet().Lookup(name)
		if f == nil {
			t.Errorf("handle of --%s: no such flag", name)
			continue
		}
		if got := f.Value.Type(); got != want {
			t.Errorf("handle of --%s is a %s handle, the flag a %s", name, want, got)
		}
	}
	if o.Duration(NodeMonitorGracePeriod) != 50*time.Second || o.Workers(ConcurrentJobSyncs) != 5 || o.String(RootCAFile) != "" {
		t.Errorf("defaults read through handles are wrong")
	}
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func TestHelpSaysWhichAcceptedFlagsNothingReads(t *testing.T) {
	o := New("node-monitor-grace-period")
	if u := o.FlagSet().Lookup("node-monitor-grace-period").Usage; strings.Contains(u, "does not act on") {
		t.Errorf("a flag a controller reads: usage %q", u)
	}
	if u := o.FlagSet().Lookup("cluster-name").Usage; !strings.Contains(u, "kcm does not act on it yet") {
		t.Errorf("a flag nothing reads: usage %q", u)
	}
}

// `kcm --help` (pflag's listing of the flag set) says on each own flag's line that it is kcm's.
func TestHelpMarksKcmsOwnFlags(t *testing.T) {
	usages := New().FlagSet().FlagUsages()
	for _, name := range OwnFlagNames() {
		line := regexp.MustCompile(`(?m)^\s+--` + regexp.QuoteMeta(name) + `\s.*$`).FindString(usages)
		if !strings.Contains(line, "kcm's own flag, not upstream's") {
			t.Errorf("--help does not mark --%s as kcm's own: %q", name, line)
		}
	}
}
