package controller

import (
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
	ca, _, err := certutil.GenerateSelfSignedCertKey("kcm-test", nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	registry := Registry()
	opts := options.New(setup.FlagsRead(registry)...)
	if err := opts.Parse([]string{"--leader-elect=false", "--secure-port=0"}); err != nil {
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
	checked := 0
	for _, d := range registry {
		if !d.Built() {
			continue
		}
		ctx := root.For(d)
		if err := d.Setup(ctx); err != nil {
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
