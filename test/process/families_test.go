//go:build linux

package process_test

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"
	"unsafe"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/kcm/kcm/internal/controller"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// The families test: upstream's list (testdata/upstream-families.txt, generated from upstream
// v1.37.1's registrations by `make upstream-families`) against kcm's /metrics after a small
// workload, and the kubernetes-mixin dashboard's queries against the same scrape.
var _ = Describe("/metrics after a small workload", Ordered, ContinueOnFailure, func() {
	var (
		upstream map[string]upstreamFamily
		scraped  map[string]*dto.MetricFamily
	)

	BeforeAll(func() {
		upstream = readUpstreamFamilies()
		scraped = scrapeAfterWorkload(kcmBinary, "kcm")
	})

	It("has every family upstream kube-controller-manager v1.37.1 registers, with upstream's type and label names", func() {
		var missing, wrong, fromScrape, withoutSeries []string
		for _, name := range sortedKeys(upstream) {
			want := upstream[name]
			got, ok := scraped[name]
			if !ok {
				if reason, ok := noSeries[name]; ok {
					withoutSeries = append(withoutSeries, name+" ("+reason+")")
					continue
				}
				missing = append(missing, fmt.Sprintf("%s\t%s\t%s", name, want.typ, want.origin))
				continue
			}
			fromScrape = append(fromScrape, name)
			if typ := strings.ToLower(got.GetType().String()); typ != want.typ {
				wrong = append(wrong, fmt.Sprintf("%s: type %s, upstream's %s", name, typ, want.typ))
			}
			if labels := scrapedLabelNames(got); !slices.Equal(labels, want.labels) {
				wrong = append(wrong, fmt.Sprintf("%s: labels %v, upstream's %v", name, labels, want.labels))
			}
		}
		counts := fmt.Sprintf("upstream v1.37.1 registers %d families; kcm's /metrics serves %d; %d of upstream's "+
			"checked on the scrape, %d without series in this workload (listed with why), %d missing, %d with another type or labels",
			len(upstream), len(scraped), len(fromScrape), len(withoutSeries), len(missing), len(wrong))
		AddReportEntry("metric families", counts)
		GinkgoWriter.Println(counts)
		GinkgoWriter.Printf("without series here:\n  %s\n", strings.Join(withoutSeries, "\n  "))
		Expect(missing).To(BeEmpty(), "%s\nmissing from kcm's /metrics (name, type, the part of upstream registering it):\n%s",
			counts, strings.Join(missing, "\n"))
		Expect(wrong).To(BeEmpty(), "%s", counts)
	})

	It("registers, in kcm's registry, upstream's type and label names for each family with no series here", func() {
		registered := kcmRegistry()
		var checked, missing, wrong []string
		for _, name := range sortedKeys(noSeries) {
			if _, ok := scraped[name]; ok {
				continue // checked on the scrape
			}
			checked = append(checked, name)
			want := upstream[name]
			got, ok := registered[name]
			if !ok {
				missing = append(missing, fmt.Sprintf("%s\t%s\t%s", name, want.typ, want.origin))
				continue
			}
			// A custom collector's type shows only in what it collects.
			if got.typ != "" && got.typ != want.typ {
				wrong = append(wrong, fmt.Sprintf("%s: type %s, upstream's %s", name, got.typ, want.typ))
			}
			if !slices.Equal(got.labels, want.labels) {
				wrong = append(wrong, fmt.Sprintf("%s: labels %v, upstream's %v", name, got.labels, want.labels))
			}
		}
		counts := fmt.Sprintf("%d of upstream's families have no series in kcm's /metrics after the workload; %d of them not registered by kcm, %d with another type or labels",
			len(checked), len(missing), len(wrong))
		AddReportEntry("families without series", counts)
		Expect(missing).To(BeEmpty(), "%s\nnot registered by kcm (name, type, the part of upstream registering it):\n%s", counts, strings.Join(missing, "\n"))
		Expect(wrong).To(BeEmpty(), "%s", counts)
	})

	It("serves kcm's own convergence families beside upstream's, one series per controller with a rule", func() {
		// The gauges have a series per enabled controller with a rule from the start;
		// service-lb-controller does not run without --cloud-provider.
		want := []string{"deployment-controller", "endpointslice-controller", "job-controller", "namespace-controller",
			"persistentvolume-binder-controller-claims", "replicaset-controller", "statefulset-controller"}
		for _, name := range []string{"kcm_objects_not_converged", "kcm_oldest_not_converged_seconds"} {
			f, ok := scraped[name]
			Expect(ok).To(BeTrue(), "%s not served", name)
			Expect(f.GetType()).To(Equal(dto.MetricType_GAUGE), name)
			Expect(scrapedLabelNames(f)).To(Equal([]string{"controller"}), name)
			var controllers []string
			for _, m := range f.GetMetric() {
				controllers = append(controllers, m.GetLabel()[0].GetValue())
			}
			Expect(controllers).To(ConsistOf(want), name)
		}
		// The histogram has series once something converged while the clocks looked (the
		// workload may start before they do).
		if f, ok := scraped["kcm_convergence_duration_seconds"]; ok {
			Expect(f.GetType()).To(Equal(dto.MetricType_HISTOGRAM))
			Expect(scrapedLabelNames(f)).To(Equal([]string{"controller"}))
		}
		for name := range scraped {
			if strings.HasPrefix(name, "kcm_") {
				Expect(upstream).NotTo(HaveKey(name), "kcm's own families never take an upstream name")
			}
		}
	})

	It("returns series for every query of the kubernetes-mixin controller-manager dashboard", func() {
		panels := readMixinQueries()
		Expect(panels).NotTo(BeEmpty())
		var failed []string
		for _, panel := range sortedKeys(panels) {
			series := 0
			for _, query := range panels[panel] {
				n, problems := evaluateSelectors(query, scraped)
				series += n
				failed = append(failed, problems...)
			}
			GinkgoWriter.Printf("%s: %d series\n", panel, series)
			if series == 0 {
				failed = append(failed, fmt.Sprintf("panel %q: no series", panel))
			}
		}
		Expect(failed).To(BeEmpty())
	})
})

// Upstream's own /metrics after the same workload: the families listed in noSeries have no
// series there (but for a race such as a stale-sync skip), and every other family of the list
// has some: the workload reaches everything the list does not explain.
var _ = Describe("Upstream's /metrics after the same small workload", func() {
	It("has series of every family of the list but those noSeries names, and no family outside the list", func() {
		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it)")
		}
		upstream := readUpstreamFamilies()
		scraped := scrapeAfterWorkload(bin, "upstream")
		var withSeries, without []string
		for _, name := range sortedKeys(upstream) {
			_, ok := scraped[name]
			_, listed := noSeries[name]
			switch {
			case ok && listed:
				withSeries = append(withSeries, name)
			case !ok && !listed:
				without = append(without, name+"\t"+upstream[name].origin)
			}
		}
		var extra []string
		for _, name := range sortedKeys(scraped) {
			if _, ok := upstream[name]; !ok {
				extra = append(extra, name)
			}
		}
		GinkgoWriter.Printf("upstream's /metrics: %d families\n", len(scraped))
		Expect(extra).To(BeEmpty(), "served by upstream but not in the generated list:\n%s", strings.Join(extra, "\n"))
		// A cache race can give a stale-sync counter a series; such a family is checked on the
		// scrape when kcm's has it, so a listed family with series here only gets a line.
		GinkgoWriter.Printf("listed in noSeries, yet upstream has series of them: %v\n", withSeries)
		Expect(without).To(BeEmpty(), "no series in upstream's /metrics, not listed in noSeries:\n%s", strings.Join(without, "\n"))
	})
})

// noSeries are upstream's families that have no series after this spec's workload, in kcm as
// in upstream: vectors whose children appear only in situations the workload does not make.
// The upstream spec below checks that upstream's /metrics has no series of exactly these
// after the same workload; kcm's spec checks each against kcm's registry instead.
var noSeries = map[string]string{}

func init() {
	for reason, names := range map[string][]string{
		apiServerOnly: {
			"aggregator_openapi_v2_regeneration_count",
			"aggregator_openapi_v2_regeneration_duration",
			"apiextensions_openapi_v2_regeneration_count",
			"apiextensions_openapi_v3_regeneration_count",
			"apiserver_admission_controller_admission_duration_seconds",
			"apiserver_admission_match_condition_evaluation_errors_total",
			"apiserver_admission_match_condition_evaluation_seconds",
			"apiserver_admission_match_condition_exclusions_total",
			"apiserver_admission_step_admission_duration_seconds",
			"apiserver_admission_step_admission_duration_seconds_summary",
			"apiserver_admission_webhook_admission_duration_seconds",
			"apiserver_admission_webhook_fail_open_count",
			"apiserver_admission_webhook_rejection_count",
			"apiserver_admission_webhook_request_total",
			"apiserver_audit_error_total",
			"apiserver_audit_level_total",
			"apiserver_certificates_registry_csr_honored_duration_total",
			"apiserver_certificates_registry_csr_requested_duration_total",
			"apiserver_conversion_webhook_duration_seconds",
			"apiserver_conversion_webhook_request_total",
			"apiserver_egress_dialer_dial_duration_seconds",
			"apiserver_egress_dialer_dial_failure_count",
			"apiserver_egress_dialer_dial_start_total",
			"apiserver_encryption_config_controller_automatic_reload_last_timestamp_seconds",
			"apiserver_encryption_config_controller_automatic_reloads_total",
			"apiserver_encryption_config_controller_last_config_info",
			"apiserver_envelope_encryption_dek_cache_inter_arrival_time_seconds",
			"apiserver_envelope_encryption_dek_source_cache_size",
			"apiserver_envelope_encryption_invalid_key_id_from_status_total",
			"apiserver_envelope_encryption_key_id_hash_last_timestamp_seconds",
			"apiserver_envelope_encryption_key_id_hash_status_last_timestamp_seconds",
			"apiserver_envelope_encryption_key_id_hash_total",
			"apiserver_envelope_encryption_kms_operations_latency_seconds",
			"apiserver_externaljwt_fetch_keys_data_timestamp",
			"apiserver_externaljwt_fetch_keys_request_total",
			"apiserver_externaljwt_fetch_keys_success_timestamp",
			"apiserver_externaljwt_request_duration_seconds",
			"apiserver_externaljwt_sign_request_total",
			"apiserver_mutating_admission_policy_check_duration_seconds",
			"apiserver_mutating_admission_policy_check_total",
			"apiserver_storage_transformation_duration_seconds",
			"apiserver_storage_transformation_operations_total",
			"apiserver_validating_admission_policy_check_duration_seconds",
			"apiserver_validating_admission_policy_check_total",
			"apiserver_validation_declarative_validation_panics_total",
			"apiserver_validation_declarative_validation_parity_discrepancies_total",
			"grpc_client_handled_total",
			"grpc_client_msg_received_total",
			"grpc_client_msg_sent_total",
			"grpc_client_started_total",
			"konnectivity_network_proxy_client_client_connections",
			"konnectivity_network_proxy_client_dial_failure_total",
			"konnectivity_network_proxy_client_stream_errors_total",
			"konnectivity_network_proxy_client_stream_packets_total",
		},
		noVolumes: {
			"attach_detach_controller_attachdetach_controller_forced_detaches",
			"attachdetach_controller_total_volumes",
			"csi_operations_seconds",
			"pv_collector_bound_pv_count",
			"pv_collector_bound_pvc_count",
			"pv_collector_total_pv_count",
			"pv_collector_unbound_pv_count",
			"pv_collector_unbound_pvc_count",
			"storage_count_attachable_volumes_in_use",
			"storage_operation_duration_seconds",
			"volume_operation_errors_total",
			"volume_operation_total_errors",
			"volume_operation_total_seconds",
		},
		staleSkips: {
			"daemonset_controller_stale_sync_skips_total",
			"horizontal_pod_autoscaler_controller_stale_sync_skips_total",
			"job_controller_stale_sync_skips_total",
			"replicaset_controller_stale_sync_skips_total",
			"statefulset_controller_stale_sync_skips_total",
		},
		noClaims: {
			"dynamic_resource_allocation_resource_claims",
			"dynamic_resource_allocation_resourceclaim_creates_total",
		},
		noTrafficDistribution: {
			"endpoint_slice_controller_services_count_by_traffic_distribution",
		},
		noCustomEndpoints: {
			"endpoint_slice_mirroring_controller_addresses_skipped_per_sync",
			"endpoint_slice_mirroring_controller_changes",
			"endpoint_slice_mirroring_controller_desired_endpoint_slices",
			"endpoint_slice_mirroring_controller_endpoints_added_per_sync",
			"endpoint_slice_mirroring_controller_endpoints_desired",
			"endpoint_slice_mirroring_controller_endpoints_removed_per_sync",
			"endpoint_slice_mirroring_controller_endpoints_updated_per_sync",
			"endpoint_slice_mirroring_controller_num_endpoint_slices",
		},
		noHPA: {
			"horizontal_pod_autoscaler_controller_desired_replicas",
			"horizontal_pod_autoscaler_controller_metric_computation_duration_seconds",
			"horizontal_pod_autoscaler_controller_metric_computation_total",
			"horizontal_pod_autoscaler_controller_reconciliation_duration_seconds",
			"horizontal_pod_autoscaler_controller_reconciliations_total",
		},
		jobIndexes: {
			"job_controller_job_finished_indexes_total",
		},
		jobManagedBy: {
			"job_controller_jobs_by_external_controller_total",
		},
		jobFailurePolicy: {
			"job_controller_pod_failures_handled_by_failure_policy_total",
		},
		slowPath: {
			"leader_election_slowpath_total",
		},
		noNodes: {
			"node_collector_evictions_total",
			"node_collector_unhealthy_nodes_in_zone",
			"node_collector_zone_health",
			"node_collector_zone_size",
			"node_ipam_controller_cidrset_allocation_tries_per_request",
			"node_ipam_controller_cidrset_cidrs_allocations_total",
			"node_ipam_controller_cidrset_cidrs_releases_total",
			"node_ipam_controller_cidrset_usage_cidrs",
		},
		forceDelete: {
			"pod_gc_collector_force_delete_pod_errors_total",
			"pod_gc_collector_force_delete_pods_total",
		},
		gateOff: {
			"resourcepoolstatusrequest_controller_request_processing_duration_seconds",
			"resourcepoolstatusrequest_controller_request_processing_errors_total",
			"resourcepoolstatusrequest_controller_requests_processed_total",
		},
		restClient: {
			"rest_client_exec_plugin_call_total",
			"rest_client_request_retries_total",
			"rest_client_transport_ca_reload_total",
			"rest_client_transport_cache_gc_calls_total",
		},
		offByDefault: {
			"selinux_warning_controller_selinux_volume_conflict",
		},
		noStatefulSet: {
			"statefulset_controller_statefulset_max_unavailable",
			"statefulset_controller_statefulset_unavailable_replicas",
		},
	} {
		for _, name := range names {
			noSeries[name] = reason
		}
	}
}

// Why each family of noSeries has no series here.
const (
	apiServerOnly         = "registered at init by a k8s.io/apiserver, kube-aggregator, apiextensions-apiserver, konnectivity-client or etcd client (grpc) package that upstream's binary links; only an API server's own admission, audit, storage, encryption, webhook or etcd paths record them, and kube-controller-manager runs none"
	noVolumes             = "no PersistentVolume, claim or attachable volume in the workload"
	staleSkips            = "counted only when a sync finds the cache older than the controller's own last write (StaleControllerConsistency), which this workload did not hit"
	noClaims              = "no ResourceClaim in the workload"
	noTrafficDistribution = "no Service with spec.trafficDistribution"
	noCustomEndpoints     = "no selectorless Service with Endpoints of its own to mirror"
	noHPA                 = "no HorizontalPodAutoscaler in the workload"
	jobIndexes            = "no Indexed Job"
	jobManagedBy          = "no Job with spec.managedBy"
	jobFailurePolicy      = "no Job with a pod failure policy"
	slowPath              = "the leader election's slow path (a full Get and Update of the Lease) was not taken"
	noNodes               = "no Node in the workload (the API server has none)"
	forceDelete           = "no pod to force-delete (orphaned, or terminating on an unready node)"
	gateOff               = "resourcepoolstatusrequest-controller needs DRAResourcePoolStatus (alpha, off by default): not running"
	restClient            = "no exec credential plugin, retried request, CA file reload or transport-cache garbage collection"
	offByDefault          = "selinux-warning-controller is off by default (and no conflicting volumes)"
	noStatefulSet         = "no StatefulSet in the workload"
)

// upstreamFamily is one line of testdata/upstream-families.txt.
type upstreamFamily struct {
	typ, stability, origin string
	labels                 []string
}

func readUpstreamFamilies() map[string]upstreamFamily {
	GinkgoHelper()
	f, err := os.Open(filepath.Join(root, "test", "process", "testdata", "upstream-families.txt"))
	Expect(err).NotTo(HaveOccurred())
	defer f.Close()
	out := map[string]upstreamFamily{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := sc.Text()
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		fields := strings.Split(line, "\t")
		Expect(fields).To(HaveLen(5), "line %q", line)
		fam := upstreamFamily{typ: fields[1], stability: fields[2], origin: fields[4]}
		if fields[3] != "-" {
			fam.labels = strings.Split(fields[3], ",")
			sort.Strings(fam.labels)
		}
		out[fields[0]] = fam
	}
	Expect(sc.Err()).NotTo(HaveOccurred())
	return out
}

// scrapedLabelNames are the label names of a family's series, sorted, without the
// histogram's le and the summary's quantile.
func scrapedLabelNames(f *dto.MetricFamily) []string {
	set := map[string]bool{}
	for _, m := range f.GetMetric() {
		for _, l := range m.GetLabel() {
			set[l.GetName()] = true
		}
	}
	var out []string
	for name := range set {
		out = append(out, name)
	}
	sort.Strings(out)
	return out
}

// kubeadmKubeconfig writes a kubeconfig of kubeadm's controller-manager.conf identity (the
// user system:kube-controller-manager) and returns its path.
func kubeadmKubeconfig() string {
	GinkgoHelper()
	user, err := env.Environment.AddUser(envtest.User{Name: testenv.KubeadmUser}, env.Config)
	Expect(err).NotTo(HaveOccurred())
	conf, err := user.KubeConfig()
	Expect(err).NotTo(HaveOccurred())
	path := filepath.Join(GinkgoT().TempDir(), "controller-manager.conf")
	Expect(os.WriteFile(path, conf, 0o600)).To(Succeed())
	return path
}

// kubeadmConnection is how kubeadm connects kube-controller-manager: controller-manager.conf's
// identity, and each controller as its own ServiceAccount. For specs that do not take the real
// Lease: system:kube-controller-manager may renew only the Lease named kube-controller-manager,
// so specs that elect a leader under a Lease name of their own keep the administrator.
func kubeadmConnection() (conf string, args []string) {
	GinkgoHelper()
	conf = kubeadmKubeconfig()
	return conf, []string{"--kubeconfig=" + conf, "--use-service-account-credentials=true"}
}

// scrapeAfterWorkload starts binary as kubeadm starts kube-controller-manager (its identity,
// its delegated authentication and authorization, its controllers), runs the small
// workload, waits until the controllers have acted on each object, and returns one scrape
// of /metrics made with a bearer token the delegated authorization allows.
func scrapeAfterWorkload(binary, name string) map[string]*dto.MetricFamily {
	GinkgoHelper()
	ctx := context.Background()
	controllerManagerConf := kubeadmKubeconfig()
	certDir := env.Environment.ControlPlane.GetAPIServer().CertDir
	port := freePort()
	args := []string{
		"--kubeconfig=" + controllerManagerConf,
		"--authentication-kubeconfig=" + controllerManagerConf,
		"--authorization-kubeconfig=" + controllerManagerConf,
		"--client-ca-file=" + filepath.Join(certDir, "client-cert-auth-ca.crt"),
		"--bind-address=127.0.0.1",
		"--secure-port=" + strconv.Itoa(port),
		"--controllers=*,bootstrapsigner,tokencleaner",
		"--allocate-node-cidrs=true",
		"--cluster-cidr=10.244.0.0/16",
		"--service-cluster-ip-range=10.96.0.0/12",
		"--use-service-account-credentials=true",
		"--leader-elect=true",
		"--leader-elect-resource-name=" + uniqueLeaseName(),
	}
	var p *process
	if binary == kcmBinary {
		p = startKCM(name, args...)
	} else {
		p = startProcess(name, syscall.SIGKILL, binary, args...)
	}

	ns := newNamespace(env.Client)
	token := metricsToken(ns)

	// The workload: a Deployment, a Service selecting its pods, a Job whose pod the spec
	// completes as a kubelet would, a CronJob, a quota, a PDB, a deleted namespace.
	deployment := newDeployment(ns, "web", 2)
	Expect(env.Client.Create(ctx, deployment)).To(Succeed())
	service := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: corev1.ServiceSpec{
			Selector: map[string]string{"app": "web"},
			Ports:    []corev1.ServicePort{{Port: 80, TargetPort: intstr.FromInt32(8080)}},
		},
	}
	Expect(env.Client.Create(ctx, service)).To(Succeed())
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "once"},
		Spec: batchv1.JobSpec{
			TTLSecondsAfterFinished: ptr.To[int32](0),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers:    []corev1.Container{{Name: "c", Image: "registry.k8s.io/pause:3.10"}},
			}},
		},
	}
	Expect(env.Client.Create(ctx, job)).To(Succeed())
	cronJob := &batchv1.CronJob{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "hourly"},
		Spec: batchv1.CronJobSpec{
			Schedule:    "@hourly",
			JobTemplate: batchv1.JobTemplateSpec{Spec: batchv1.JobSpec{Template: job.Spec.Template}},
		},
	}
	Expect(env.Client.Create(ctx, cronJob)).To(Succeed())
	quota := &corev1.ResourceQuota{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "pods"},
		Spec:       corev1.ResourceQuotaSpec{Hard: corev1.ResourceList{corev1.ResourcePods: resource.MustParse("10")}},
	}
	Expect(env.Client.Create(ctx, quota)).To(Succeed())
	pdb := &policyv1.PodDisruptionBudget{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "web"},
		Spec: policyv1.PodDisruptionBudgetSpec{
			MinAvailable: ptr.To(intstr.FromInt32(1)),
			Selector:     &metav1.LabelSelector{MatchLabels: map[string]string{"app": "web"}},
		},
	}
	Expect(env.Client.Create(ctx, pdb)).To(Succeed())
	deleted := newNamespace(env.Client)
	Expect(env.Client.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: deleted, Name: "content"}})).To(Succeed())
	Expect(env.Client.Delete(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: deleted}})).To(Succeed())

	// Each controller's visible answer.
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{"app": "web"})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(2), "the Deployment's pods")
		slices := &discoveryv1.EndpointSliceList{}
		g.Expect(env.Client.List(ctx, slices, client.InNamespace(ns), client.MatchingLabels{discoveryv1.LabelServiceName: "web"})).To(Succeed())
		g.Expect(slices.Items).NotTo(BeEmpty(), "the Service's EndpointSlice")
		q := &corev1.ResourceQuota{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(quota), q)).To(Succeed())
		g.Expect(q.Status.Used).To(HaveKey(corev1.ResourcePods), "the quota's usage")
		b := &policyv1.PodDisruptionBudget{}
		g.Expect(env.Client.Get(ctx, client.ObjectKeyFromObject(pdb), b)).To(Succeed())
		g.Expect(b.Status.ObservedGeneration).To(Equal(b.Generation), "the PDB's status")
		g.Expect(env.Client.Get(ctx, client.ObjectKey{Name: deleted}, &corev1.Namespace{})).To(beNotFound(), "the deleted namespace")
	}).WithTimeout(60*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "%s: %s", name, p.State())
	// The kubelet's part for the Job's pod: it ran and succeeded; the Job then completes and
	// ttl-after-finished deletes it.
	Eventually(func(g Gomega) {
		pods := &corev1.PodList{}
		g.Expect(env.Client.List(ctx, pods, client.InNamespace(ns), client.MatchingLabels{batchv1.JobNameLabel: job.Name})).To(Succeed())
		g.Expect(pods.Items).To(HaveLen(1), "the Job's pod")
		pod := &pods.Items[0]
		pod.Status.Phase = corev1.PodSucceeded
		pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "c", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: 0, Reason: "Completed"}}}}
		g.Expect(env.Client.Status().Update(ctx, pod)).To(Succeed())
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(Succeed(), "%s: %s", name, p.State())
	Eventually(func() error {
		return env.Client.Get(ctx, client.ObjectKeyFromObject(job), &batchv1.Job{})
	}).WithTimeout(30*time.Second).WithPolling(250*time.Millisecond).Should(beNotFound(), "the finished Job deleted by its TTL; %s: %s", name, p.State())

	return scrape(port, token)
}

// metricsToken returns a token of a ServiceAccount allowed to get /metrics: what a
// Prometheus in the cluster scrapes with, reviewed by the delegated authentication and
// authorization.
func metricsToken(ns string) string {
	GinkgoHelper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "prometheus"}}
	Expect(env.Client.Create(ctx, sa)).To(Succeed())
	role := &rbacv1.ClusterRole{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "kcm-process-metrics-"},
		Rules:      []rbacv1.PolicyRule{{NonResourceURLs: []string{"/metrics"}, Verbs: []string{"get"}}},
	}
	Expect(env.Client.Create(ctx, role)).To(Succeed())
	DeferCleanup(env.Client.Delete, ctx, role)
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: role.Name},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: role.Name},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: ns, Name: sa.Name}},
	}
	Expect(env.Client.Create(ctx, binding)).To(Succeed())
	DeferCleanup(env.Client.Delete, ctx, binding)
	tr := &authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}
	Expect(env.Client.SubResource("token").Create(ctx, sa, tr)).To(Succeed())
	return tr.Status.Token
}

// scrape reads https://127.0.0.1:port/metrics with the bearer token until it answers 200.
func scrape(port int, token string) map[string]*dto.MetricFamily {
	GinkgoHelper()
	hc := &http.Client{
		Timeout:   10 * time.Second,
		Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed
	}
	DeferCleanup(hc.CloseIdleConnections)
	var families map[string]*dto.MetricFamily
	Eventually(func(g Gomega) {
		req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d/metrics", port), nil)
		g.Expect(err).NotTo(HaveOccurred())
		req.Header.Set("Authorization", "Bearer "+token)
		resp, err := hc.Do(req)
		g.Expect(err).NotTo(HaveOccurred())
		defer resp.Body.Close()
		g.Expect(resp.StatusCode).To(Equal(http.StatusOK))
		parser := expfmt.NewTextParser(model.UTF8Validation)
		families, err = parser.TextToMetricFamilies(resp.Body)
		g.Expect(err).NotTo(HaveOccurred())
	}).WithTimeout(30 * time.Second).Should(Succeed())
	return families
}

// readMixinQueries returns the dashboard's queries by panel title.
func readMixinQueries() map[string][]string {
	GinkgoHelper()
	data, err := os.ReadFile(filepath.Join(root, "test", "process", "testdata", "kubernetes-mixin-controller-manager.txt"))
	Expect(err).NotTo(HaveOccurred())
	out := map[string][]string{}
	for _, line := range strings.Split(string(data), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		title, query, ok := strings.Cut(line, "\t")
		Expect(ok).To(BeTrue(), "line %q", line)
		out[title] = append(out[title], query)
	}
	return out
}

var (
	// selectorRE matches a vector selector with its matchers: name{...}.
	selectorRE = regexp.MustCompile(`([a-zA-Z_:][a-zA-Z0-9_:]*)\{([^}]*)\}`)
	// matcherRE matches one label matcher: name op "value".
	matcherRE = regexp.MustCompile(`^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$`)
	// byRE matches a grouping: by (a, b).
	byRE = regexp.MustCompile(`by\s*\(([^)]*)\)`)
)

// scrapeLabels are the labels Prometheus' scrape configuration adds to every series: the
// component never serves them, and a dashboard's matchers on them select every series.
var scrapeLabels = map[string]bool{"job": true, "instance": true, "cluster": true}

// evaluateSelectors evaluates a query's vector selectors against one scrape: the number of
// series they select (every label a by() groups on present), and what does not hold. `up` is
// the scrape's own series.
func evaluateSelectors(query string, scraped map[string]*dto.MetricFamily) (int, []string) {
	var problems []string
	var by []string
	for _, m := range byRE.FindAllStringSubmatch(query, -1) {
		for _, l := range strings.Split(m[1], ",") {
			if l = strings.TrimSpace(l); !scrapeLabels[l] {
				by = append(by, l)
			}
		}
	}
	selectors := selectorRE.FindAllStringSubmatch(query, -1)
	if len(selectors) == 0 {
		return 0, []string{fmt.Sprintf("%q: no selector", query)}
	}
	total := 0
	for _, sel := range selectors {
		name := sel[1]
		if name == "up" {
			total++ // this scrape succeeded: up is 1
			continue
		}
		family, series := familyOf(name, scraped)
		if family == nil {
			problems = append(problems, fmt.Sprintf("%q: no family serves %s", query, name))
			continue
		}
		n := 0
	series:
		for _, m := range series {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if strings.HasSuffix(name, "_bucket") {
				labels["le"] = "+Inf" // a bucket series has le; the parsed histogram keeps it in its buckets
			}
			for _, matcher := range strings.Split(sel[2], ",") {
				mm := matcherRE.FindStringSubmatch(matcher)
				if mm == nil {
					problems = append(problems, fmt.Sprintf("%q: matcher %q not understood", query, matcher))
					continue series
				}
				if scrapeLabels[mm[1]] {
					continue
				}
				if !matches(labels[mm[1]], mm[2], mm[3]) {
					continue series
				}
			}
			for _, l := range by {
				if _, ok := labels[l]; !ok {
					problems = append(problems, fmt.Sprintf("%q: %s has no label %s to group by", query, name, l))
					continue series
				}
			}
			n++
		}
		total += n
	}
	return total, problems
}

// familyOf finds the family a series name belongs to (name_bucket, _sum and _count are a
// histogram's) and its series.
func familyOf(name string, scraped map[string]*dto.MetricFamily) (*dto.MetricFamily, []*dto.Metric) {
	if f, ok := scraped[name]; ok {
		return f, f.GetMetric()
	}
	for _, suffix := range []string{"_bucket", "_sum", "_count"} {
		if base, ok := strings.CutSuffix(name, suffix); ok {
			if f, ok := scraped[base]; ok && (f.GetType() == dto.MetricType_HISTOGRAM || suffix != "_bucket") {
				return f, f.GetMetric()
			}
		}
	}
	return nil, nil
}

// matches applies one PromQL label matcher; regular expressions are anchored, as PromQL's.
func matches(value, op, want string) bool {
	switch op {
	case "=":
		return value == want
	case "!=":
		return value != want
	}
	re := regexp.MustCompile("^(?:" + want + ")$")
	if op == "=~" {
		return re.MatchString(value)
	}
	return !re.MatchString(value)
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// kcmRegistry sets up, in this process, every controller kcm has (the default set, those off
// by default, the gated ones with their gates on) as kcm's main does, without starting them,
// and returns what component-base's legacy registry then holds: the families kcm's /metrics
// serves, series or not. A custom collector's type is "" (it shows only in what it collects).
// This test binary links every package kcm's binary links but its main package (go list -deps
// of both differ by main alone), so the families registered at package init are kcm's too, as
// long as main.go registers nothing itself. Only the controllers named here register theirs:
// with --allocate-node-cidrs node-ipam-controller, with DRAResourcePoolStatus
// resourcepoolstatusrequest-controller, selinux-warning-controller when named.
func kcmRegistry() map[string]upstreamFamily {
	GinkgoHelper()
	registry := controller.Registry()
	opts := options.New(setup.FlagsRead(registry)...)
	Expect(opts.Parse([]string{
		// kubeadm's --leader-elect: the elector's families are registered once it is made.
		"--leader-elect=true", "--secure-port=0", "--use-service-account-credentials=true",
		"--controllers=*,bootstrapsigner,tokencleaner,selinux-warning-controller",
		"--allocate-node-cidrs=true", "--cluster-cidr=10.244.0.0/16",
		"--feature-gates=DRAResourcePoolStatus=true",
	})).To(Succeed())
	sel, err := setup.Select(registry, opts.Controllers)
	Expect(err).NotTo(HaveOccurred())
	base, err := env.KubeadmConfig()
	Expect(err).NotTo(HaveOccurred())
	cfg := manager.RESTConfig(base, opts)
	mgr, err := manager.New(cfg, opts, setup.CacheRestrictions(registry))
	Expect(err).NotTo(HaveOccurred())
	sctx, err := setup.NewContext(mgr, opts, cfg)
	Expect(err).NotTo(HaveOccurred())
	_, err = setup.SetupEnabled(sctx, sel)
	Expect(err).NotTo(HaveOccurred())

	reg, ok := legacyregistry.Registerer().(*prometheus.Registry)
	Expect(ok).To(BeTrue(), "the legacy registry is a client_golang Registry")
	field := reflect.ValueOf(reg).Elem().FieldByName("collectorsByID")
	collectors := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem()
	out := map[string]upstreamFamily{}
	for iter := collectors.MapRange(); iter.Next(); {
		c := iter.Value().Interface().(prometheus.Collector)
		typ := collectorType(c)
		descs := make(chan *prometheus.Desc, 1000)
		c.Describe(descs)
		close(descs)
		for d := range descs {
			name, labels := descNameLabels(d)
			out[name] = upstreamFamily{typ: typ, labels: labels}
		}
	}
	return out
}

// collectorType is a component-base or client_golang metric's type by its Go type, "" for
// anything else (custom collectors).
func collectorType(c prometheus.Collector) string {
	switch c.(type) {
	case *metrics.Counter, *metrics.CounterVec, *prometheus.CounterVec:
		return "counter"
	case *metrics.Gauge, *metrics.GaugeVec, *prometheus.GaugeVec:
		return "gauge"
	case *metrics.Histogram, *metrics.HistogramVec, *prometheus.HistogramVec,
		*metrics.TimingHistogram, *metrics.TimingHistogramVec:
		return "histogram"
	case *metrics.Summary, *metrics.SummaryVec, *prometheus.SummaryVec:
		return "summary"
	}
	return ""
}

// descNameLabels reads a client_golang Desc's name and sorted label names (variable and
// constant), which it does not export.
func descNameLabels(d *prometheus.Desc) (string, []string) {
	v := reflect.ValueOf(d).Elem()
	get := func(field string) reflect.Value {
		f := v.FieldByName(field)
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	}
	var labels []string
	if vl := get("variableLabels"); !vl.IsNil() {
		names := vl.Elem().FieldByName("names")
		for i := 0; i < names.Len(); i++ {
			labels = append(labels, names.Index(i).String())
		}
	}
	for _, lp := range get("constLabelPairs").Interface().([]*dto.LabelPair) {
		labels = append(labels, lp.GetName())
	}
	sort.Strings(labels)
	return get("fqName").String(), labels
}
