package options

// cloudFlags are upstream cloud-controller-manager's flags (k8s.io/cloud-provider/options
// v0.37.1) for the cloud loops kcm runs in the one binary (service-lb, cloud-node,
// cloud-node-lifecycle): the flags kube-controller-manager itself does not have, with
// upstream's names, types, defaults and help. The loops' other flags (--cloud-provider,
// --cloud-config, --cluster-name, --configure-cloud-routes, --route-reconciliation-period,
// --node-monitor-period, --allow-untagged-cloud) are kube-controller-manager's too, so they
// are in upstreamFlags.
var cloudFlags = []upstreamFlag{
	{Name: "concurrent-service-syncs", Type: "int32", Default: "1", Usage: "The number of services that are allowed to sync concurrently. Larger number = more responsive service management, but more CPU (and network) load"},
	{Name: "concurrent-node-syncs", Type: "int32", Default: "1", Usage: "Number of workers concurrently synchronizing nodes."},
	{Name: "concurrent-node-status-updates", Type: "int32", Default: "0", Usage: "Number of workers concurrently updating node statuses. If unspecified or 0, --concurrent-node-syncs is used instead"},
	{Name: "concurrent-node-lifecycle-syncs", Type: "int32", Default: "1", Usage: "Number of workers concurrently synchronizing nodes."},
	{Name: "node-status-update-frequency", Type: "duration", Default: "5m0s", Usage: "Specifies how often the controller updates nodes' status."},
}

// Typed handles of cloudFlags.
const (
	ConcurrentServiceSyncs       Int32Flag    = "concurrent-service-syncs"
	ConcurrentNodeSyncs          Int32Flag    = "concurrent-node-syncs"
	ConcurrentNodeStatusUpdates  Int32Flag    = "concurrent-node-status-updates"
	ConcurrentNodeLifecycleSyncs Int32Flag    = "concurrent-node-lifecycle-syncs"
	NodeStatusUpdateFrequency    DurationFlag = "node-status-update-frequency"
)

var cloudHandles = []Flag{ConcurrentServiceSyncs, ConcurrentNodeSyncs, ConcurrentNodeStatusUpdates,
	ConcurrentNodeLifecycleSyncs, NodeStatusUpdateFrequency}

// CloudFlagNames are the names of the cloud-controller-manager flags kcm has beside
// kube-controller-manager's (a comparison with upstream's kube-controller-manager leaves them out).
func CloudFlagNames() []string {
	names := make([]string, len(cloudFlags))
	for i, f := range cloudFlags {
		names[i] = f.Name
	}
	return names
}
