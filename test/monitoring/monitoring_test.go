// Package monitoring_test checks config/prometheus as shipped: kustomize renders it, its
// Service and ServiceMonitor reach the pods config/default deploys under the job the rules
// select, and promtool checks its rules and runs their unit tests (config/prometheus/tests).
package monitoring_test

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/yaml"

	"github.com/kcm/kcm/internal/testenv"
)

// job is the job label the kubernetes-mixin selects kube-controller-manager by, and so the
// rules do.
const job = "kube-controller-manager"

// TestRulesPassPromtool extracts the rendered PrometheusRule's groups into a Prometheus rules
// file, runs `promtool check rules` on it and `promtool test rules` on each unit test file,
// and checks that the unit tests have, for every alert, a case where it fires and one where
// it stays quiet.
func TestRulesPassPromtool(t *testing.T) {
	promtool := findPromtool(t)
	root := repoRoot(t)
	rule := find(t, render(t, root, "config/prometheus"), "PrometheusRule", "kcm")
	groups, ok, err := unstructured.NestedSlice(rule.Object, "spec", "groups")
	if err != nil || !ok || len(groups) == 0 {
		t.Fatalf("PrometheusRule kcm has no spec.groups (%v)", err)
	}
	rulesFile, err := yaml.Marshal(map[string]any{"groups": groups})
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "rules.yaml"), rulesFile, 0o600); err != nil {
		t.Fatal(err)
	}
	runIn(t, dir, promtool, "check", "rules", "rules.yaml")

	tests, err := filepath.Glob(filepath.Join(root, "config", "prometheus", "tests", "*.yaml"))
	if err != nil || len(tests) == 0 {
		t.Fatalf("no promtool unit tests in config/prometheus/tests (%v)", err)
	}
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, src := range tests {
		data, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		// promtool reads rule_files relative to the test file: rules.yaml beside it.
		name := filepath.Base(src)
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			t.Fatal(err)
		}
		runIn(t, dir, promtool, "test", "rules", name)
		var unit struct {
			Tests []struct {
				AlertRuleTest []struct {
					Alertname string           `json:"alertname"`
					ExpAlerts []map[string]any `json:"exp_alerts"`
				} `json:"alert_rule_test"`
			} `json:"tests"`
		}
		if err := yaml.Unmarshal(data, &unit); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		for _, group := range unit.Tests {
			for _, c := range group.AlertRuleTest {
				if len(c.ExpAlerts) > 0 {
					fires[c.Alertname] = true
				} else {
					quiet[c.Alertname] = true
				}
			}
		}
	}
	alerts := alertNames(t, groups)
	for _, alert := range alerts {
		if !fires[alert] {
			t.Errorf("no unit test in config/prometheus/tests expects %s to fire", alert)
		}
		if !quiet[alert] {
			t.Errorf("no unit test in config/prometheus/tests expects %s to stay quiet", alert)
		}
	}
	for _, want := range []string{"KubeControllerManagerDown", "KubeControllerManagerInstanceUnreachable",
		"KubeControllerManagerNoLeader", "KubeControllerManagerReconcileErrors", "KubeControllerManagerWorkqueueGrowing",
		"KubeControllerManagerObjectNotConverged"} {
		if !slices.Contains(alerts, want) {
			t.Errorf("the PrometheusRule has no alert %s", want)
		}
	}
}

// TestMonitorScrapesDefaultDeployment checks the path from config/default's pods to the
// series the rules select: the Service selects the pods' labels and targets their secure
// port, the ServiceMonitor selects the Service in its namespace, scrapes that port over HTTPS
// with a bearer token, and names the job after a Service label whose value is the job every
// rule selects.
func TestMonitorScrapesDefaultDeployment(t *testing.T) {
	root := repoRoot(t)
	monitoring := render(t, root, "config/prometheus")
	deployment := &appsv1.Deployment{}
	convert(t, find(t, render(t, root, "config/default"), "Deployment", "kcm"), deployment)
	service := &corev1.Service{}
	convert(t, find(t, monitoring, "Service", "kcm-metrics"), service)
	monitor := find(t, monitoring, "ServiceMonitor", "kcm")

	if service.Namespace != deployment.Namespace {
		t.Errorf("Service in %q, the Deployment's pods in %q", service.Namespace, deployment.Namespace)
	}
	if !labels.SelectorFromSet(service.Spec.Selector).Matches(labels.Set(deployment.Spec.Template.Labels)) {
		t.Errorf("the Service's selector %v does not select config/default's pods %v", service.Spec.Selector, deployment.Spec.Template.Labels)
	}
	if len(service.Spec.Ports) != 1 {
		t.Fatalf("Service ports %v, want one", service.Spec.Ports)
	}
	port := service.Spec.Ports[0]
	var securePort int32
	for _, c := range deployment.Spec.Template.Spec.Containers {
		for _, p := range c.Ports {
			if p.Name == "probe-port" {
				securePort = p.ContainerPort
			}
		}
	}
	if securePort == 0 || port.TargetPort.IntValue() != int(securePort) {
		t.Errorf("the Service targets port %s, config/default's secure port (probe-port) is %d", port.TargetPort.String(), securePort)
	}

	spec := monitor.Object["spec"].(map[string]any)
	selector, _, _ := unstructured.NestedStringMap(spec, "selector", "matchLabels")
	if len(selector) == 0 || !labels.SelectorFromSet(selector).Matches(labels.Set(service.Labels)) {
		t.Errorf("the ServiceMonitor's selector %v does not select the Service's labels %v", selector, service.Labels)
	}
	namespaces, _, _ := unstructured.NestedStringSlice(spec, "namespaceSelector", "matchNames")
	if !slices.Equal(namespaces, []string{service.Namespace}) {
		t.Errorf("the ServiceMonitor looks in namespaces %v, the Service is in %q", namespaces, service.Namespace)
	}
	jobLabel, _, _ := unstructured.NestedString(spec, "jobLabel")
	if got := service.Labels[jobLabel]; got != job {
		t.Errorf("the ServiceMonitor's jobLabel %q gives job=%q, the rules select job=%q", jobLabel, got, job)
	}
	endpoints, _, _ := unstructured.NestedSlice(spec, "endpoints")
	if len(endpoints) != 1 {
		t.Fatalf("ServiceMonitor endpoints %v, want one", endpoints)
	}
	endpoint := endpoints[0].(map[string]any)
	if endpoint["port"] != port.Name || endpoint["scheme"] != "https" || endpoint["bearerTokenFile"] == nil {
		t.Errorf("the ServiceMonitor's endpoint %v: want port %q, scheme https and the Prometheus ServiceAccount's token", endpoint, port.Name)
	}

	// Every rule selects the job the ServiceMonitor gives.
	rule := find(t, monitoring, "PrometheusRule", "kcm")
	groups, _, _ := unstructured.NestedSlice(rule.Object, "spec", "groups")
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			r := r.(map[string]any)
			if expr, _ := r["expr"].(string); !strings.Contains(expr, `job="`+job+`"`) {
				t.Errorf("alert %v does not select job=%q: %s", r["alert"], job, expr)
			}
		}
	}
}

// findPromtool finds Debian's promtool. Without it the test fails in CI (.ci/run installs
// it) and is skipped elsewhere.
func findPromtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err == nil {
		return path
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("promtool is not installed (CI=true): .ci/run installs Debian's prometheus package, which provides it")
	}
	t.Skip("promtool is not installed: `apt-get install prometheus` to check config/prometheus's rules (CI fails without it)")
	return ""
}

func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// render builds a kustomization with the kubectl `make k8s-bins` builds.
func render(t *testing.T, root, dir string) []*unstructured.Unstructured {
	t.Helper()
	kubectl := filepath.Join(root, testenv.AssetsDir, "kubectl")
	if assets := os.Getenv("KUBEBUILDER_ASSETS"); assets != "" {
		kubectl = filepath.Join(assets, "kubectl")
	}
	if _, err := os.Stat(kubectl); err != nil {
		t.Fatalf("no kubectl at %s: run `make k8s-bins`", kubectl)
	}
	out := runIn(t, root, kubectl, "kustomize", dir)
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(out, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		obj := &unstructured.Unstructured{}
		if err := yaml.Unmarshal(doc, &obj.Object); err != nil {
			t.Fatalf("%s: %v", dir, err)
		}
		objs = append(objs, obj)
	}
	return objs
}

func find(t *testing.T, objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() == kind && o.GetName() == name {
			return o
		}
	}
	t.Fatalf("no %s %s rendered", kind, name)
	return nil
}

func convert(t *testing.T, obj *unstructured.Unstructured, into any) {
	t.Helper()
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, into); err != nil {
		t.Fatalf("%s %s: %v", obj.GetKind(), obj.GetName(), err)
	}
}

func alertNames(t *testing.T, groups []any) []string {
	t.Helper()
	var names []string
	for _, g := range groups {
		rules, _, _ := unstructured.NestedSlice(g.(map[string]any), "rules")
		for _, r := range rules {
			if name, _ := r.(map[string]any)["alert"].(string); name != "" {
				names = append(names, name)
			}
		}
	}
	return names
}

// runIn runs a command in dir and returns its stdout; it fails the test with the command's
// output when it fails.
func runIn(t *testing.T, dir, name string, args ...string) []byte {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s: %v\n%s%s", filepath.Base(name), strings.Join(args, " "), err, stdout.String(), stderr.String())
	}
	return stdout.Bytes()
}
