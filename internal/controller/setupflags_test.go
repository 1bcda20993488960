package controller

import (
	"errors"
	"net/http"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/meta/testrestmapper"
	"k8s.io/client-go/rest"
	certutil "k8s.io/client-go/util/cert"
	"k8s.io/utils/ptr"
	ctrlmanager "sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Every built controller's Setup reads exactly the flags its descriptor declares: a flag read
// but not declared would not be reported as ignored when the controller is off, and a flag
// declared but never read would be claimed as acted on. Setups run against a manager that is
// never started, so no API server is needed.
func TestSetupReadsExactlyTheDeclaredFlags(t *testing.T) {
	registry := Registry()
	root := unstartedContext(t, registry)
	checked := 0
	for _, d := range registry {
		if !d.Built() {
			continue
		}
		ctx := root.For(d)
		if err := d.Setup(ctx); err != nil && !errors.Is(err, setup.ErrSkipped) {
			t.Errorf("%s: setup: %v", d.Name, err)
			continue
		}
		declared := d.FlagNames()
		slices.Sort(declared)
		if read := ctx.FlagsRead(); !slices.Equal(read, declared) {
			t.Errorf("%s: Setup reads %s, its descriptor declares %s", d.Name, strings.Join(read, ","), strings.Join(declared, ","))
		}
		checked++
	}
	if checked < 27 {
		t.Errorf("only %d built controllers checked", checked)
	}
}

// unstartedContext is the root set-up context of a manager that is never started, with
// upstream's flags and args, against no API server (a static REST mapper).
func unstartedContext(t *testing.T, registry []setup.Descriptor, args ...string) *setup.Context {
	t.Helper()
	ca, _, err := certutil.GenerateSelfSignedCertKey("kcm-test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := options.New(setup.FlagsRead(registry)...)
	if err := opts.Parse(append([]string{"--leader-elect=false", "--secure-port=0"}, args...)); err != nil {
		t.Fatal(err)
	}
	cfg := manager.RESTConfig(&rest.Config{Host: "https://127.0.0.1:1", TLSClientConfig: rest.TLSClientConfig{CAData: ca}}, opts)
	mgr, err := manager.New(cfg, opts, setup.CacheRestrictions(registry), func(o *ctrlmanager.Options) {
		o.Controller.SkipNameValidation = ptr.To(true)
		o.MapperProvider = func(*rest.Config, *http.Client) (meta.RESTMapper, error) {
			return testrestmapper.TestOnlyStaticRESTMapper(manager.Scheme()), nil
		}
	})
	if err != nil {
		t.Fatal(err)
	}
	root, err := setup.NewContext(mgr, opts, cfg)
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// A controller whose Setup decides not to run, as upstream's constructor does (node-ipam
// without --allocate-node-cidrs, the garbage collector with --enable-garbage-collector=false),
// is not named among those set up, so /healthz gets no check for it; ttl-controller, set up
// beside them, is the witness.
func TestSkippedControllersAreNotSetUp(t *testing.T) {
	registry := Registry()
	root := unstartedContext(t, registry, "--enable-garbage-collector=false")
	sel, err := setup.Select(registry, []string{"node-ipam-controller", "garbage-collector-controller", "ttl-controller"})
	if err != nil {
		t.Fatal(err)
	}
	started, err := setup.SetupEnabled(root, sel)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(started, []string{"ttl-controller"}) {
		t.Errorf("set up %v, want only ttl-controller", started)
	}
}
