package nodeipam

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/procmetrics"
	"github.com/kcm/kcm/internal/setup"
)

// Descriptor is node-ipam-controller as kcm's registry knows it: on by default, doing
// nothing unless --allocate-node-cidrs is set, and acting as node-controller, as upstream.
var Descriptor = setup.Descriptor{
	Name:       ControllerName,
	Aliases:    []string{"nodeipam"},
	ClientName: "node-controller",
	Flags: []options.Flag{
		options.AllocateNodeCIDRs, options.CIDRAllocatorType, options.ClusterCIDR,
		options.ServiceClusterIPRange, options.NodeCIDRMaskSize, options.NodeCIDRMaskSizeIpv4,
		options.NodeCIDRMaskSizeIpv6,
	},
	Setup: Setup,
}

// Upstream lists the nodes at start every 10s for up to 10 minutes while the API server is
// not up yet.
const (
	listInterval = 10 * time.Second
	listTimeout  = 10 * time.Minute
)

// eventSource is upstream's Event source of the range allocator.
const eventSource = "cidrAllocator"

// Setup checks the flags as upstream does and, with --allocate-node-cidrs, runs the range
// allocator. As upstream, the nodes are listed at start and their CIDRs marked: a CIDR that
// cannot be (outside the cluster CIDRs, unparsable) stops kcm rather than risks handing it
// out to another node.
func Setup(ctx *setup.Context) error {
	f := flags{
		allocatorType: ctx.String(options.CIDRAllocatorType),
		clusterCIDR:   ctx.String(options.ClusterCIDR),
		serviceRange:  ctx.String(options.ServiceClusterIPRange),
		maskSize:      ctx.Int32(options.NodeCIDRMaskSize),
		maskSizeIPv4:  ctx.Int32(options.NodeCIDRMaskSizeIpv4),
		maskSizeIPv6:  ctx.Int32(options.NodeCIDRMaskSizeIpv6),
	}
	logger := log.Log.WithName(ControllerName)
	if !ctx.Bool(options.AllocateNodeCIDRs) {
		// Upstream's constructor returns no controller: it is skipped.
		logger.Info("Warning: skipping controller", "controller", ControllerName)
		return setup.SkippedFor("--allocate-node-cidrs=true and --cluster-cidr")
	}
	cfg, err := parseFlags(f, logger)
	if err != nil {
		return err
	}
	cl, reader, err := ctx.Clients()
	if err != nil {
		return err
	}
	if err := checkExistingNodes(reader, cfg, logger); err != nil {
		return err
	}
	r := &Reconciler{Client: cl, Recorder: ctx.Recorder(eventSource), Config: cfg}
	setup.Apply(ctx, r)
	if err := r.SetupWithManager(ctx.Manager); err != nil {
		return err
	}
	// running_managed_controllers{name="nodeipam"}, as upstream's RunWithMetrics reports it.
	return ctx.Manager.Add(procmetrics.RunningController("nodeipam"))
}

// checkExistingNodes marks every node's CIDRs in an allocator of its own: the Reconciler
// builds its state from the cache once that has synced, this is upstream's check at start.
func checkExistingNodes(reader client.Reader, cfg config, logger logr.Logger) error {
	alloc, err := newAllocator(cfg, logr.Discard())
	if err != nil {
		return err
	}
	nodes := &corev1.NodeList{}
	if err := wait.PollUntilContextTimeout(context.Background(), listInterval, listTimeout, true, func(ctx context.Context) (bool, error) {
		if err := reader.List(ctx, nodes); err != nil {
			logger.Error(err, "Failed to list all nodes")
			return false, nil
		}
		return true, nil
	}); err != nil {
		return fmt.Errorf("failed to list all nodes in %v, cannot proceed without updating CIDR map", listTimeout)
	}
	for i := range nodes.Items {
		n := &nodes.Items[i]
		if len(n.Spec.PodCIDRs) == 0 {
			continue
		}
		if err := alloc.occupy(n.Name, n.UID, n.Spec.PodCIDRs); err != nil {
			return err
		}
	}
	return nil
}

// newQueue names the work queue of ControllerName as upstream names its own:
// pkg/controller/nodeipam/ipam/range_allocator.go:101.
var newQueue = setup.Queue("cidrallocator_node")
