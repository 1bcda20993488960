package deployment

import (
	"encoding/json"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"

	"github.com/kcm/kcm/internal/history"
)

// upstreamHashes are what upstream's own controller.ComputeHash (k8s.io/kubernetes v1.37.1,
// pkg/controller/controller_utils.go) returned for hashCases: a throwaway program in the
// hack/tools/k8s module (which requires k8s.io/kubernetes) with a verbatim copy of hashCases
// printed them, and was not kept. A Deployment moved from upstream's controller must find
// its ReplicaSets under these names.
var upstreamHashes = map[string]string{
	"empty template":              "54f4c57dcb",
	"minimal":                     "8598d85969",
	"minimal, collision count 0":  "74bb495857",
	"minimal, collision count 1":  "58ff7ddfd4",
	"minimal, collision count 7":  "6bb5475854",
	"rich":                        "766f645d7d",
	"rich, collision count 2":     "56cfc7cb88",
	"upstream hash_test template": "77f9b8cdcd",
}

func TestComputeHashMatchesUpstream(t *testing.T) {
	cases := hashCases()
	if len(cases) != len(upstreamHashes) {
		t.Fatalf("%d cases, %d upstream hashes", len(cases), len(upstreamHashes))
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			want, ok := upstreamHashes[c.name]
			if !ok {
				t.Fatalf("no upstream hash for %q", c.name)
			}
			if got := history.TemplateHash(&c.template, c.collisionCount); got != want {
				t.Errorf("computeHash = %q, upstream %q", got, want)
			}
			// Hashing must not change the template (it is the Deployment's).
			again := history.TemplateHash(&c.template, c.collisionCount)
			if again != want {
				t.Errorf("second computeHash = %q", again)
			}
		})
	}
}

func TestReplicaSetName(t *testing.T) {
	long := strings.Repeat("d", 260)
	tests := []struct {
		name, deployment, hash, want string
	}{
		{name: "short", deployment: "web", hash: "8598d85969", want: "web-8598d85969"},
		{name: "exactly fits", deployment: strings.Repeat("d", 242), hash: "8598d85969", want: strings.Repeat("d", 242) + "-8598d85969"},
		{name: "cut to fit 253", deployment: long, hash: "8598d85969", want: strings.Repeat("d", 242) + "-8598d85969"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := replicaSetName(tt.deployment, tt.hash)
			if got != tt.want {
				t.Errorf("replicaSetName = %q, want %q", got, tt.want)
			}
			if len(got) > 253 {
				t.Errorf("name has %d characters", len(got))
			}
		})
	}
}

func TestNewReplicaSetForAddsTheHashLabel(t *testing.T) {
	d := newDeployment("web", 3)
	rs := newReplicaSetFor(d, "abc")
	if rs.Name != "web-abc" || rs.Labels["pod-template-hash"] != "abc" || rs.Spec.Template.Labels["pod-template-hash"] != "abc" ||
		rs.Spec.Selector.MatchLabels["pod-template-hash"] != "abc" || rs.Spec.Selector.MatchLabels["app"] != "web" {
		t.Errorf("new ReplicaSet = %+v", rs)
	}
	if _, ok := d.Spec.Template.Labels["pod-template-hash"]; ok {
		t.Error("the Deployment's template got the hash label")
	}
	if _, ok := d.Spec.Selector.MatchLabels["pod-template-hash"]; ok {
		t.Error("the Deployment's selector got the hash label")
	}
	if !metav1.IsControlledBy(rs, d) {
		t.Error("new ReplicaSet is not controlled by the Deployment")
	}
}

type hashCase struct {
	name           string
	template       corev1.PodTemplateSpec
	collisionCount *int32
}

// upstreamHashJSON is the pod template of upstream's own hash test
// (pkg/controller/deployment/util/hash_test.go), version 0.
const upstreamHashJSON = `{"metadata":{"labels":{"app":"cats"}},"spec":{"containers":[{"name":"cats",
"image":"registry/test/cats:v0.0.0","ports":[{"name":"http","containerPort":9077,"protocol":"TCP"}],
"env":[{"name":"DEPLOYMENT_ENVIRONMENT","value":"cats-stubbed-functional"},{"name":"APP_NAME","value":"cats"}],
"resources":{"limits":{"cpu":"1","memory":"1Gi"},"requests":{"cpu":"1","memory":"1Gi"}},
"livenessProbe":{"httpGet":{"path":"/private/status","port":9077,"scheme":"HTTP"},"initialDelaySeconds":30,"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},
"readinessProbe":{"httpGet":{"path":"/private/status","port":9077,"scheme":"HTTP"},"initialDelaySeconds":1,"timeoutSeconds":1,"periodSeconds":10,"successThreshold":1,"failureThreshold":3},
"terminationMessagePath":"/dev/termination-log","imagePullPolicy":"IfNotPresent"}],
"restartPolicy":"Always","terminationGracePeriodSeconds":30,"dnsPolicy":"ClusterFirst","securityContext":{}}}`

// hashCases are the templates whose hashes upstream computed (see TestComputeHashMatchesUpstream).
// The program that computed them copies this function verbatim.
func hashCases() []hashCase {
	i32 := func(v int32) *int32 { return &v }
	minimal := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web"}},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
	}
	rich := corev1.PodTemplateSpec{
		ObjectMeta: metav1.ObjectMeta{
			Labels:      map[string]string{"tier": "front", "app": "shop", "zone": "a"},
			Annotations: map[string]string{"b": "2", "a": "1"},
		},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{
				Name:  "shop",
				Image: "example.com/shop:1.2.3",
				Args:  []string{"--port=8080", "--verbose"},
				Ports: []corev1.ContainerPort{{Name: "http", ContainerPort: 8080, Protocol: corev1.ProtocolTCP}},
				Env:   []corev1.EnvVar{{Name: "MODE", Value: "prod"}},
				Resources: corev1.ResourceRequirements{
					Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("250m"), corev1.ResourceMemory: resource.MustParse("64Mi")},
				},
				ReadinessProbe: &corev1.Probe{ProbeHandler: corev1.ProbeHandler{
					HTTPGet: &corev1.HTTPGetAction{Path: "/healthz", Port: intstr.FromString("http")},
				}},
			}},
			NodeSelector:                  map[string]string{"disk": "ssd"},
			TerminationGracePeriodSeconds: func(v int64) *int64 { return &v }(5),
		},
	}
	var upstream corev1.PodTemplateSpec
	if err := json.Unmarshal([]byte(upstreamHashJSON), &upstream); err != nil {
		panic(err)
	}
	return []hashCase{
		{name: "empty template", template: corev1.PodTemplateSpec{}},
		{name: "minimal", template: minimal},
		{name: "minimal, collision count 0", template: minimal, collisionCount: i32(0)},
		{name: "minimal, collision count 1", template: minimal, collisionCount: i32(1)},
		{name: "minimal, collision count 7", template: minimal, collisionCount: i32(7)},
		{name: "rich", template: rich},
		{name: "rich, collision count 2", template: rich, collisionCount: i32(2)},
		{name: "upstream hash_test template", template: upstream},
	}
}
