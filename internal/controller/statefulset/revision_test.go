package statefulset

import (
	"context"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

// storedSet is a set as the API server returns it: its template carries every default.
func storedSet() *appsv1.StatefulSet {
	set := testSet(1)
	set.Generation = 3
	set.Spec.Template.Labels = map[string]string{"app": "web"}
	set.Spec.Template.Spec = corev1.PodSpec{
		Containers: []corev1.Container{{
			Name: "app", Image: "registry.k8s.io/pause:3.10", ImagePullPolicy: corev1.PullIfNotPresent,
			TerminationMessagePath: "/dev/termination-log", TerminationMessagePolicy: corev1.TerminationMessageReadFile,
			Ports: []corev1.ContainerPort{{ContainerPort: 80, Protocol: corev1.ProtocolTCP}},
			ReadinessProbe: &corev1.Probe{
				ProbeHandler:   corev1.ProbeHandler{HTTPGet: &corev1.HTTPGetAction{Path: "/", Port: intOrString(80), Scheme: corev1.URISchemeHTTP}},
				TimeoutSeconds: 1, PeriodSeconds: 10, SuccessThreshold: 1, FailureThreshold: 3,
			},
		}},
		Volumes: []corev1.Volume{{Name: "cfg", VolumeSource: corev1.VolumeSource{
			ConfigMap: &corev1.ConfigMapVolumeSource{LocalObjectReference: corev1.LocalObjectReference{Name: "cfg"}, DefaultMode: ptr.To[int32](0o644)},
		}}},
		RestartPolicy: corev1.RestartPolicyAlways, DNSPolicy: corev1.DNSClusterFirst, SchedulerName: corev1.DefaultSchedulerName,
		SecurityContext: &corev1.PodSecurityContext{}, TerminationGracePeriodSeconds: ptr.To[int64](30),
	}
	return set
}

// containerJSON is the stored set's container, serialized as a writer would with defaults
// left out, in its own key order.
const (
	sparseContainer = `{"name":"app","image":"registry.k8s.io/pause:3.10","ports":[{"containerPort":80}],` +
		`"readinessProbe":{"httpGet":{"port":80}}}`
	sparseVolume = `{"name":"cfg","configMap":{"name":"cfg"}}`
)

func rev(data string) *appsv1.ControllerRevision {
	return &appsv1.ControllerRevision{Data: runtime.RawExtension{Raw: []byte(data)}, Revision: 1}
}

func TestMatchesLatest(t *testing.T) {
	set := storedSet()
	exact, err := revisionData(set)
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		latest string
		want   bool
	}{
		{"the same bytes", string(exact), true},
		{"a null creationTimestamp, as v1.33 serialized templates",
			strings.Replace(string(exact), `"metadata":{`, `"metadata":{"creationTimestamp":null,`, 1), true},
		{"another key order, spacing and empty lists, defaults written out",
			`{"spec": {"template": {"$patch": "replace", "spec": {"volumes": [` + sparseVolume + `], "initContainers": [],
			"containers": [{"imagePullPolicy": "IfNotPresent", "name": "app", "image": "registry.k8s.io/pause:3.10",
			"ports": [{"protocol": "TCP", "containerPort": 80}], "env": [],
			"readinessProbe": {"httpGet": {"port": 80}}}]}, "metadata": {"labels": {"app": "web"}, "annotations": {}}}}}`, true},
		{"every default left out, as written before the API server defaulted them",
			`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[` +
				sparseContainer + `],"volumes":[` + sparseVolume + `]}}}}`, true},
		{"a quantity spelled otherwise", "", true},
		{"another image",
			`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[` +
				strings.Replace(sparseContainer, "3.10", "3.9", 1) + `],"volumes":[` + sparseVolume + `]}}}}`, false},
		{"another label",
			`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"db"}},"spec":{"containers":[` +
				sparseContainer + `],"volumes":[` + sparseVolume + `]}}}}`, false},
		{"a field the set now sets to other than its default (grace period 30, set has 60)", "", false},
		{"not a template", `{"spec":{"template":"x"}}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			set := set.DeepCopy()
			latest := tt.latest
			switch tt.name {
			case "a quantity spelled otherwise":
				set.Spec.Template.Spec.Containers[0].Resources.Requests = corev1.ResourceList{corev1.ResourceCPU: mustQuantity("500m")}
				latest = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[` +
					strings.Replace(sparseContainer, `"ports"`, `"resources":{"requests":{"cpu":"0.5"}},"ports"`, 1) +
					`],"volumes":[` + sparseVolume + `]}}}}`
			case "a field the set now sets to other than its default (grace period 30, set has 60)":
				set.Spec.Template.Spec.TerminationGracePeriodSeconds = ptr.To[int64](60)
				latest = `{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[` +
					sparseContainer + `],"volumes":[` + sparseVolume + `]}}}}`
			}
			proposed, err := newRevision(set, 2, nil)
			if err != nil {
				t.Fatal(err)
			}
			seen := newRevisionEqualities()
			if got := matchesLatest(set, proposed, rev(latest), seen); got != tt.want {
				t.Errorf("matchesLatest = %v, want %v", got, tt.want)
			}
			// A match is remembered for the set's generation and the revision's version.
			if got := seen.Len() == 1; got != tt.want {
				t.Errorf("remembered = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestDefaultTemplateImagePullPolicy(t *testing.T) {
	for image, want := range map[string]corev1.PullPolicy{
		"nginx":                          corev1.PullAlways,
		"nginx:latest":                   corev1.PullAlways,
		"registry:5000/nginx":            corev1.PullAlways,
		"registry:5000/nginx:1.27":       corev1.PullIfNotPresent,
		"nginx@sha256:" + hex64:          corev1.PullIfNotPresent,
		"nginx:latest@sha256:" + hex64:   corev1.PullAlways,
		"registry:5000/a/b:v1@sha256:aa": corev1.PullIfNotPresent,
	} {
		tpl := &corev1.PodTemplateSpec{Spec: corev1.PodSpec{Containers: []corev1.Container{{Image: image}}}}
		defaultTemplate(tpl)
		if got := tpl.Spec.Containers[0].ImagePullPolicy; got != want {
			t.Errorf("%s: pull policy %s, want %s", image, got, want)
		}
	}
}

const hex64 = "0000000000000000000000000000000000000000000000000000000000000000"

func intOrString(port int32) intstr.IntOrString { return intstr.FromInt32(port) }

func mustQuantity(s string) resource.Quantity { return resource.MustParse(s) }

// With the gate on, a set whose only revision was written without the defaults keeps it;
// with the gate off (byte comparison) it gets a new revision, which rolls every pod.
func TestSyncRevisionsGate(t *testing.T) {
	for _, semantic := range []bool{true, false} {
		set := storedSet()
		legacy := rev(`{"spec":{"template":{"$patch":"replace","metadata":{"labels":{"app":"web"}},"spec":{"containers":[` +
			sparseContainer + `],"volumes":[` + sparseVolume + `]}}}}`)
		legacy.Namespace, legacy.Name, legacy.ResourceVersion = "ns", "web-legacy", "7"
		cl := fake.NewClientBuilder().WithObjects(set, legacy.DeepCopy()).Build()
		r := &Reconciler{Client: cl, SemanticRevisionComparison: semantic, revisionEqualities: newRevisionEqualities()}
		var collisions int32
		current, update, err := r.syncRevisions(context.Background(), set, []*appsv1.ControllerRevision{legacy}, &collisions)
		if err != nil {
			t.Fatal(err)
		}
		revs := &appsv1.ControllerRevisionList{}
		if err := cl.List(context.Background(), revs); err != nil {
			t.Fatal(err)
		}
		if semantic && (update.Name != "web-legacy" || current.Name != "web-legacy" || len(revs.Items) != 1) {
			t.Errorf("semantic: update %s, current %s, %d revisions; want web-legacy and no new one", update.Name, current.Name, len(revs.Items))
		}
		if !semantic && (update.Name == "web-legacy" || update.Revision != 2 || len(revs.Items) != 2) {
			t.Errorf("byte comparison: update %s (revision %d), %d revisions; want a new revision 2", update.Name, update.Revision, len(revs.Items))
		}
	}
}
