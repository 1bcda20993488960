package controller_test

import (
	"slices"
	"sort"
	"testing"
	"time"

	. "github.com/onsi/gomega"
	ctrlmetrics "sigs.k8s.io/controller-runtime/pkg/metrics"

	"github.com/kcm/kcm/internal/testenv"
)

// upstreamQueues are the work queue names of kube-controller-manager v1.37.1 that dashboards
// and alerts select (workqueue_*{name=...}), each with where upstream names it (paths under
// k8s.io/kubernetes@v1.37.1/pkg/controller/). Upstream's unnamed queues (endpointslice's pod
// and topology queues, endpoint's pod queue, resourcepoolstatusrequest's) export no series.
var upstreamQueues = map[string]string{
	"bootstrap_signer_queue": "bootstrap/bootstrapsigner.go:110",
	"ClusterRoleAggregator":  "clusterroleaggregation/clusterroleaggregation_controller.go:65",
	"cronjob":                "cronjob/cronjob_controllerv2.go:97",
	"certificate":            "certificates/certificate_controller.go:74",
	"ca_cert_publisher_cluster_trust_bundles": "certificates/clustertrustbundlepublisher/publisher.go:303",
	"daemonset":                           "daemon/daemon_controller.go:212",
	"daemonset-node-updates":              "daemon/daemon_controller.go:218",
	"deployment":                          "deployment/deployment_controller.go:114",
	"device-taint-eviction-controller":    "devicetainteviction/device_taint_eviction.go:808 (the controller's name)",
	"disruption":                          "disruption/disruption.go:189",
	"disruption_recheck":                  "disruption/disruption.go:196",
	"stale_pod_disruption":                "disruption/disruption.go:204",
	"endpoint":                            "endpoint/endpoints_controller.go:90",
	"endpoint_slice":                      "endpointslice/endpointslice_controller.go:114",
	"endpoint_slice_mirroring":            "endpointslicemirroring/endpointslicemirroring_controller.go:99",
	"ephemeral_volume":                    "volume/ephemeral/controller.go:94",
	"volume_expand":                       "volume/expand/expand_controller.go:114",
	"garbage_collector_attempt_to_delete": "garbagecollector/graph_builder.go:154",
	"garbage_collector_attempt_to_orphan": "garbagecollector/graph_builder.go:160",
	"garbage_collector_graph_changes":     "garbagecollector/graph_builder.go:173",
	"job":                                 "job/job_controller.go:262",
	"job_orphan_pod":                      "job/job_controller.go:263",
	"namespace":                           "namespace/namespace_controller.go:80",
	"cidrallocator_node":                  "nodeipam/ipam/range_allocator.go:101",
	"node_lifecycle_controller":           "nodelifecycle/node_lifecycle_controller.go:356",
	"node_lifecycle_controller_pods":      "nodelifecycle/node_lifecycle_controller.go:360",
	"horizontalpodautoscaler":             "podautoscaler/horizontal.go:177",
	"orphaned_pods_nodes":                 "podgc/gc_controller.go:84",
	"podgroupprotection":                  "scheduling/podgroupprotection/podgroup_protection_controller.go:83",
	"claims":                              "volume/persistentvolume/pv_controller_base.go:93",
	"volumes":                             "volume/persistentvolume/pv_controller_base.go:97",
	"pvcs":                                "volume/attachdetach/attach_detach_controller.go:135",
	"pvcprotection":                       "volume/pvcprotection/pvc_protection_controller.go:130",
	"pvprotection":                        "volume/pvprotection/pv_protection_controller.go:58",
	"replicaset":                          "replicaset/replica_set.go:190",
	"replicationmanager":                  "replication/replication_controller.go:61",
	"resource_claim":                      "resourceclaim/controller.go:240",
	"resourcequota_primary":               "resourcequota/resource_quota_controller.go:114",
	"resourcequota_priority":              "resourcequota/resource_quota_controller.go:118",
	"resource_quota_controller_resource_changes":        "resourcequota/resource_quota_monitor.go:116",
	"root_ca_cert_publisher":                            "certificates/rootcacertpublisher/publisher.go:62",
	"selinux_warning":                                   "volume/selinuxwarning/selinux_warning_controller.go:120",
	"serviceaccount":                                    "serviceaccount/serviceaccounts_controller.go:71",
	"serviceaccount_tokens_service":                     "serviceaccount/tokens_controller.go:87 and :91",
	"ipaddresses":                                       "servicecidrs/servicecidrs_controller.go:83",
	"statefulset":                                       "statefulset/stateful_set.go:172",
	"storage_version_garbage_collector_leases":          "storageversiongc/gc_controller.go:68",
	"storage_version_garbage_collector_storageversions": "storageversiongc/gc_controller.go:72",
	"storage-version-migrator-controller":               "storageversionmigrator/storageversionmigrator.go:93 (the controller's name)",
	"resource-version-controller":                       "storageversionmigrator/resourceversion.go:89, migrationrunner.go:81",
	"noexec_taint_node":                                 "tainteviction/taint_eviction.go:220",
	"noexec_taint_pod":                                  "tainteviction/taint_eviction.go:221",
	"token_cleaner":                                     "bootstrap/tokencleaner.go:85",
	"ttlcontroller":                                     "ttl/ttl_controller.go:86",
	"ttl_jobs_to_delete":                                "ttlafterfinished/ttlafterfinished_controller.go:85",
	"vacprotection":                                     "volume/vacprotection/vac_protection_controller.go:111",
	"validatingadmissionpolicy-status":                  "validatingadmissionpolicystatus/controller.go:81",
	// cloud-controller-manager's, whose loops kcm also runs (k8s.io/cloud-provider v0.37.1).
	"service": "k8s.io/cloud-provider controllers/service/controller.go:122",
	"Nodes":   "k8s.io/cloud-provider controllers/node/node_controller.go:142",
	"Routes":  "k8s.io/cloud-provider controllers/route/route_controller.go:122 (watch-based reconciliation)",
}

// defaultQueues are the upstream queues that kcm's default controllers (--controllers=*,
// against an API server with its default groups) stand for: each must have a series.
// serviceaccount-token-controller ("serviceaccount_tokens_service") does not run without
// --service-account-private-key-file, as upstream.
var defaultQueues = []string{
	"certificate", "ClusterRoleAggregator", "cronjob", "daemonset", "deployment", "disruption",
	"stale_pod_disruption", "endpoint", "endpoint_slice", "endpoint_slice_mirroring",
	"ephemeral_volume", "volume_expand", "garbage_collector_attempt_to_delete", "job",
	"job_orphan_pod", "namespace", "node_lifecycle_controller", "horizontalpodautoscaler",
	"claims", "volumes", "pvcprotection", "pvprotection", "replicaset", "replicationmanager",
	"resourcequota_primary", "root_ca_cert_publisher", "serviceaccount",
	"ipaddresses", "statefulset", "noexec_taint_pod",
	"ttlcontroller", "ttl_jobs_to_delete", "vacprotection", "validatingadmissionpolicy-status",
}

// kcmOnlyQueues are kcm's queues with no upstream queue to stand for: upstream runs these
// controllers as periodic loops (or, for endpointslice's topology, an unnamed queue); they
// keep kcm's controller name.
var kcmOnlyQueues = []string{
	"certificatesigningrequest-cleaner-controller",
	"legacy-serviceaccount-token-cleaner-controller",
	"podcertificaterequest-cleaner-controller",
	"pod-garbage-collector-controller",
	"persistentvolume-attach-detach-controller",
	"endpointslice-controller-topology",
	"resourcepoolstatusrequest-controller",
	// devicetainteviction's rule reconciler: upstream keeps rules in its one queue
	// ("device-taint-eviction-controller", which kcm's pod reconciler already is named).
	"device-taint-eviction-controller-rules",
	// cloud-controller-manager's loops with no queue upstream: cloud-node-lifecycle's periodic
	// pass, and node-route's when CloudControllerManagerWatchBasedRoutesReconciliation is off.
	"cloud-node-lifecycle-controller",
	"node-route-controller",
}

// defaultKcmQueues are kcm's own queues that the default controllers run: they report
// through upstream's families too (setup.Queue), so each must have a series there.
var defaultKcmQueues = []string{
	"certificatesigningrequest-cleaner-controller",
	"legacy-serviceaccount-token-cleaner-controller",
	"pod-garbage-collector-controller",
	"persistentvolume-attach-detach-controller",
	"endpointslice-controller-topology",
}

// upstreamWorkqueueFamilies are the workqueue_* families of upstream's queues
// (k8s.io/component-base/metrics/prometheus/workqueue), each labelled {name} only.
var upstreamWorkqueueFamilies = []string{
	"workqueue_adds_total", "workqueue_depth", "workqueue_longest_running_processor_seconds",
	"workqueue_queue_duration_seconds", "workqueue_retries_total",
	"workqueue_unfinished_work_seconds", "workqueue_work_duration_seconds",
}

// TestWorkqueuesNamedAsUpstream starts the default controllers and checks that
// workqueue_adds_total has a series for each upstream queue they stand for and for each of
// kcm's own queues they run, and none with a name that is neither upstream's nor one of kcm's
// own queues; and that every workqueue_* family is served with upstream's one label, name
// (controller-runtime's queue metrics add controller, and priority on depth). On the same
// manager, the shared cache's informers report informer_* as upstream's shared informers do.
func TestWorkqueuesNamedAsUpstream(t *testing.T) {
	env, err := testenv.StartAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	if err := env.StartManager([]string{"*"}); err != nil {
		t.Fatal(err)
	}

	// A queue's series appear when its controller starts, after the manager's caches sync.
	var names []string
	NewWithT(t).Eventually(func() []string {
		names = queueNames(t)
		var missing []string
		for _, q := range append(slices.Clone(defaultQueues), defaultKcmQueues...) {
			if !slices.Contains(names, q) {
				missing = append(missing, q)
			}
		}
		return missing
	}).WithTimeout(2*time.Minute).WithPolling(200*time.Millisecond).Should(BeEmpty(), "queues without a workqueue_adds_total series")
	for _, q := range defaultQueues {
		if _, ok := upstreamQueues[q]; !ok {
			t.Errorf("defaultQueues names %q, which is not an upstream queue", q)
		}
		if !slices.Contains(names, q) {
			t.Errorf("no workqueue_adds_total series for upstream's queue %q (%s)", q, upstreamQueues[q])
		}
	}
	for _, q := range defaultKcmQueues {
		if !slices.Contains(kcmOnlyQueues, q) {
			t.Errorf("defaultKcmQueues names %q, which is not one of kcm's own queues", q)
		}
		if !slices.Contains(names, q) {
			t.Errorf("no workqueue_adds_total series for kcm's queue %q", q)
		}
	}
	for _, n := range names {
		if _, ok := upstreamQueues[n]; !ok && !slices.Contains(kcmOnlyQueues, n) {
			t.Errorf("workqueue_adds_total has a series named %q, neither upstream's nor one of kcm's own queues", n)
		}
	}
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range upstreamWorkqueueFamilies {
		var served int
		for _, f := range families {
			if f.GetName() != name {
				continue
			}
			served++
			for _, m := range f.GetMetric() {
				var labels []string
				for _, l := range m.GetLabel() {
					labels = append(labels, l.GetName())
				}
				if !slices.Equal(labels, []string{"name"}) {
					t.Errorf("%s has a series labelled %v, want upstream's [name]", name, labels)
					break
				}
			}
		}
		if served != 1 {
			t.Errorf("%s is served %d times, want once", name, served)
		}
	}
}

// queueNames are the name labels of workqueue_adds_total on kcm's /metrics registry.
func queueNames(t *testing.T) []string {
	t.Helper()
	families, err := ctrlmetrics.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, f := range families {
		if f.GetName() != "workqueue_adds_total" {
			continue
		}
		for _, m := range f.GetMetric() {
			for _, l := range m.GetLabel() {
				if l.GetName() == "name" && !slices.Contains(names, l.GetValue()) {
					names = append(names, l.GetValue())
				}
			}
		}
	}
	sort.Strings(names)
	return names
}
