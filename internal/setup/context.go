package setup

import (
	"fmt"
	"os"
	"path"
	"runtime"
	"sort"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apiserver/pkg/authentication/serviceaccount"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/controller-manager/pkg/clientbuilder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kcmmanager "github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/track"
	"github.com/kcm/kcm/internal/version"
)

// Context is what one controller's Setup is given: the shared manager (cache, scheme, REST
// mapper), the command line, the API server's configuration, and the controller's own
// descriptor. Flags are read through it, typed, so that what a Setup reads can be checked
// against what its descriptor declares.
type Context struct {
	Manager manager.Manager
	Options *options.Options
	// Config is the base client configuration; a controller's own connection comes from
	// RESTConfig.
	Config *rest.Config
	// Controller is the descriptor of the controller being set up.
	Controller Descriptor

	overrides *[]Override
	read      map[string]bool
	// gatesRead are the feature gates any Setup has read through Enabled.
	gatesRead *gateReads
	// credentials gives each controller its own ServiceAccount's credentials with
	// --use-service-account-credentials; nil: every controller uses Config's identity.
	credentials clientbuilder.ControllerClientBuilder
	conn        *rest.Config
}

// NewContext returns the context the registry's controllers are set up from; For gives
// each controller its own. overrides adjust Reconcilers before they are registered (tests).
//
// With --use-service-account-credentials each controller acts as its own ServiceAccount in
// kube-system (its ClientName), as upstream: k8s.io/controller-manager's dynamic client
// builder creates the ServiceAccount if missing with cfg's identity, and gets and refreshes
// its tokens through the TokenRequest API. The shared cache and leader election keep cfg's
// identity, as upstream's informers and leader election do; Events are written with the
// controller's own (Recorder).
func NewContext(mgr manager.Manager, opts *options.Options, cfg *rest.Config, overrides ...Override) (*Context, error) {
	c := &Context{Manager: mgr, Options: opts, Config: cfg, overrides: &overrides, gatesRead: &gateReads{}}
	if opts.Bool(options.UseServiceAccountCredentials) {
		core, err := corev1client.NewForConfig(cfg)
		if err != nil {
			return nil, fmt.Errorf("building the client that creates controllers' service accounts: %w", err)
		}
		c.credentials = clientbuilder.NewDynamicClientBuilder(rest.AnonymousClientConfig(cfg), core, metav1.NamespaceSystem)
	}
	return c, nil
}

// For returns the context one controller's Setup gets.
func (c *Context) For(d Descriptor) *Context {
	return &Context{Manager: c.Manager, Options: c.Options, Config: c.Config, Controller: d,
		overrides: c.overrides, read: map[string]bool{}, credentials: c.credentials, gatesRead: c.gatesRead}
}

// WithManager returns the context with another Manager, sharing everything else (overrides,
// credentials, the feature gates read): a controller group's term (internal/groups) sets its
// controllers up again against a Manager of its own.
func (c *Context) WithManager(m manager.Manager) *Context {
	out := *c
	out.Manager = m
	return &out
}

// FlagsRead lists, sorted, the flags this controller's Setup has read through the context.
func (c *Context) FlagsRead() []string {
	names := make([]string, 0, len(c.read))
	for n := range c.read {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

func (c *Context) mark(f options.Flag) {
	if c.read != nil {
		c.read[f.FlagName()] = true
	}
}

// Workers is the worker count a --concurrent-*-syncs flag sets.
func (c *Context) Workers(f options.Int32Flag) int { c.mark(f); return c.Options.Workers(f) }

// Duration reads a duration flag.
func (c *Context) Duration(f options.DurationFlag) time.Duration {
	c.mark(f)
	return c.Options.Duration(f)
}

// Float32 reads a float32 flag.
func (c *Context) Float32(f options.Float32Flag) float32 { c.mark(f); return c.Options.Float32(f) }

// Float64 reads a float64 flag.
func (c *Context) Float64(f options.Float64Flag) float64 { c.mark(f); return c.Options.Float64(f) }

// Int32 reads an int32 flag.
func (c *Context) Int32(f options.Int32Flag) int32 { c.mark(f); return c.Options.Int32(f) }

// Bool reads a bool flag.
func (c *Context) Bool(f options.BoolFlag) bool { c.mark(f); return c.Options.Bool(f) }

// String reads a string flag.
func (c *Context) String(f options.StringFlag) string { c.mark(f); return c.Options.String(f) }

// RESTConfig is the controller's own connection: its own identity with
// --use-service-account-credentials, its client name in the User-Agent and a token bucket
// of its own at --kube-api-qps/--kube-api-burst, as upstream gives every controller its own
// clientset, so that one busy controller cannot starve another. Every client built from one
// returned configuration shares its bucket.
func (c *Context) RESTConfig() (*rest.Config, error) { return c.ScaledRESTConfig(1, 1) }

// ScaledRESTConfig is RESTConfig with the QPS and burst multiplied, for the controllers
// upstream gives a larger budget (namespace-controller, garbage-collector-controller).
func (c *Context) ScaledRESTConfig(qps, burst float32) (*rest.Config, error) {
	cfg := rest.CopyConfig(c.Config)
	if c.ownCredentials() {
		var err error
		if cfg, err = c.credentials.Config(c.Controller.ClientName); err != nil {
			return nil, fmt.Errorf("credentials of service account %s/%s: %w", metav1.NamespaceSystem, c.Controller.ClientName, err)
		}
	}
	kcmmanager.SetRateLimit(cfg, c.Options.KubeAPIQPS*qps, int(float32(c.Options.KubeAPIBurst)*burst))
	cfg.UserAgent = UserAgent(c.userAgentName())
	return cfg, nil
}

// ownCredentials reports whether the controller acts as its own ServiceAccount.
func (c *Context) ownCredentials() bool {
	return c.credentials != nil && !c.Controller.RootCredentials
}

// userAgentName ends the controller's User-Agent. Upstream's client builder appends the
// ServiceAccount's username when the controller uses its own credentials
// ("system:serviceaccount:kube-system:replicaset-controller") and the bare client name
// otherwise, and audit logs and API priority rules see the same here.
func (c *Context) userAgentName() string {
	if c.ownCredentials() {
		return serviceaccount.MakeUsername(metav1.NamespaceSystem, c.Controller.ClientName)
	}
	return c.Controller.ClientName
}

// Client returns the controller's client: reads come from the manager's shared cache,
// writes go through the controller's own connection (RESTConfig).
func (c *Context) Client() (client.Client, error) {
	cfg, err := c.connection()
	if err != nil {
		return nil, err
	}
	return c.NewClient(cfg, true)
}

// APIReader returns the controller's live reads: through its own connection and identity,
// sharing Client's token bucket, as upstream's controllers read live with their own
// clientset. (The manager's own reader has kcm's identity, which may list and watch
// everything but get only a few kinds.)
func (c *Context) APIReader() (client.Reader, error) {
	cfg, err := c.connection()
	if err != nil {
		return nil, err
	}
	return c.NewClient(cfg, false)
}

// Clients returns Client and APIReader together, the pair most controllers take.
func (c *Context) Clients() (client.Client, client.Reader, error) {
	cl, err := c.Client()
	if err != nil {
		return nil, nil, err
	}
	reader, err := c.APIReader()
	if err != nil {
		return nil, nil, err
	}
	return cl, reader, nil
}

// Clientset returns a client-go clientset on the controller's own connection, sharing
// Client's token bucket: for the published helpers that write through client-go
// (k8s.io/endpointslice's reconciler, k8s.io/cloud-provider's node helpers, component-helpers'
// SetNodeCondition).
func (c *Context) Clientset() (kubernetes.Interface, error) {
	cfg, err := c.connection()
	if err != nil {
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, fmt.Errorf("building clientset for %s: %w", c.Controller.ClientName, err)
	}
	return cs, nil
}

// connection is the controller's RESTConfig, built once so that its clients share one
// token bucket.
func (c *Context) connection() (*rest.Config, error) {
	if c.conn == nil {
		cfg, err := c.RESTConfig()
		if err != nil {
			return nil, err
		}
		c.conn = cfg
	}
	return c.conn, nil
}

// NewClient builds a client on cfg (from RESTConfig or ScaledRESTConfig); cached reads come
// from the shared cache, uncached ones go to the API server.
func (c *Context) NewClient(cfg *rest.Config, cached bool) (client.Client, error) {
	name := c.Controller.ClientName
	httpClient, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("building HTTP client for %s: %w", name, err)
	}
	o := client.Options{HTTPClient: httpClient, Scheme: c.Manager.GetScheme(), Mapper: c.Manager.GetRESTMapper()}
	if cached {
		o.Cache = &client.CacheOptions{Reader: c.Manager.GetCache()}
	}
	cl, err := client.New(cfg, o)
	if err != nil {
		return nil, fmt.Errorf("building client for %s: %w", name, err)
	}
	// A sync that finds its own object gone drops the object's view (internal/track).
	return track.Client(cl), nil
}

// RootCA is the CA bundle published as kube-root-ca.crt and as tokens' ca.crt:
// --root-ca-file, else the CA the kubeconfig (or in-cluster configuration) trusts, as
// upstream. Without either (an insecure-skip-tls-verify kubeconfig) it is empty, as
// upstream's (the kubeconfig's CAData): the controllers taking it run with what there is.
// The controller reading it declares options.RootCAFile.
func (c *Context) RootCA() ([]byte, error) {
	file := c.String(options.RootCAFile)
	data := c.Config.CAData
	if file == "" && len(data) == 0 {
		file = c.Config.CAFile
	}
	if file != "" {
		var err error
		if data, err = os.ReadFile(file); err != nil {
			return nil, fmt.Errorf("reading root CA: %w", err)
		}
	}
	if len(data) == 0 && file == "" {
		return nil, nil
	}
	if _, err := certutil.ParseCertsPEM(data); err != nil {
		return nil, fmt.Errorf("parsing root CA %s: %w", file, err)
	}
	return data, nil
}

// UserAgent is upstream's User-Agent with the client name appended, e.g.
// "kcm/v1.37.1 (linux/amd64) kubernetes/kcm/root-ca-cert-publisher".
func UserAgent(clientName string) string {
	return fmt.Sprintf("%s/%s (%s/%s) kubernetes/kcm/%s",
		path.Base(os.Args[0]), version.Get(), runtime.GOOS, runtime.GOARCH, clientName)
}
