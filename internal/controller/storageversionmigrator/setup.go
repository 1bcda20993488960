package storageversionmigrator

import (
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is storage-version-migrator-controller as kcm's registry knows it. As upstream's
// descriptor, it requires no gate: its constructor decides (Setup).
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"svm"},
	ClientName: ClientName,
	Flags:      []options.Flag{options.EnableGarbageCollector},
	Setup:      Setup,
}

const (
	// QPSMultiplier and BurstMultiplier are upstream's: a migration makes a request per
	// object, so the controller's connection gets 20 times --kube-api-qps and 100 times
	// --kube-api-burst.
	QPSMultiplier   = 20
	BurstMultiplier = 100
)

// Setup runs storage-version-migrator-controller as upstream's constructor: not at all unless
// its gate (GA, on in v1.37) and client-go's InformerResourceVersion are on; refused (an
// error, failing the start) without the garbage collector (--enable-garbage-collector=false),
// whose informers upstream's migration reads, or without client-go's InOrderInformers; its
// listing, patching, discovery and CRD clients on the scaled connection; the migrations'
// status written through its plain one.
func Setup(ctx *setup.Context) error {
	gcEnabled := ctx.Bool(options.EnableGarbageCollector)
	if !ctx.Enabled(features.StorageVersionMigrator) || !ctx.Enabled(features.InformerResourceVersion) {
		log.Log.WithName("controllers").WithValues("controller", ControllerName).
			Info("Not started: the StorageVersionMigrator and InformerResourceVersion feature gates are both required")
		return setup.ErrSkipped
	}
	if !gcEnabled {
		return errors.New("storage version migrator requires garbage collector")
	}
	if !ctx.Enabled(features.InOrderInformers) {
		return errors.New("storage version migrator requires the InOrderInformers feature gate to be enabled")
	}
	cl, err := ctx.Client()
	if err != nil {
		return err
	}
	cfg, err := ctx.ScaledRESTConfig(QPSMultiplier, BurstMultiplier)
	if err != nil {
		return err
	}
	crds, err := ctx.NewClient(cfg, false)
	if err != nil {
		return err
	}
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		return fmt.Errorf("failed to create metadata client for %s: %w", ClientName, err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		return fmt.Errorf("building discovery client for %s: %w", ClientName, err)
	}
	r := &Reconciler{Client: cl, CRDs: crds, Metadata: md, Discovery: dc, Mapper: ctx.Manager.GetRESTMapper()}
	setup.Apply(ctx, r)
	return r.SetupWithManager(ctx.Manager)
}

// newMigrationQueue, newResourceVersionQueue and newRunnerQueue name the work queues of the
// migration, resource-version and runner reconcilers as upstream names its own:
// "storage-version-migrator-controller" (pkg/controller/storageversionmigrator/
// storageversionmigrator.go:93, the controller's name) and "resource-version-controller" for
// both others (resourceversion.go:89 and migrationrunner.go:81: upstream's runner reuses the
// resource-version controller's name).
var (
	newMigrationQueue       = setup.Queue(ControllerName)
	newResourceVersionQueue = setup.Queue("resource-version-controller")
	newRunnerQueue          = setup.TypedQueue[metav1.GroupResource]("resource-version-controller")
)
