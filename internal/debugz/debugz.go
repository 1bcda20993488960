// Package debugz is the content of upstream kube-controller-manager's debug and status pages,
// mounted on the secure port's mux behind its authentication and authorization:
//
//   - /configz: the effective configuration in upstream's shape,
//     kubecontrollermanager.config.k8s.io/v1alpha1 KubeControllerManagerConfiguration, built
//     from kcm's parsed command line (configz.go; the flag → field table is generated from
//     upstream's own option code by hack/tools/k8s/cmd/upstream-configz);
//   - /metrics/slis: component-base's healthcheck SLIs, which k8s.io/apiserver's healthz
//     handler behind /healthz records;
//   - /flagz (gate ComponentFlagz) and /statusz (gate ComponentStatusz): k8s.io/apiserver's
//     pages, reading kcm's flag set and naming kcm's version.
//
// RegisterConfigz sets /configz's content (k8s.io/controller-manager/app.NewBaseHandler serves
// component-base's configz handler); Install mounts the other pages in the order upstream's
// Run does, right after NewBaseHandler.
package debugz

import (
	"fmt"

	"k8s.io/apimachinery/pkg/util/version"
	"k8s.io/apiserver/pkg/server/flagz"
	"k8s.io/apiserver/pkg/server/mux"
	"k8s.io/apiserver/pkg/server/statusz"
	"k8s.io/component-base/compatibility"
	"k8s.io/component-base/configz"
	"k8s.io/component-base/metrics/prometheus/slis"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
	kcmversion "github.com/kcm/kcm/internal/version"
)

// componentName is how upstream's /flagz and /statusz name the component.
const componentName = "kube-controller-manager"

// Install mounts /metrics/slis, /flagz and /statusz on m, as upstream's Run does right after
// NewBaseHandler: /statusz lists the paths m lists at that moment, so Install comes after the
// base handler's pages and before any other. opts is the parsed command line. What /configz
// serves is set apart, by RegisterConfigz, as upstream sets it before serving.
func Install(m *mux.PathRecorderMux, opts *options.Options) {
	slis.SLIMetricsWithReset{}.Install(m)
	if opts.FeatureGates.Enabled(features.ComponentFlagz) {
		flagz.Install(m, componentName, FlagReader(opts))
	}
	if opts.FeatureGates.Enabled(features.ComponentStatusz) {
		statusz.Install(m, componentName, statusz.NewRegistry(
			binaryVersion{opts.FeatureGates.EffectiveVersion(), kcmversion.Get()},
			statusz.WithListedPaths(m.ListedPaths()),
		))
	}
}

// RegisterConfigz sets what /configz serves (under upstream's name,
// kubecontrollermanager.config.k8s.io) to the configuration opts stand for; registry gives
// the controllers' aliases, which /configz replaces by canonical names. It replaces an
// earlier registration: component-base's configz registry is process-wide, and tests start
// several managers in one process.
func RegisterConfigz(opts *options.Options, registry []setup.Descriptor) error {
	cfg, err := Configuration(opts.FlagSet(), Aliases(registry))
	if err != nil {
		return fmt.Errorf("/configz: %w", err)
	}
	configz.Delete(ConfigzName)
	c, err := configz.New(ConfigzName)
	if err != nil {
		return fmt.Errorf("/configz: %w", err)
	}
	return c.Set(cfg)
}

// Aliases maps every alias of registry's controllers to the controller's name.
func Aliases(registry []setup.Descriptor) map[string]string {
	aliases := map[string]string{}
	for _, d := range registry {
		for _, a := range d.Aliases {
			aliases[a] = d.Name
		}
	}
	return aliases
}

// binaryVersion is the effective version of kcm's feature gates (emulation version, ...)
// whose binary version is kcm's own build, so that /statusz names kcm's version rather than
// the upstream release kcm is compatible with. A build version that is not a version (a
// development build without one) leaves the upstream release.
type binaryVersion struct {
	compatibility.EffectiveVersion
	kcm string
}

func (v binaryVersion) BinaryVersion() *version.Version {
	if parsed, err := version.Parse(v.kcm); err == nil {
		return parsed
	}
	return v.EffectiveVersion.BinaryVersion()
}
