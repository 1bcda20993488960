package metricsapi

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	custommetricsv1beta2 "k8s.io/metrics/pkg/apis/custom_metrics/v1beta2"
	externalmetricsv1beta1 "k8s.io/metrics/pkg/apis/external_metrics/v1beta1"
	metricsv1beta1 "k8s.io/metrics/pkg/apis/metrics/v1beta1"
	"k8s.io/utils/ptr"
)

// ServeHTTP answers the aggregator: discovery of each group-version, then the paths
// k8s.io/metrics' clients call. Everything else (/apis, /openapi/...) is 404, which the
// aggregator takes as "no aggregated discovery, no OpenAPI" and falls back to
// /apis/<group>/<version>.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet {
		writeError(w, apierrors.NewMethodNotSupported(schema.GroupResource{}, r.Method))
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	if len(parts) < 3 || parts[0] != "apis" {
		http.NotFound(w, r)
		return
	}
	gv := schema.GroupVersion{Group: parts[1], Version: parts[2]}
	rest := parts[3:]
	if len(rest) == 0 {
		s.discovery(w, r, gv)
		return
	}
	s.mu.Lock()
	s.requests++
	s.mu.Unlock()
	query := r.URL.Query()
	selector, err := labels.Parse(query.Get("labelSelector"))
	if err != nil {
		writeError(w, apierrors.NewBadRequest(err.Error()))
		return
	}
	switch gv {
	case groupVersions[0]:
		s.resourceMetrics(w, r, rest, selector)
	case groupVersions[1]:
		s.customMetrics(w, r, rest, selector, query.Get("metricLabelSelector"))
	case groupVersions[2]:
		s.externalMetrics(w, r, rest, selector)
	default:
		http.NotFound(w, r)
	}
}

// discovery lists each group-version's resources as metrics-server and the metrics adapters
// do: get and list only, so that no controller (garbage collector, quota, namespace
// deletion) takes them for objects to watch or delete.
func (s *Server) discovery(w http.ResponseWriter, r *http.Request, gv schema.GroupVersion) {
	var resources []metav1.APIResource
	switch gv {
	case groupVersions[0]:
		resources = []metav1.APIResource{
			{Name: "nodes", Kind: "NodeMetrics", Verbs: metav1.Verbs{"get", "list"}},
			{Name: "pods", Namespaced: true, Kind: "PodMetrics", Verbs: metav1.Verbs{"get", "list"}},
		}
	case groupVersions[1]:
		resources = []metav1.APIResource{
			{Name: "pods/*", Namespaced: true, Kind: "MetricValueList", Verbs: metav1.Verbs{"get"}},
			{Name: "namespaces/*", Kind: "MetricValueList", Verbs: metav1.Verbs{"get"}},
		}
	case groupVersions[2]:
		resources = []metav1.APIResource{
			{Name: "*", Namespaced: true, Kind: "ExternalMetricValueList", Verbs: metav1.Verbs{"get"}},
		}
	default:
		http.NotFound(w, r)
		return
	}
	writeJSON(w, http.StatusOK, &metav1.APIResourceList{
		TypeMeta:     metav1.TypeMeta{APIVersion: "v1", Kind: "APIResourceList"},
		GroupVersion: gv.String(),
		APIResources: resources,
	})
}

// resourceMetrics serves metrics.k8s.io/v1beta1: pods listed by namespace (or all) with a
// label selector, one pod by name, and nodes (none reported).
func (s *Server) resourceMetrics(w http.ResponseWriter, r *http.Request, rest []string, selector labels.Selector) {
	namespace := ""
	if len(rest) >= 2 && rest[0] == "namespaces" {
		namespace, rest = rest[1], rest[2:]
	}
	switch {
	case len(rest) == 1 && rest[0] == "nodes":
		writeJSON(w, http.StatusOK, &metricsv1beta1.NodeMetricsList{
			TypeMeta: metav1.TypeMeta{APIVersion: groupVersions[0].String(), Kind: "NodeMetricsList"},
			Items:    []metricsv1beta1.NodeMetrics{},
		})
	case len(rest) == 2 && rest[0] == "nodes":
		writeError(w, apierrors.NewNotFound(schema.GroupResource{Group: groupVersions[0].Group, Resource: "nodes"}, rest[1]))
	case len(rest) == 1 && rest[0] == "pods":
		pods, err := s.pods(r, namespace, selector)
		if err != nil {
			writeError(w, err)
			return
		}
		list := &metricsv1beta1.PodMetricsList{
			TypeMeta: metav1.TypeMeta{APIVersion: groupVersions[0].String(), Kind: "PodMetricsList"},
			Items:    []metricsv1beta1.PodMetrics{},
		}
		for i := range pods {
			if m, ok := s.podMetricsOf(&pods[i]); ok {
				list.Items = append(list.Items, m)
			}
		}
		writeJSON(w, http.StatusOK, list)
	case len(rest) == 2 && rest[0] == "pods" && namespace != "":
		pod, err := s.kube.CoreV1().Pods(namespace).Get(r.Context(), rest[1], metav1.GetOptions{})
		if err != nil {
			writeError(w, err)
			return
		}
		m, ok := s.podMetricsOf(pod)
		if !ok {
			writeError(w, apierrors.NewNotFound(schema.GroupResource{Group: groupVersions[0].Group, Resource: "pods"}, rest[1]))
			return
		}
		writeJSON(w, http.StatusOK, &m)
	default:
		http.NotFound(w, r)
	}
}

// podMetricsOf is the pod's sample: SetPodMetrics' own, else the latest SetPodUsage matching
// it, one entry per container of its spec; none after DeletePodMetrics.
func (s *Server) podMetricsOf(pod *corev1.Pod) (metricsv1beta1.PodMetrics, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	now := time.Now()
	m := metricsv1beta1.PodMetrics{
		TypeMeta:   metav1.TypeMeta{APIVersion: groupVersions[0].String(), Kind: "PodMetrics"},
		ObjectMeta: metav1.ObjectMeta{Namespace: pod.Namespace, Name: pod.Name, Labels: pod.Labels},
		Timestamp:  metav1.NewTime(now),
		Window:     metav1.Duration{Duration: Window},
	}
	if sample, set := s.podMetrics[pod.Namespace+"/"+pod.Name]; set {
		if sample == nil {
			return m, false
		}
		if !sample.timestamp.IsZero() {
			m.Timestamp = metav1.NewTime(sample.timestamp)
		}
		names := make([]string, 0, len(sample.containers))
		for name := range sample.containers {
			names = append(names, name)
		}
		sort.Strings(names)
		for _, name := range names {
			m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: name, Usage: sample.containers[name].DeepCopy()})
		}
		return m, true
	}
	for i := len(s.podUsage) - 1; i >= 0; i-- {
		u := s.podUsage[i]
		if u.namespace != pod.Namespace || !u.selector.Matches(labels.Set(pod.Labels)) {
			continue
		}
		for _, c := range pod.Spec.Containers {
			m.Containers = append(m.Containers, metricsv1beta1.ContainerMetrics{Name: c.Name, Usage: u.perContainer.DeepCopy()})
		}
		return m, true
	}
	return m, false
}

// customMetrics serves custom.metrics.k8s.io/v1beta2: a metric of one object
// (/namespaces/<ns>/<resource>/<name>/<metric>, or without the namespace for a cluster-scoped
// object, /namespaces/<name>/metrics/<metric> for a namespace) and of the pods matching a
// selector (/namespaces/<ns>/pods/*/<metric>?labelSelector=).
func (s *Server) customMetrics(w http.ResponseWriter, r *http.Request, rest []string, selector labels.Selector, metricSelector string) {
	var metricLabels *metav1.LabelSelector
	if metricSelector != "" {
		ls, err := metav1.ParseToLabelSelector(metricSelector)
		if err != nil {
			writeError(w, apierrors.NewBadRequest(err.Error()))
			return
		}
		metricLabels = ls
	}
	namespace := ""
	switch {
	case len(rest) == 4 && rest[0] == "namespaces" && rest[2] == "metrics":
		// A namespace's own metric: the object is the namespace.
		rest = []string{"namespaces", rest[1], rest[3]}
	case len(rest) == 5 && rest[0] == "namespaces":
		namespace, rest = rest[1], rest[2:]
	}
	if len(rest) != 3 {
		http.NotFound(w, r)
		return
	}
	resourceName, name, metric := rest[0], rest[1], rest[2]
	list := &custommetricsv1beta2.MetricValueList{
		TypeMeta: metav1.TypeMeta{APIVersion: groupVersions[1].String(), Kind: "MetricValueList"},
		Items:    []custommetricsv1beta2.MetricValue{},
	}
	value := func(kind, apiVersion, namespace, name string) custommetricsv1beta2.MetricValue {
		return custommetricsv1beta2.MetricValue{
			DescribedObject: corev1.ObjectReference{Kind: kind, APIVersion: apiVersion, Namespace: namespace, Name: name},
			Metric:          custommetricsv1beta2.MetricIdentifier{Name: metric, Selector: metricLabels},
			Timestamp:       metav1.Now(),
			WindowSeconds:   ptr.To(int64(Window / time.Second)),
		}
	}
	if resourceName == "pods" && namespace != "" {
		var pods []corev1.Pod
		if name == custommetricsv1beta2.AllObjects {
			var err error
			if pods, err = s.pods(r, namespace, selector); err != nil {
				writeError(w, err)
				return
			}
		} else {
			pod, err := s.kube.CoreV1().Pods(namespace).Get(r.Context(), name, metav1.GetOptions{})
			if err != nil {
				writeError(w, err)
				return
			}
			pods = []corev1.Pod{*pod}
		}
		s.mu.Lock()
		for _, pod := range pods {
			for i := len(s.podsMetric) - 1; i >= 0; i-- {
				m := s.podsMetric[i]
				if m.namespace == namespace && m.metric == metric && m.selector.Matches(labels.Set(pod.Labels)) {
					v := value("Pod", "v1", namespace, pod.Name)
					v.Value = m.value.DeepCopy()
					list.Items = append(list.Items, v)
					break
				}
			}
		}
		s.mu.Unlock()
		if name != custommetricsv1beta2.AllObjects && len(list.Items) == 0 {
			writeError(w, apierrors.NewNotFound(schema.GroupResource{Group: groupVersions[1].Group, Resource: resourceName}, name+"/"+metric))
			return
		}
		writeJSON(w, http.StatusOK, list)
		return
	}
	s.mu.Lock()
	q, ok := s.objects[objectKey{namespace: namespace, resource: resourceName, name: name, metric: metric}]
	s.mu.Unlock()
	if !ok {
		writeError(w, apierrors.NewNotFound(schema.GroupResource{Group: groupVersions[1].Group, Resource: resourceName}, name+"/"+metric))
		return
	}
	gr := schema.ParseGroupResource(resourceName)
	v := value("", schema.GroupVersion{Group: gr.Group}.String(), namespace, name)
	v.Value = q.DeepCopy()
	list.Items = append(list.Items, v)
	writeJSON(w, http.StatusOK, list)
}

// externalMetrics serves external.metrics.k8s.io/v1beta1:
// /namespaces/<ns>/<metric>?labelSelector= answers each series whose labels match.
func (s *Server) externalMetrics(w http.ResponseWriter, r *http.Request, rest []string, selector labels.Selector) {
	if len(rest) != 3 || rest[0] != "namespaces" {
		http.NotFound(w, r)
		return
	}
	namespace, metric := rest[1], rest[2]
	list := &externalmetricsv1beta1.ExternalMetricValueList{
		TypeMeta: metav1.TypeMeta{APIVersion: groupVersions[2].String(), Kind: "ExternalMetricValueList"},
		Items:    []externalmetricsv1beta1.ExternalMetricValue{},
	}
	s.mu.Lock()
	for _, m := range s.external {
		if m.namespace == namespace && m.metric == metric && selector.Matches(labels.Set(m.labels)) {
			list.Items = append(list.Items, externalmetricsv1beta1.ExternalMetricValue{
				MetricName:    metric,
				MetricLabels:  m.labels,
				Timestamp:     metav1.Now(),
				WindowSeconds: ptr.To(int64(Window / time.Second)),
				Value:         m.value.DeepCopy(),
			})
		}
	}
	s.mu.Unlock()
	writeJSON(w, http.StatusOK, list)
}

// pods lists the pods of namespace ("" for all) matching selector, live.
func (s *Server) pods(r *http.Request, namespace string, selector labels.Selector) ([]corev1.Pod, error) {
	list, err := s.kube.CoreV1().Pods(namespace).List(r.Context(), metav1.ListOptions{LabelSelector: selector.String()})
	if err != nil {
		return nil, err
	}
	return list.Items, nil
}

func writeError(w http.ResponseWriter, err error) {
	status, ok := err.(apierrors.APIStatus)
	if !ok {
		status = apierrors.NewInternalError(err)
	}
	st := status.Status()
	st.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Status"}
	writeJSON(w, int(st.Code), &st)
}

func writeJSON(w http.ResponseWriter, code int, obj any) {
	data, err := json.Marshal(obj)
	if err != nil {
		http.Error(w, fmt.Sprintf("encoding the answer: %v", err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(data)
}
