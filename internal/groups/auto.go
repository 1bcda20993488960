package groups

import "slices"

// OtherGroup collects, under Auto, the running controllers autoGroups does not place. A test
// of the registry (internal/controller) fails when a controller is missing from autoGroups, so
// it never appears in practice; it is there so that a controller added without a place still
// runs, on one replica at a time.
const OtherGroup = "other"

// autoGroups is kcm's built-in split, --controller-groups=auto: six groups, so that three
// replicas lead two each and two replicas three each. Two aims pull apart, and decide each
// place:
//
//   - the heaviest loops in different groups, so that no replica carries most of the work:
//     garbage-collector, replicaset, deployment, endpointslice, endpoints, job, statefulset,
//     daemonset, node-lifecycle, resourcequota, namespace, disruption, pod-garbage-collector
//     and taint-eviction spread two or three to a group, never two of the busiest pair of a
//     rollout (deployment and replicaset excepted, below) or of a node failure together with
//     another busy pair;
//   - controllers that watch the same kinds together, so that a replica leading a group needs
//     few informers beyond that group's (informers follow groups): pods every group needs,
//     which leaves the other kinds to keep apart.
//
// Per group, its heavy loops and the kinds it watches:
var autoGroups = map[string][]string{
	// apps: the Deployment rollout. Heavy: deployment and replicaset, together because a
	// Deployment owns its ReplicaSets and a rollout drives both in turn: apart, each replica
	// would hold both kinds anyway. Watches deployments, replicasets, replicationcontrollers
	// (the same loop as replicaset's), horizontalpodautoscalers (which scale Deployments and
	// ReplicaSets), pods.
	"apps": {
		"deployment-controller",
		"horizontal-pod-autoscaler-controller",
		"replicaset-controller",
		"replicationcontroller-controller",
	},
	// batch: Jobs and finished pods. Heavy: job, pod-garbage-collector (which deletes the
	// terminated pods Jobs leave). Watches jobs, cronjobs, podgroups (gang scheduling of
	// workloads), pods, nodes (pod-garbage-collector's orphans).
	"batch": {
		"cronjob-controller",
		"job-controller",
		"pod-garbage-collector-controller",
		"podgroup-protection-controller",
		"ttl-after-finished-controller",
	},
	// network: Services and their endpoints. Heavy: endpointslice, endpoints (every ready pod
	// of a selected Service passes through both). Watches services, pods, nodes, endpoints,
	// endpointslices, servicecidrs, ipaddresses; the cloud's service-lb loop watches services
	// and nodes.
	"network": {
		"endpoints-controller",
		"endpointslice-controller",
		"endpointslice-mirroring-controller",
		"service-cidr-controller",
		"service-lb-controller",
	},
	// nodes: the nodes and what runs on every node. Heavy: node-lifecycle, taint-eviction
	// (busy only when nodes fail), daemonset (busy when nodes come and go). node-lifecycle
	// reads daemonsets too, so the three share nodes, daemonsets and pods; also leases (node
	// heartbeats), controllerrevisions, and the kubelets' certificates: certificatesigningrequests,
	// podcertificaterequests, clustertrustbundles. The cloud's node loops and node-ipam, ttl
	// watch nodes only.
	"nodes": {
		"certificatesigningrequest-approving-controller",
		"certificatesigningrequest-cleaner-controller",
		"certificatesigningrequest-signing-controller",
		"cloud-node-controller",
		"cloud-node-lifecycle-controller",
		"daemonset-controller",
		"kube-apiserver-serving-clustertrustbundle-publisher-controller",
		"node-ipam-controller",
		"node-lifecycle-controller",
		"node-route-controller",
		"podcertificaterequest-cleaner-controller",
		"taint-eviction-controller",
		"ttl-controller",
	},
	// storage: claims and what holds them. Heavy: statefulset (pods and their
	// volumeClaimTemplates' PVCs), disruption (every pod change of a budgeted workload); the
	// attach-detach loop is the busiest of the volume loops. Watches statefulsets,
	// controllerrevisions, poddisruptionbudgets, pods, persistentvolumeclaims,
	// persistentvolumes, storageclasses, volumeattachments, CSI nodes and drivers,
	// volumeattributesclasses, and DRA's claims beside PVCs: resourceclaims, their templates,
	// resourceslices, devicetaintrules, resourcepoolstatusrequests.
	"storage": {
		"device-taint-eviction-controller",
		"disruption-controller",
		"ephemeral-volume-controller",
		"persistentvolume-attach-detach-controller",
		"persistentvolume-binder-controller",
		"persistentvolume-expander-controller",
		"persistentvolume-protection-controller",
		"persistentvolumeclaim-protection-controller",
		"resourceclaim-controller",
		"resourcepoolstatusrequest-controller",
		"selinux-warning-controller",
		"statefulset-controller",
		"volumeattributesclass-protection-controller",
	},
	// cluster: the loops over every kind, and namespaces' housekeeping. Heavy:
	// garbage-collector (the metadata of every kind), resourcequota (the kinds quotas count),
	// namespace (deletes every kind of a terminating namespace): together, only the replica
	// leading this group holds every kind; the other two are busy only when quotas exist and
	// namespaces go. Also namespaces, serviceaccounts, secrets and configmaps (the service
	// account, token and root CA loops, the bootstrap token loops), clusterroles,
	// validatingadmissionpolicies, storageversions, storageversionmigrations.
	"cluster": {
		"bootstrap-signer-controller",
		"clusterrole-aggregation-controller",
		"garbage-collector-controller",
		"legacy-serviceaccount-token-cleaner-controller",
		"namespace-controller",
		"resourcequota-controller",
		"root-ca-certificate-publisher-controller",
		"serviceaccount-controller",
		"serviceaccount-token-controller",
		"storage-version-migrator-controller",
		"storageversion-garbage-collector-controller",
		"token-cleaner-controller",
		"validatingadmissionpolicy-status-controller",
	},
}

// Auto is kcm's built-in split of the running controllers (upstream names): autoGroups, each
// group keeping the controllers that run, the running controllers it does not place in
// OtherGroup, empty groups dropped; sorted by name, controllers sorted.
func Auto(running []string) []Group {
	placed := map[string]bool{}
	groups := make([]Group, 0, len(autoGroups)+1)
	for name, controllers := range autoGroups {
		groups = append(groups, Group{Name: name, Controllers: controllers})
		for _, c := range controllers {
			placed[c] = true
		}
	}
	other := Group{Name: OtherGroup}
	for _, c := range running {
		if !placed[c] {
			other.Controllers = append(other.Controllers, c)
		}
	}
	groups = append(groups, other)
	return keepRunning(groups, running)
}

// AutoControllers lists every controller autoGroups places, once per place, sorted: for the
// registry's test (internal/controller), which checks that it is exactly the registry's
// controllers, each once.
func AutoControllers() []string {
	var all []string
	for _, controllers := range autoGroups {
		all = append(all, controllers...)
	}
	slices.Sort(all)
	return all
}
