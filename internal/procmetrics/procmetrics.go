// Package procmetrics registers the process-wide metric families of upstream's
// kube-controller-manager v1.37.1, in component-base's legacyregistry as upstream does:
// rest_client_* (client-go's request metrics), leader_election_* (client-go's elector, which
// controller-runtime's leader election runs), informer_* (client-go's informers, once named:
// NamedInformers), workqueue_* (component-base's for library queues, WorkqueueProvider for
// kcm's), kubernetes_build_info and running_managed_controllers.
//
// client-go takes each of its metric hooks (request metrics, queue, leader-election and
// informer providers) from the first package that sets it, during package initialisation.
// Upstream's main imports component-base's clientgo packages for that; kcm links the same
// packages here. controller-runtime's metrics package sets the same hooks to adapters into
// its own registry (other label sets); Go initialises packages in import-path order among
// those whose imports are ready, so component-base's (k8s.io/...) are set before
// controller-runtime's (sigs.k8s.io/...); kcm refuses to start if that ever changes
// (UpstreamHooks).
package procmetrics

import (
	"context"
	"fmt"
	"reflect"

	"k8s.io/client-go/tools/metrics"
	k8smetrics "k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	_ "k8s.io/component-base/metrics/prometheus/clientgo" // rest_client_*, leader_election_*, informer_*, library queues' workqueue_*
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	"k8s.io/component-base/version"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	kcmversion "github.com/kcm/kcm/internal/version"
)

// buildInfo is component-base's kubernetes_build_info (k8s.io/component-base/metrics/
// prometheus/version), declared here rather than imported: that package records
// component-base's version at initialisation, and kcm reports its own (git_version).
var buildInfo = k8smetrics.NewGaugeVec(
	&k8smetrics.GaugeOpts{
		Name:           "kubernetes_build_info",
		Help:           "A metric with a constant '1' value labeled by major, minor, git version, git commit, git tree state, build date, Go version, and compiler from which Kubernetes was built, and platform on which it is running.",
		StabilityLevel: k8smetrics.BETA,
	},
	[]string{"major", "minor", "git_version", "git_commit", "git_tree_state", "build_date", "go_version", "compiler", "platform"},
)

func init() {
	info := version.Get()
	info.GitVersion = kcmversion.Get()
	legacyregistry.MustRegister(buildInfo)
	buildInfo.WithLabelValues(info.Major, info.Minor, info.GitVersion, info.GitCommit, info.GitTreeState, info.BuildDate, info.GoVersion, info.Compiler, info.Platform).Set(1)
	// running_managed_controllers, registered at startup as upstream's Run does; a
	// controller reports itself through RunningController.
	controllersmetrics.Register()
	// component-base's restclient package, imported above, is initialised by now: the hooks
	// are its adapters unless another package set them earlier, which no later package can
	// undo. Fail at startup rather than serve other label sets.
	if err := UpstreamHooks(); err != nil {
		panic(err)
	}
}

// managerMetrics reports running_managed_controllers{manager="kube-controller-manager"}.
var managerMetrics = controllersmetrics.NewControllerManagerMetrics("kube-controller-manager")

// RunningController reports name in running_managed_controllers (1) while the Manager runs
// its leader-elected controllers, and 0 once they stop, as upstream's controllers that report
// it (nodeipam's RunWithMetrics) do for the time their Run lasts.
func RunningController(name string) manager.Runnable {
	return manager.RunnableFunc(func(ctx context.Context) error {
		ControllerStarted(name)
		<-ctx.Done()
		ControllerStopped(name)
		return nil
	})
}

// ControllerStarted sets running_managed_controllers for name to 1 (RunningController does it
// for the time the Manager runs its controllers).
func ControllerStarted(name string) { managerMetrics.ControllerStarted(name) }

// ControllerStopped sets running_managed_controllers for name to 0.
func ControllerStopped(name string) { managerMetrics.ControllerStopped(name) }

// UpstreamHooks reports an error unless client-go's request metrics are component-base's
// adapters, as upstream's are: another package setting them first (controller-runtime's, if
// the initialisation order changed) would label rest_client_requests_total otherwise and
// leave the rest of upstream's rest_client_* families empty.
func UpstreamHooks() error {
	const want = "k8s.io/component-base/metrics/prometheus/restclient"
	for name, hook := range map[string]any{
		"RequestResult":  metrics.RequestResult,
		"RequestLatency": metrics.RequestLatency,
	} {
		t := reflect.TypeOf(hook)
		if t.Kind() == reflect.Pointer {
			t = t.Elem()
		}
		if t.PkgPath() != want {
			return fmt.Errorf("client-go's %s metric is %s's, not %s's", name, t.PkgPath(), want)
		}
	}
	return nil
}
