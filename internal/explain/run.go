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
	holderURLs                  holderURLs
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
	fs.StringVar(&o.kcmURL, "kcm-url", "", "The kcm leader's secure port (https://host:port), read for every view; by default found from the Lease kube-system/kube-controller-manager (with --controller-groups, per controller from its group's Lease) and read through the API server's pod proxy.")
	fs.StringVar(&o.kcmCAFile, "kcm-ca-file", "", "CA bundle that signed kcm's serving certificate, for --kcm-url.")
	holderURL := fs.StringArray("kcm-holder-url", nil, "HOLDER=URL: the secure port of the kcm whose Lease holder identity (hostname_uuid), or its host, is HOLDER, instead of its pod; repeatable, for kcm replicas that run outside pods (with --kcm-ca-file or --kcm-insecure-skip-tls-verify as for --kcm-url).")
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
	for _, h := range *holderURL {
		holder, url, ok := strings.Cut(h, "=")
		if !ok || holder == "" || (!strings.HasPrefix(url, "https://") && !strings.HasPrefix(url, "http://")) {
			return nil, fmt.Errorf("--kcm-holder-url %q: want HOLDER=https://host:port", h)
		}
		if o.holderURLs == nil {
			o.holderURLs = holderURLs{}
		}
		o.holderURLs[holder] = url
	}
	if o.kcmURL != "" && len(o.holderURLs) > 0 {
		return nil, errors.New("--kcm-url (one kcm for every view) and --kcm-holder-url exclude each other")
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

	if o.kcmURL != "" {
		// Asked for: a leader that does not answer is the command's error; one that answers
		// but refuses the views (no rights on /debug/controllers) is said in the report.
		leader := &Leader{URL: o.kcmURL}
		get, err := direct(cfg, o.kcmURL, o.kcmCAFile, o.kcmInsecureSkipTLSVerify)
		if err == nil {
			err = get.probe(ctx)
		}
		if err != nil {
			return Report{}, fmt.Errorf("kcm at %s cannot be reached: %w", o.kcmURL, err)
		}
		one := &reader{get: get}
		addViews(ctx, root, func(string) *reader { return one })
		if one.err != nil {
			leader.Error = oneLine("reading the controllers' views: " + one.err.Error())
		}
		r := buildReport(root)
		r.Leader = leader
		return r, nil
	}
	// Found from the Leases: the one Lease's leader, or per controller the leader of its
	// group. One that cannot be reached leaves its links the API's view, and says why.
	l := findLeaders(ctx, cs, root.controllers(), o.holderURLs)
	readers := map[*target]*reader{}
	leaders := map[*target]*Leader{}
	for _, t := range append([]*target{l.single}, l.groups...) {
		if t == nil {
			continue
		}
		leader := &Leader{Holder: t.holder, Leases: t.leases, Controllers: t.controllers}
		var src leaderSource
		err := t.err
		if err == nil {
			leader.URL, src, err = reach(ctx, cfg, cs, o, t)
		}
		if err != nil {
			leader.Error = oneLine(err.Error())
		}
		readers[t], leaders[t] = &reader{get: src}, leader
	}
	addViews(ctx, root, func(c string) *reader { return readers[l.of(c)] })
	r := buildReport(root)
	for t, rd := range readers {
		if rd.err != nil {
			leaders[t].Error = oneLine(rd.err.Error())
		}
	}
	if l.single != nil {
		r.Leader = leaders[l.single]
	}
	for _, t := range l.groups {
		r.Leaders = append(r.Leaders, *leaders[t])
	}
	return r, nil
}

// reach is the address of a target's kcm and a source of its views, once it answers.
func reach(ctx context.Context, cfg *rest.Config, cs kubernetes.Interface, o *options, t *target) (url string, get leaderSource, err error) {
	switch {
	case t.url != "":
		url = t.url
		get, err = direct(cfg, url, o.kcmCAFile, o.kcmInsecureSkipTLSVerify)
	case (o.kcmCAFile != "" || o.kcmInsecureSkipTLSVerify) && t.pod.Status.PodIP != "":
		// Trust in kcm's certificate given: its secure port itself (kubeadm's static pod is
		// on the host network), with the user's credentials, which the API server's proxy
		// would not pass on.
		url = "https://" + net.JoinHostPort(t.pod.Status.PodIP, strconv.Itoa(securePort))
		get, err = direct(cfg, url, o.kcmCAFile, o.kcmInsecureSkipTLSVerify)
	default:
		url = fmt.Sprintf("%s/api/v1/namespaces/%s/pods/https:%s:%d/proxy", strings.TrimSuffix(cfg.Host, "/"), leaderNamespace, t.pod.Name, securePort)
		get = proxied(cs, t.pod.Name)
	}
	if err == nil {
		err = get.probe(ctx)
	}
	if err != nil {
		return url, nil, err
	}
	return url, get, nil
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
