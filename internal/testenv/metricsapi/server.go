// Package metricsapi is a metrics API server for tests: it serves metrics.k8s.io/v1beta1,
// custom.metrics.k8s.io/v1beta2 and external.metrics.k8s.io/v1beta1 with values the test sets,
// and registers itself with a real kube-apiserver as those three APIServices, so that a
// controller (the horizontal-pod-autoscaler) reads them through the aggregation layer with
// k8s.io/metrics' clients exactly as it reads metrics-server or a metrics adapter.
//
// How the API server reaches it: the server listens on HTTPS at 127.0.0.1:<free port> with a
// self-signed certificate; each APIService (insecureSkipTLSVerify) names the Service
// kube-system/kcm-test-metrics-api and that port. The Service is of type ExternalName with
// externalName 127.0.0.1: the aggregator resolves an ExternalName Service to
// https://<externalName>:<APIService port> and dials it itself (k8s.io/apiserver's
// proxy.ResolveCluster; its availability check skips the endpoint lookup it makes for a
// ClusterIP Service), so neither kube-proxy nor endpoints are needed. The API server must run
// on the same host; it needs no flag beyond envtest's defaults: without
// --proxy-client-cert-file the aggregator proxies without a client certificate, and this
// server authenticates nobody.
package metricsapi

import (
	"context"
	"crypto/tls"
	"fmt"
	"net"
	"net/http"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/cert"
)

// Window is the window every sample reports: metrics-server's default resolution.
const Window = 30 * time.Second

// Server is a running metrics API server registered with one API server.
type Server struct {
	cfg  *rest.Config
	kube kubernetes.Interface
	http *http.Server
	port int32

	mu sync.Mutex
	// podMetrics are the samples SetPodMetrics gave, by namespace/pod; a nil entry is a pod
	// DeletePodMetrics removed, which reports nothing even where a usage selector matches it.
	podMetrics map[string]*podSample
	podUsage   []podUsage
	podsMetric []podsMetric
	objects    map[objectKey]resource.Quantity
	external   []externalMetric
	requests   int
}

type podSample struct {
	containers map[string]corev1.ResourceList
	// timestamp is zero for a sample that carries the time of each query.
	timestamp time.Time
}

type podUsage struct {
	namespace    string
	selector     labels.Selector
	perContainer corev1.ResourceList
}

type podsMetric struct {
	namespace, metric string
	selector          labels.Selector
	value             resource.Quantity
}

type objectKey struct {
	namespace, resource, name, metric string
}

type externalMetric struct {
	namespace, metric string
	labels            map[string]string
	value             resource.Quantity
}

// Start serves the three metrics APIs on 127.0.0.1 and registers them with the API server cfg
// reaches (as an administrator: it creates the Service and the APIServices, and lists pods
// live for the usage selectors). It returns once the API server answers all three
// group-versions through the aggregator and lists them in its discovery. The registration is
// cluster-wide: start one Server per API server, and Stop it before the API server stops.
func Start(ctx context.Context, cfg *rest.Config) (*Server, error) {
	kube, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	certPEM, keyPEM, err := cert.GenerateSelfSignedCertKey("127.0.0.1", []net.IP{net.ParseIP("127.0.0.1")}, []string{"localhost"})
	if err != nil {
		return nil, fmt.Errorf("generating the serving certificate: %w", err)
	}
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		return nil, err
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	s := &Server{
		cfg:        rest.CopyConfig(cfg),
		kube:       kube,
		port:       int32(lis.Addr().(*net.TCPAddr).Port),
		podMetrics: map[string]*podSample{},
		objects:    map[objectKey]resource.Quantity{},
	}
	s.http = &http.Server{
		Handler:           s,
		TLSConfig:         &tls.Config{Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12},
		ReadHeaderTimeout: 10 * time.Second,
	}
	go func() { _ = s.http.ServeTLS(lis, "", "") }()
	if err := s.register(ctx); err != nil {
		s.Stop()
		return nil, err
	}
	return s, nil
}

// Port is the port the server listens on at 127.0.0.1.
func (s *Server) Port() int32 { return s.port }

// SetPodMetrics makes the pod report this usage per container (metrics.k8s.io), with
// Window; each answer carries the time of the query, as a freshly scraped sample.
func (s *Server) SetPodMetrics(namespace, pod string, containers map[string]corev1.ResourceList) {
	s.SetPodMetricsAt(namespace, pod, containers, time.Time{})
}

// SetPodMetricsAt is SetPodMetrics with a fixed sample time (zero: the time of each query),
// for a sample older than a pod's readiness.
func (s *Server) SetPodMetricsAt(namespace, pod string, containers map[string]corev1.ResourceList, timestamp time.Time) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podMetrics[namespace+"/"+pod] = &podSample{containers: containers, timestamp: timestamp}
}

// SetPodUsage makes every pod of namespace matching selector (listed live at each query)
// report perContainer for each of its containers, unless SetPodMetrics or DeletePodMetrics
// said otherwise for that pod. A later call for the same namespace and selector replaces it;
// where several match a pod, the latest set wins.
func (s *Server) SetPodUsage(namespace string, selector labels.Selector, perContainer corev1.ResourceList) {
	s.mu.Lock()
	defer s.mu.Unlock()
	u := podUsage{namespace: namespace, selector: selector, perContainer: perContainer}
	for i, old := range s.podUsage {
		if old.namespace == namespace && old.selector.String() == selector.String() {
			s.podUsage = append(s.podUsage[:i], s.podUsage[i+1:]...)
			break
		}
	}
	s.podUsage = append(s.podUsage, u)
}

// DeletePodMetrics makes the pod report no metrics at all (as metrics-server before its first
// scrape of a pod), whatever SetPodUsage says; SetPodMetrics brings it back.
func (s *Server) DeletePodMetrics(namespace, pod string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.podMetrics[namespace+"/"+pod] = nil
}

// SetPodsMetric sets the custom.metrics.k8s.io metric of every pod of namespace matching
// selector (listed live at each query): a Pods metric source's per-pod value. A later call
// for the same namespace, selector and metric replaces it; the latest matching set wins.
func (s *Server) SetPodsMetric(namespace string, selector labels.Selector, metric string, value resource.Quantity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	m := podsMetric{namespace: namespace, metric: metric, selector: selector, value: value}
	for i, old := range s.podsMetric {
		if old.namespace == namespace && old.metric == metric && old.selector.String() == selector.String() {
			s.podsMetric = append(s.podsMetric[:i], s.podsMetric[i+1:]...)
			break
		}
	}
	s.podsMetric = append(s.podsMetric, m)
}

// SetObjectMetric sets the custom.metrics.k8s.io metric of one object (an Object metric
// source): namespace "" for a cluster-scoped object; a Namespace is gr {"", "namespaces"},
// its name the namespace's.
func (s *Server) SetObjectMetric(namespace string, gr schema.GroupResource, name, metric string, value resource.Quantity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.objects[objectKey{namespace: namespace, resource: gr.String(), name: name, metric: metric}] = value
}

// SetExternalMetric sets one series of an external.metrics.k8s.io metric in namespace,
// identified by its labels: a query answers every series of the metric whose labels match
// its labelSelector. Setting the same labels again replaces the value.
func (s *Server) SetExternalMetric(namespace, metric string, lbls map[string]string, value resource.Quantity) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for i, old := range s.external {
		if old.namespace == namespace && old.metric == metric && labels.Equals(old.labels, lbls) {
			s.external[i].value = value
			return
		}
	}
	s.external = append(s.external, externalMetric{namespace: namespace, metric: metric, labels: lbls, value: value})
}

// Requests is how many metric queries the server has answered, in all three groups, found or
// not; discovery requests (which the aggregator makes on its own schedule) are not counted.
func (s *Server) Requests() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.requests
}

// Stop unregisters the three APIServices and the Service, so that the API server's discovery
// does not keep groups nobody serves (the namespace controller and the garbage collector
// stall on a discovery failure), and closes the server.
func (s *Server) Stop() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	// Best effort: in a suite's teardown the API server may already be gone.
	_ = s.unregister(ctx)
	_ = s.http.Close()
}
