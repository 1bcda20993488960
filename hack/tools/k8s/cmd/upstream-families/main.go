// Command upstream-families prints every metric family upstream kube-controller-manager
// v1.37.1 registers in component-base's legacy registry, the registry its /metrics serves:
// name, type, stability, label names, and the step of upstream's startup that registers it.
// `make upstream-families` writes it to test/process/testdata/upstream-families.txt, the list
// the family test checks kcm's /metrics against.
//
// It registers as upstream does, without an API server: importing what upstream's main
// imports runs the package initialisers (client-go's rest_client_* and workqueue providers,
// node_collector_*, go_* and process_*, and whatever the linked k8s.io/apiserver packages
// register); the steps below then call what upstream's Run calls before its controllers (the
// options' Config, which builds the delegated authentication and authorization; the feature
// and version families; named informers; running_managed_controllers; the leader elector) and
// each controller's registration, with the upstream file and line that calls it. The families
// are read from the registry's collectors, not from a Gather: a vector without children is
// registered yet gathers nothing.
package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"fmt"
	"net"
	"os"
	"reflect"
	"sort"
	"strings"
	"time"
	_ "time/tzdata" // as upstream's main
	"unsafe"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"k8s.io/apiserver/pkg/server/dynamiccertificates"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
	certutil "k8s.io/client-go/util/cert"
	basecompatibility "k8s.io/component-base/compatibility"
	"k8s.io/component-base/featuregate"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	// The blank imports of upstream's main (cmd/kube-controller-manager/controller-manager.go).
	_ "k8s.io/component-base/logs/json/register"
	_ "k8s.io/component-base/metrics/prometheus/clientgo"
	"k8s.io/component-base/metrics/prometheus/clientgo/fifo"
	controllersmetrics "k8s.io/component-base/metrics/prometheus/controllers"
	_ "k8s.io/component-base/metrics/prometheus/version"
	esmetrics "k8s.io/endpointslice/metrics"
	"k8s.io/klog/v2"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app"
	"k8s.io/kubernetes/cmd/kube-controller-manager/app/options"
	"k8s.io/kubernetes/pkg/controller/certificates/clustertrustbundlepublisher"
	"k8s.io/kubernetes/pkg/controller/certificates/rootcacertpublisher"
	cronjobmetrics "k8s.io/kubernetes/pkg/controller/cronjob/metrics"
	daemonmetrics "k8s.io/kubernetes/pkg/controller/daemon/metrics"
	dtemetrics "k8s.io/kubernetes/pkg/controller/devicetainteviction/metrics"
	esmmetrics "k8s.io/kubernetes/pkg/controller/endpointslicemirroring/metrics"
	gcmetrics "k8s.io/kubernetes/pkg/controller/garbagecollector/metrics"
	jobmetrics "k8s.io/kubernetes/pkg/controller/job/metrics"
	"k8s.io/kubernetes/pkg/controller/nodeipam/ipam/cidrset"
	"k8s.io/kubernetes/pkg/controller/nodelifecycle"
	hpamonitor "k8s.io/kubernetes/pkg/controller/podautoscaler/monitor"
	podgcmetrics "k8s.io/kubernetes/pkg/controller/podgc/metrics"
	rsmetrics "k8s.io/kubernetes/pkg/controller/replicaset/metrics"
	"k8s.io/kubernetes/pkg/controller/resourceclaim"
	rprmetrics "k8s.io/kubernetes/pkg/controller/resourcepoolstatusrequest/metrics"
	stsmetrics "k8s.io/kubernetes/pkg/controller/statefulset/metrics"
	tainteviction "k8s.io/kubernetes/pkg/controller/tainteviction/metrics"
	ttlafmetrics "k8s.io/kubernetes/pkg/controller/ttlafterfinished/metrics"
	admetrics "k8s.io/kubernetes/pkg/controller/volume/attachdetach/metrics"
	ephemeralmetrics "k8s.io/kubernetes/pkg/controller/volume/ephemeral/metrics"
	pvmetrics "k8s.io/kubernetes/pkg/controller/volume/persistentvolume/metrics"
	"k8s.io/kubernetes/pkg/controller/volume/selinuxwarning"
	"k8s.io/kubernetes/pkg/volume/csimigration"
	volumeutil "k8s.io/kubernetes/pkg/volume/util"
)

// step is one part of upstream's startup that registers families; the families first seen
// after it are attributed to its name.
type step struct {
	name string
	run  func() error
}

func main() {
	clientset := fake.NewClientset()
	factory := informers.NewSharedInformerFactory(clientset, 0)
	logger := klog.Background()
	steps := []step{
		// Package initialisers of upstream's binary (its main's imports and theirs).
		{"init", func() error { return nil }},
		// cmd/kube-controller-manager/app/controllermanager.go:148-157 (RunE): the options'
		// Config builds the serving, delegated authentication and authorization; then the
		// feature-gate and component-version families.
		{"startup", kubeControllerManager},
		// controllermanager.go:546-551 (CreateControllerContext): the shared informers are
		// named, and client-go's informer metrics provider registers its families with the
		// first named informer's metrics.
		{"startup", do(fifo.Register)},
		// controllermanager.go:611 (CreateControllerContext).
		{"startup", do(controllersmetrics.Register)},
		// controllermanager.go leaderElectAndRun (--leader-elect, on by default): the leader
		// elector's metric registers client-go's leader-election families.
		{"startup", leaderElection},
		// The controllers' registrations, each where upstream's constructor calls it.
		{"cronjob-controller", do(cronjobmetrics.Register)},                                            // cronjob_controllerv2.go:151
		{"daemonset-controller", do(daemonmetrics.Register)},                                           // daemon_controller.go:289
		{"device-taint-eviction-controller", do(dtemetrics.Register)},                                  // device_taint_eviction.go:739
		{"endpointslice-controller", do(esmetrics.RegisterMetrics)},                                    // endpointslice_controller.go:96
		{"endpointslice-mirroring-controller", do(esmmetrics.RegisterMetrics)},                         // endpointslicemirroring_controller.go:83
		{"ephemeral-volume-controller", do(ephemeralmetrics.RegisterMetrics)},                          // volume/ephemeral/controller.go:98
		{"garbage-collector-controller", do(gcmetrics.Register)},                                       // garbagecollector.go:116
		{"horizontal-pod-autoscaler-controller", do(hpamonitor.Register)},                              // podautoscaler/horizontal.go:218
		{"job-controller", do(jobmetrics.Register)},                                                    // job_controller.go:319
		{"node-lifecycle-controller", do(nodelifecycle.Register)},                                      // node_lifecycle_controller.go:70
		{"pod-garbage-collector-controller", do(podgcmetrics.RegisterMetrics)},                         // gc_controller.go:90
		{"replicaset-controller", func() error { return rsmetrics.Register(legacyregistry.Register) }}, // replica_set.go:158
		{"resourcepoolstatusrequest-controller", do(rprmetrics.Register)},                              // resourcepoolstatusrequest/controller.go:130
		{"statefulset-controller", do(stsmetrics.Register)},                                            // stateful_set.go:126
		{"taint-eviction-controller", do(tainteviction.Register)},                                      // taint_eviction.go:187
		{"ttl-after-finished-controller", do(ttlafmetrics.Register)},                                   // ttlafterfinished_controller.go:78
		// persistentvolume/pv_controller_base.go:343-344; the collector reads the listers
		// only when collected.
		{"persistentvolume-binder-controller", func() error {
			pvmetrics.Register(nil, nil, nil)
			volumeutil.RegisterMetrics()
			return nil
		}},
		// attach_detach_controller.go:367.
		{"persistentvolume-attach-detach-controller", func() error {
			admetrics.Register(nil, nil, nil, nil, nil, nil, csimigration.PluginManager{}, nil)
			return nil
		}},
		// selinux_warning_controller.go:176.
		{"selinux-warning-controller", func() error { selinuxwarning.RegisterMetrics(logger, nil); return nil }},
		// node-ipam's range allocator: cidr_set.go:87 (NewCIDRSet).
		{"node-ipam-controller", func() error {
			_, cidr, _ := net.ParseCIDR("10.244.0.0/16")
			_, err := cidrset.NewCIDRSet(cidr, 24)
			return err
		}},
		// rootcacertpublisher/publisher.go:49 (NewPublisher).
		{"root-ca-certificate-publisher-controller", func() error {
			_, err := rootcacertpublisher.NewPublisher(factory.Core().V1().ConfigMaps(), factory.Core().V1().Namespaces(), clientset, []byte("ca"))
			return err
		}},
		// clustertrustbundlepublisher/publisher.go:50.
		{"kube-apiserver-serving-clustertrustbundle-publisher-controller", func() error {
			ca, err := dynamiccertificates.NewStaticCAContent("ca", selfSignedCA())
			if err != nil {
				return err
			}
			_, err = clustertrustbundlepublisher.NewGAClusterTrustBundlePublisher("kubernetes.io/kube-apiserver-serving", ca, clientset)
			return err
		}},
		// resourceclaim/controller.go:246-247 (NewController): the claim collector is built
		// there, from the informers.
		{"resourceclaim-controller", func() error {
			_, err := resourceclaim.NewController(logger, clientset, factory.Core().V1().Pods(),
				factory.Scheduling().V1beta1().PodGroups(), factory.Resource().V1().ResourceClaims(),
				factory.Resource().V1().ResourceClaimTemplates())
			return err
		}},
	}

	origin := map[string]string{}
	for _, s := range steps {
		if err := s.run(); err != nil {
			fmt.Fprintf(os.Stderr, "%s: %v\n", s.name, err)
			os.Exit(1)
		}
		for name := range describeAll() {
			if _, ok := origin[name]; !ok {
				origin[name] = s.name
			}
		}
	}
	families := describeAll()
	names := make([]string, 0, len(families))
	for name := range families {
		names = append(names, name)
	}
	sort.Strings(names)
	var b strings.Builder
	b.WriteString("# Generated by hack/tools/k8s/cmd/upstream-families (make upstream-families) from\n")
	b.WriteString("# k8s.io/kubernetes v1.37.1. DO NOT EDIT.\n")
	b.WriteString("# Every metric family upstream kube-controller-manager registers in the registry its /metrics\n")
	b.WriteString("# serves when every controller that registers families runs (selinux-warning-controller, off\n")
	b.WriteString("# by default, and resourcepoolstatusrequest-controller, behind DRAResourcePoolStatus,\n")
	b.WriteString("# included): name, type, stability (- outside component-base's stability framework), label\n")
	b.WriteString("# names (- for none; le and quantile left out), and what registers it: init (a package\n")
	b.WriteString("# initialiser), startup (Run, before the controllers) or the controller.\n")
	for _, name := range names {
		f := families[name]
		labels := "-"
		if len(f.labels) > 0 {
			labels = strings.Join(f.labels, ",")
		}
		fmt.Fprintf(&b, "%s\t%s\t%s\t%s\t%s\n", name, f.typ, f.stability, labels, origin[name])
	}
	if _, err := os.Stdout.WriteString(b.String()); err != nil {
		os.Exit(1)
	}
}

func do(register func()) func() error {
	return func() error { register(); return nil }
}

// kubeControllerManager does what upstream's RunE does before Run: Config from default
// options (with a kubeconfig naming an API server that is never contacted), then the
// feature-gate and component-version families.
func kubeControllerManager() error {
	dir, err := os.MkdirTemp("", "upstream-families-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	kubeconfig := dir + "/kubeconfig"
	if err := os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://127.0.0.1:1", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: t}}]
contexts: [{name: c, context: {cluster: c, user: u}}]
current-context: c
`), 0o600); err != nil {
		return err
	}
	s, err := options.NewKubeControllerManagerOptions()
	if err != nil {
		return err
	}
	s.Master = ""
	s.Generic.ClientConnection.Kubeconfig = kubeconfig
	// kubeadm's: the delegated authentication and authorization through this kubeconfig.
	s.Authentication.RemoteKubeConfigFile = kubeconfig
	s.Authorization.RemoteKubeConfigFile = kubeconfig
	// kubeadm's --client-ca-file and --requestheader-client-ca-file: no lookup of the
	// extension-apiserver-authentication ConfigMap.
	ca := dir + "/ca.crt"
	if err := os.WriteFile(ca, selfSignedCA(), 0o600); err != nil {
		return err
	}
	s.Authentication.ClientCert.ClientCA = ca
	s.Authentication.RequestHeader.ClientCAFile = ca
	s.SecureServing.ServerCert.CertDirectory = dir
	if _, err := s.Config(context.Background(), app.KnownControllers(), app.ControllersDisabledByDefault(), app.ControllerAliases()); err != nil {
		return err
	}
	fg := s.ComponentGlobalsRegistry.FeatureGateFor(basecompatibility.DefaultKubeComponent)
	fg.(featuregate.MutableFeatureGate).AddMetrics()
	s.ComponentGlobalsRegistry.AddMetrics()
	return nil
}

// leaderElection builds upstream's leader elector (a Lease lock, never run): its
// constructor asks client-go's metrics provider for the leader metric.
func leaderElection() error {
	lock, err := resourcelock.New(resourcelock.LeasesResourceLock, "kube-system", "kube-controller-manager",
		nil, fake.NewClientset().CoordinationV1(), resourcelock.ResourceLockConfig{Identity: "id"})
	if err != nil {
		return err
	}
	_, err = leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: lock, Name: "kube-controller-manager",
		LeaseDuration: 15 * time.Second, RenewDeadline: 10 * time.Second, RetryPeriod: 2 * time.Second,
		Callbacks: leaderelection.LeaderCallbacks{OnStartedLeading: func(context.Context) {}, OnStoppedLeading: func() {}},
	})
	return err
}

// family is one registered metric family.
type family struct {
	typ, stability string
	labels         []string
}

// describeAll reads every collector registered in the legacy registry: its descriptors give
// the name, the help (which carries component-base's stability) and the label names; the
// type comes from the collector's Go type, or from what it collects when it is a custom one.
func describeAll() map[string]family {
	reg := legacyregistry.Registerer().(*prometheus.Registry)
	field := reflect.ValueOf(reg).Elem().FieldByName("collectorsByID")
	collectors := reflect.NewAt(field.Type(), unsafe.Pointer(field.UnsafeAddr())).Elem()
	out := map[string]family{}
	iter := collectors.MapRange()
	for iter.Next() {
		c := iter.Value().Interface().(prometheus.Collector)
		collected := map[string]string{}
		if _, custom := c.(metrics.StableCollector); !custom {
			// A custom collector collects in a goroutine of its own, from listers given nil
			// above: its families' types are in customTypes.
			collected = collect(c)
		}
		descs := make(chan *prometheus.Desc, 1000)
		c.Describe(descs)
		close(descs)
		for d := range descs {
			name, help, labels := descFields(d)
			typ := collected[name]
			if typ == "" {
				typ = goType(c)
			}
			if typ == "" {
				typ = customTypes[name]
			}
			if typ == "" {
				fmt.Fprintf(os.Stderr, "no type for %s (%T)\n", name, c)
				typ = "unknown"
			}
			out[name] = family{typ: typ, stability: stability(help), labels: labels}
		}
	}
	return out
}

// customTypes are the types of the families custom collectors report only from objects
// they list (nothing without an API server), as their CollectWithStability writes them.
var customTypes = map[string]string{
	// k8s.io/apiserver/pkg/storage/storagebackend/factory/etcd3.go:88 registers
	// go-grpc-middleware's client metrics (providers/prometheus/client_metrics.go:
	// CounterVecs) at init; upstream never dials etcd, so they never have children.
	"grpc_client_started_total":      "counter",
	"grpc_client_handled_total":      "counter",
	"grpc_client_msg_received_total": "counter",
	"grpc_client_msg_sent_total":     "counter",
	// k8s.io/apiserver/pkg/util/configmetrics/info_collector.go:91 (GaugeValue).
	"apiserver_encryption_config_controller_last_config_info": "gauge",
	// pkg/controller/volume/persistentvolume/metrics/metrics.go:221-272 (GaugeValue).
	"pv_collector_bound_pv_count":    "gauge",
	"pv_collector_unbound_pv_count":  "gauge",
	"pv_collector_total_pv_count":    "gauge",
	"pv_collector_bound_pvc_count":   "gauge",
	"pv_collector_unbound_pvc_count": "gauge",
	// pkg/controller/volume/attachdetach/metrics/metrics.go:147-160 (GaugeValue).
	"storage_count_attachable_volumes_in_use": "gauge",
	"attachdetach_controller_total_volumes":   "gauge",
	// pkg/controller/volume/selinuxwarning/metrics.go:63 (GaugeValue).
	"selinux_warning_controller_selinux_volume_conflict": "gauge",
	// pkg/controller/resourceclaim/controller.go:1952 (GaugeValue).
	"dynamic_resource_allocation_resource_claims": "gauge",
}

// collect returns the type of each family the collector reports now.
func collect(c prometheus.Collector) (types map[string]string) {
	types = map[string]string{}
	ch := make(chan prometheus.Metric, 10000)
	c.Collect(ch)
	close(ch)
	for m := range ch {
		var pb dto.Metric
		if err := m.Write(&pb); err != nil {
			continue
		}
		name, _, _ := descFields(m.Desc())
		switch {
		case pb.Counter != nil:
			types[name] = "counter"
		case pb.Gauge != nil:
			types[name] = "gauge"
		case pb.Histogram != nil:
			types[name] = "histogram"
		case pb.Summary != nil:
			types[name] = "summary"
		default:
			types[name] = "untyped"
		}
	}
	return types
}

// goType is the type of a component-base or client_golang metric by its Go type.
func goType(c prometheus.Collector) string {
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

// descFields reads a client_golang Desc's name, help and label names (variable labels in
// order, then constant ones), which it does not export.
func descFields(d *prometheus.Desc) (name, help string, labels []string) {
	v := reflect.ValueOf(d).Elem()
	get := func(field string) reflect.Value {
		f := v.FieldByName(field)
		return reflect.NewAt(f.Type(), unsafe.Pointer(f.UnsafeAddr())).Elem()
	}
	name = get("fqName").String()
	help = get("help").String()
	if vl := get("variableLabels"); !vl.IsNil() {
		names := vl.Elem().FieldByName("names")
		for i := 0; i < names.Len(); i++ {
			labels = append(labels, names.Index(i).String())
		}
	}
	var constant []string
	for _, lp := range get("constLabelPairs").Interface().([]*dto.LabelPair) {
		constant = append(constant, lp.GetName())
	}
	sort.Strings(constant)
	return name, help, append(labels, constant...)
}

// stability reads component-base's "[ALPHA] " help prefix.
func stability(help string) string {
	if strings.HasPrefix(help, "[") {
		if i := strings.Index(help, "]"); i > 0 {
			return help[1:i]
		}
	}
	return "-"
}

// selfSignedCA is a CA certificate in PEM for the trust-bundle publisher's constructor.
func selfSignedCA() []byte {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		panic(err)
	}
	cert, err := certutil.NewSelfSignedCACert(certutil.Config{CommonName: "ca"}, key)
	if err != nil {
		panic(err)
	}
	pem, err := certutil.EncodeCertificates(cert)
	if err != nil {
		panic(err)
	}
	return pem
}
