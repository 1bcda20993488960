package podautoscaler

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
)

func TestPodRequests(t *testing.T) {
	always := corev1.ContainerRestartPolicyAlways
	initContainer := func(name, cpu string, restart *corev1.ContainerRestartPolicy) podOpt {
		return func(p *corev1.Pod) {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, RestartPolicy: restart,
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}})
		}
	}
	overhead := func(p *corev1.Pod) {
		p.Spec.Overhead = corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("50m")}
	}
	tests := []struct {
		name      string
		pod       *corev1.Pod
		container string
		resource  corev1.ResourceName
		podLevel  bool
		want      int64
		wantErr   string
	}{
		{name: "containers summed", pod: testPod("p", containers("a=200m", "b=300m")), want: 500},
		{name: "sidecars counted, other init containers not", pod: testPod("p", containers("a=200m"), initContainer("side", "100m", &always), initContainer("setup", "2", nil)), want: 300},
		{name: "a sidecar named", pod: testPod("p", containers("a=200m"), initContainer("side", "100m", &always)), container: "side", want: 100},
		{name: "a container named", pod: testPod("p", containers("a=200m", "b=300m")), container: "b", want: 300},
		{name: "the named container alone must request", pod: testPod("p", containers("a=", "b=300m")), container: "b", want: 300},
		{name: "memory", pod: testPod("p"), resource: corev1.ResourceMemory, want: 1 << 30 * 1000},
		{name: "a container without the request", pod: testPod("p", containers("a=200m", "b=")), wantErr: "missing request for cpu in container b of Pod p"},
		{name: "the named container without the request", pod: testPod("p", containers("a=200m", "b=")), container: "b", wantErr: "missing request for cpu in container b of Pod p"},
		{name: "the named container absent", pod: testPod("p", containers("a=200m")), container: "c", wantErr: "container c not found in Pod p"},
		{name: "pod-level, gate on", pod: testPod("p", containers("a=200m"), podLevelCPU("1")), podLevel: true, want: 1000},
		{name: "pod-level with overhead", pod: testPod("p", containers("a=200m"), podLevelCPU("1"), overhead), podLevel: true, want: 1050},
		{name: "pod-level, gate off", pod: testPod("p", containers("a=200m"), podLevelCPU("1")), want: 200},
		{name: "pod-level, a container named", pod: testPod("p", containers("a=200m"), podLevelCPU("1")), podLevel: true, container: "a", want: 200},
		{name: "pod-level without the resource, nor the containers", pod: testPod("p", containers("a=200m"), podLevelCPU("1")), podLevel: true, resource: corev1.ResourceEphemeralStorage, wantErr: "missing pod-level request for ephemeral-storage in Pod p"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			res := tc.resource
			if res == "" {
				res = corev1.ResourceCPU
			}
			got, err := podRequests([]corev1.Pod{*tc.pod}, tc.container, res, tc.podLevel)
			if tc.wantErr != "" {
				if err == nil || err.Error() != tc.wantErr {
					t.Fatalf("error %v, want %q", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got["p"] != tc.want {
				t.Errorf("request %d, want %d", got["p"], tc.want)
			}
		})
	}
}
