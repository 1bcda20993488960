package metricsapi

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
)

// ServiceNamespace and ServiceName name the ExternalName Service the APIServices point at.
const (
	ServiceNamespace = "kube-system"
	ServiceName      = "kcm-test-metrics-api"
)

// The group-versions served, as metrics-server and the metrics adapters register them.
var groupVersions = []schema.GroupVersion{
	{Group: "metrics.k8s.io", Version: "v1beta1"},
	{Group: "custom.metrics.k8s.io", Version: "v1beta2"},
	{Group: "external.metrics.k8s.io", Version: "v1beta1"},
}

var apiServices = schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"}

func apiServiceName(gv schema.GroupVersion) string { return gv.Version + "." + gv.Group }

// register points the aggregator at this server and waits until the API server serves and
// advertises the three group-versions through it.
func (s *Server) register(ctx context.Context) error {
	if err := s.applyService(ctx); err != nil {
		return fmt.Errorf("creating Service %s/%s: %w", ServiceNamespace, ServiceName, err)
	}
	dyn, err := dynamic.NewForConfig(s.cfg)
	if err != nil {
		return err
	}
	for _, gv := range groupVersions {
		if err := s.applyAPIService(ctx, dyn, gv); err != nil {
			return fmt.Errorf("creating APIService %s: %w", apiServiceName(gv), err)
		}
	}
	disco, err := discovery.NewDiscoveryClientForConfig(s.cfg)
	if err != nil {
		return err
	}
	// The proxy answers once the availability controller marks an APIService Available; the
	// discovery document (which the custom metrics client reads to choose its version) is
	// merged separately, so both are awaited.
	var last error
	err = wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		last = s.served(ctx, disco)
		return last == nil, nil
	})
	if err != nil {
		return fmt.Errorf("the API server does not serve the metrics APIs through the aggregator: %w (last: %v)", err, last)
	}
	return nil
}

func (s *Server) served(ctx context.Context, disco *discovery.DiscoveryClient) error {
	for _, gv := range groupVersions {
		if err := disco.RESTClient().Get().AbsPath("/apis", gv.Group, gv.Version).Do(ctx).Error(); err != nil {
			return fmt.Errorf("GET /apis/%s: %w", gv, err)
		}
	}
	groups, err := disco.ServerGroups()
	if err != nil {
		return err
	}
	for _, gv := range groupVersions {
		if !slices.ContainsFunc(groups.Groups, func(g metav1.APIGroup) bool {
			return g.Name == gv.Group && slices.ContainsFunc(g.Versions, func(v metav1.GroupVersionForDiscovery) bool {
				return v.Version == gv.Version
			})
		}) {
			return fmt.Errorf("discovery does not list %s yet", gv)
		}
	}
	return nil
}

func (s *Server) applyService(ctx context.Context) error {
	svc := &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Namespace: ServiceNamespace, Name: ServiceName},
		Spec:       corev1.ServiceSpec{Type: corev1.ServiceTypeExternalName, ExternalName: "127.0.0.1"},
	}
	_, err := s.kube.CoreV1().Services(ServiceNamespace).Create(ctx, svc, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Left by a Server that was not stopped: the ExternalName is the same, the port is
		// the APIServices'.
		return nil
	}
	return err
}

func (s *Server) applyAPIService(ctx context.Context, dyn dynamic.Interface, gv schema.GroupVersion) error {
	obj := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "apiregistration.k8s.io/v1",
		"kind":       "APIService",
		"metadata":   map[string]any{"name": apiServiceName(gv)},
		"spec": map[string]any{
			"group":                 gv.Group,
			"version":               gv.Version,
			"insecureSkipTLSVerify": true,
			"groupPriorityMinimum":  int64(100),
			"versionPriority":       int64(100),
			"service": map[string]any{
				"namespace": ServiceNamespace,
				"name":      ServiceName,
				"port":      int64(s.port),
			},
		},
	}}
	cl := dyn.Resource(apiServices)
	_, err := cl.Create(ctx, obj, metav1.CreateOptions{})
	if !apierrors.IsAlreadyExists(err) {
		return err
	}
	// Left by a Server that was not stopped: point it at this one.
	old, err := cl.Get(ctx, apiServiceName(gv), metav1.GetOptions{})
	if err != nil {
		return err
	}
	obj.SetResourceVersion(old.GetResourceVersion())
	_, err = cl.Update(ctx, obj, metav1.UpdateOptions{})
	return err
}

func (s *Server) unregister(ctx context.Context) error {
	dyn, err := dynamic.NewForConfig(s.cfg)
	if err != nil {
		return err
	}
	for _, gv := range groupVersions {
		if err := dyn.Resource(apiServices).Delete(ctx, apiServiceName(gv), metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			return err
		}
	}
	err = s.kube.CoreV1().Services(ServiceNamespace).Delete(ctx, ServiceName, metav1.DeleteOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}
