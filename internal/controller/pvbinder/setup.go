package pvbinder

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"

	"github.com/kcm/kcm/internal/index"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is persistentvolume-binder-controller as kcm's registry knows it.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"persistentvolume-binder"},
	ClientName: ClientName,
	Flags: []options.Flag{options.PvclaimbinderSyncPeriod, options.EnableDynamicProvisioning,
		options.PVRecyclerPodTemplateFilepathNfs, options.PVRecyclerMinimumTimeoutNfs, options.PVRecyclerIncrementTimeoutNfs,
		options.PVRecyclerPodTemplateFilepathHostpath, options.PVRecyclerMinimumTimeoutHostpath, options.PVRecyclerTimeoutIncrementHostpath},
	// Pods by claim name, for the WaitForPodScheduled Event and the pods that keep a volume
	// from being recycled; unbound claims by class, for the volume that may bind them.
	Indexes:     []index.Index{index.PodsByClaim, claimsWaitingByClass},
	Convergence: &Convergence,
	Setup:       Setup,
}

// Setup runs persistentvolume-binder-controller with --pvclaimbinder-sync-period,
// --enable-dynamic-provisioning and the --pv-recycler-* flags. A recycler pod template file
// that cannot be read, decoded, or has no volume fails the start, as upstream's constructor.
func Setup(ctx *setup.Context) error {
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	recyclers, err := recyclersFrom(ctx)
	if err != nil {
		return fmt.Errorf("failed to probe volume plugins when starting persistentvolume controller: %w", err)
	}
	cfg, err := ctx.RESTConfig()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	b := &Binder{
		Client:              cl,
		APIReader:           reader,
		Recorder:            ctx.Recorder(EventSource),
		SyncPeriod:          ctx.Duration(options.PvclaimbinderSyncPeriod),
		DynamicProvisioning: ctx.Bool(options.EnableDynamicProvisioning),
		Recyclers:           recyclers,
		WatchRecyclerEvents: func(c context.Context, namespace, pod string) (watch.Interface, error) {
			return cs.CoreV1().Events(namespace).Watch(c, metav1.ListOptions{
				FieldSelector: fields.OneTermEqualSelector("involvedObject.name", pod).String(),
			})
		},
	}
	setup.Apply(ctx, b)
	return b.SetupWithManager(ctx.Manager)
}

// recyclersFrom configures the NFS and hostPath recyclers as upstream's plugin probe does.
func recyclersFrom(ctx *setup.Context) (*Recyclers, error) {
	hostPath, err := LoadRecyclerPodTemplate(ctx.String(options.PVRecyclerPodTemplateFilepathHostpath))
	if err != nil {
		return nil, err
	}
	nfs, err := LoadRecyclerPodTemplate(ctx.String(options.PVRecyclerPodTemplateFilepathNfs))
	if err != nil {
		return nil, err
	}
	return &Recyclers{
		HostPath: Recycler{Template: hostPath,
			MinimumTimeout:   int64(ctx.Int32(options.PVRecyclerMinimumTimeoutHostpath)),
			TimeoutIncrement: int64(ctx.Int32(options.PVRecyclerTimeoutIncrementHostpath))},
		NFS: Recycler{Template: nfs,
			MinimumTimeout:   int64(ctx.Int32(options.PVRecyclerMinimumTimeoutNfs)),
			TimeoutIncrement: int64(ctx.Int32(options.PVRecyclerIncrementTimeoutNfs))},
	}, nil
}

// newClaimQueue names the work queue of ControllerName+"-claims" as upstream names its own:
// pkg/controller/volume/persistentvolume/pv_controller_base.go:93.
var newClaimQueue = setup.Queue("claims")

// newVolumeQueue names the work queue of ControllerName+"-volumes" as upstream names its own:
// pkg/controller/volume/persistentvolume/pv_controller_base.go:97.
var newVolumeQueue = setup.Queue("volumes")
