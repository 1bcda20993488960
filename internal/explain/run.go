package explain

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/go-logr/logr"
	"github.com/spf13/pflag"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/klog/v2"
)

// Run is `kcm explain args...`: it prints the report on stdout and returns the exit code;
// an error is one line on stderr ("kcm explain: ...") and ExitError.
func Run(args []string, stdout, stderr io.Writer) int {
	// client-go logs through klog (and warns through rest's handler): nothing of it on the
	// user's terminal, whose stderr carries the one error line.
	klog.SetLogger(logr.Discard())
	rest.SetDefaultWarningHandler(rest.NoWarnings{})
	o, err := parseFlags(args, stdout)
	if errors.Is(err, pflag.ErrHelp) {
		return ExitConverged
	}
	if err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), o.timeout)
		defer cancel()
		var r Report
		if r, err = explain(ctx, o); err == nil {
			if err = write(stdout, r, o.output, time.Now()); err == nil {
				return exitCode(r.Status)
			}
		}
	}
	fmt.Fprintln(stderr, "kcm explain: "+oneLine(err.Error()))
	return ExitError
}

// options are the command's flags.
type options struct {
	kind, name                  string
	kubeconfig, context         string
	namespace                   string
	output                      string
	kcmURL, kcmCAFile           string
	kcmInsecureSkipTLSVerify    bool
	timeout                     time.Duration
	namespaceGiven, outputGiven bool
}

const usage = `Usage: kcm explain TYPE/NAME [-n NAMESPACE] [flags]
       kubectl kcm explain TYPE/NAME [-n NAMESPACE] [flags]

Says whether an object has converged and why not: the chain of controllers responsible,
each link's desired and actual state, the blocking causes, and each controller's own view
when the kcm leader is reachable. Exit code: 0 converged (Current), 1 not, 2 an error.

Flags:
`

func parseFlags(args []string, stdout io.Writer) (*options, error) {
	o := &options{}
	fs := pflag.NewFlagSet("kcm explain", pflag.ContinueOnError)
	fs.SetOutput(io.Discard)
	fs.StringVar(&o.kubeconfig, "kubeconfig", "", "Path to the kubeconfig file (default: $KUBECONFIG, else ~/.kube/config).")
	fs.StringVar(&o.context, "context", "", "The kubeconfig context to use.")
	fs.StringVarP(&o.namespace, "namespace", "n", "", "The object's namespace (default: the context's namespace, else \"default\").")
	fs.StringVarP(&o.output, "output", "o", OutputTree, "Output format: tree, json or yaml.")
	fs.StringVar(&o.kcmURL, "kcm-url", "", "The kcm leader's secure port (https://host:port); by default found from the Lease kube-system/kube-controller-manager and read through the API server's pod proxy.")
	fs.StringVar(&o.kcmCAFile, "kcm-ca-file", "", "CA bundle that signed kcm's serving certificate, for --kcm-url.")
	fs.BoolVar(&o.kcmInsecureSkipTLSVerify, "kcm-insecure-skip-tls-verify", false, "Do not verify kcm's serving certificate (usually self-signed), for --kcm-url.")
	fs.DurationVar(&o.timeout, "timeout", 30*time.Second, "How long the whole command may take.")
	help := fs.BoolP("help", "h", false, "Show this help.")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if *help {
		fmt.Fprint(stdout, usage+fs.FlagUsages())
		return nil, pflag.ErrHelp
	}
	o.namespaceGiven = fs.Changed("namespace")
	switch o.output {
	case OutputTree, OutputJSON, OutputYAML:
	default:
		return nil, fmt.Errorf("unknown output format %q: want tree, json or yaml", o.output)
	}
	if o.kcmCAFile != "" && o.kcmInsecureSkipTLSVerify {
		return nil, errors.New("--kcm-ca-file and --kcm-insecure-skip-tls-verify exclude each other")
	}
	if o.kcmURL != "" && !strings.HasPrefix(o.kcmURL, "https://") && !strings.HasPrefix(o.kcmURL, "http://") {
		return nil, fmt.Errorf("--kcm-url %q: want https://host:port", o.kcmURL)
	}
	rest := fs.Args()
	switch {
	case len(rest) == 1 && strings.Contains(rest[0], "/"):
		o.kind, o.name, _ = strings.Cut(rest[0], "/")
	case len(rest) == 2 && !strings.Contains(rest[0], "/"):
		o.kind, o.name = rest[0], rest[1]
	default:
		return nil, fmt.Errorf("want one object, TYPE/NAME (e.g. deployment/web), got %q", strings.Join(rest, " "))
	}
	if o.kind == "" || o.name == "" || strings.Contains(o.name, "/") {
		return nil, fmt.Errorf("want TYPE/NAME (e.g. deployment/web), got %q", strings.Join(rest, " "))
	}
	return o, nil
}

// explain observes the object's chain, reads the controllers' views and judges.
func explain(ctx context.Context, o *options) (Report, error) {
	rules := clientcmd.NewDefaultClientConfigLoadingRules()
	rules.ExplicitPath = o.kubeconfig
	cc := clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, &clientcmd.ConfigOverrides{CurrentContext: o.context})
	cfg, err := cc.ClientConfig()
	if err != nil {
		return Report{}, fmt.Errorf("loading the kubeconfig: %w", err)
	}
	cfg.UserAgent = "kcm-explain"
	// A Terminating namespace's walk lists every namespaced resource: kubectl's client
	// limits rather than client-go's 5 per second, which made it take 10 seconds.
	cfg.QPS, cfg.Burst = 50, 300
	ns := o.namespace
	if !o.namespaceGiven {
		if ns, _, err = cc.Namespace(); err != nil || ns == "" {
			ns = "default"
		}
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return Report{}, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return Report{}, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return Report{}, err
	}
	mapping, err := resolveType(dc, o.kind)
	if err != nil {
		return Report{}, err
	}
	obj, err := getObject(ctx, dyn, mapping, ns, o.name)
	if err != nil {
		return Report{}, err
	}
	if obj.GetKind() == "" {
		obj.SetGroupVersionKind(mapping.GroupVersionKind)
	}
	ob := newObserver(dyn, dc)
	root := ob.walk(ctx, obj)

	leader := &Leader{}
	if o.kcmURL != "" {
		// Asked for: a leader that does not answer is the command's error; one that answers
		// but refuses the views (no rights on /debug/controllers) is said in the report.
		leader.URL = o.kcmURL
		get, err := direct(cfg, o.kcmURL, o.kcmCAFile, o.kcmInsecureSkipTLSVerify)
		if err == nil {
			err = get.probe(ctx)
		}
		if err != nil {
			return Report{}, fmt.Errorf("kcm at %s cannot be reached: %w", o.kcmURL, err)
		}
		if err := addViews(ctx, root, get); err != nil {
			leader.Error = oneLine("reading the controllers' views: " + err.Error())
		}
	} else {
		// Found from the Lease: without it the tree is the API's view, and says why.
		holder, pod, err := findLeader(ctx, cs)
		leader.Holder = holder
		if err == nil {
			var get leaderSource
			if (o.kcmCAFile != "" || o.kcmInsecureSkipTLSVerify) && pod.Status.PodIP != "" {
				// Trust in kcm's certificate given: its secure port itself (kubeadm's static
				// pod is on the host network), with the user's credentials, which the API
				// server's proxy would not pass on.
				leader.URL = "https://" + net.JoinHostPort(pod.Status.PodIP, strconv.Itoa(securePort))
				get, err = direct(cfg, leader.URL, o.kcmCAFile, o.kcmInsecureSkipTLSVerify)
			} else {
				leader.URL = fmt.Sprintf("%s/api/v1/namespaces/%s/pods/https:%s:%d/proxy", strings.TrimSuffix(cfg.Host, "/"), leaderNamespace, pod.Name, securePort)
				get = proxied(cs, pod.Name)
			}
			if err == nil {
				if err = get.probe(ctx); err == nil {
					err = addViews(ctx, root, get)
				}
			}
		}
		if err != nil {
			leader.Error = oneLine(err.Error())
		}
	}
	r := buildReport(root)
	r.Leader = leader
	return r, nil
}

// resolveType resolves TYPE through discovery as kubectl does: plural, singular, short name,
// kind, optionally with its group (deployment.apps) or version (deployments.v1.apps).
func resolveType(dc discovery.DiscoveryInterface, kind string) (*meta.RESTMapping, error) {
	mapper := restmapper.NewShortcutExpander(restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc)), dc, nil)
	var gvr schema.GroupVersionResource
	full, gr := schema.ParseResourceArg(strings.ToLower(kind))
	var err error
	if full != nil {
		gvr, err = mapper.ResourceFor(*full)
	}
	if full == nil || err != nil {
		gvr, err = mapper.ResourceFor(gr.WithVersion(""))
	}
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, fmt.Errorf("the server doesn't have a resource type %q", kind)
		}
		return nil, fmt.Errorf("resolving the type %q: %w", kind, err)
	}
	gvk, err := mapper.KindFor(gvr)
	if err != nil {
		return nil, fmt.Errorf("resolving the type %q: %w", kind, err)
	}
	return mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
}
