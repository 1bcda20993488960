package deployment

import (
	"strconv"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// Builders for the unit tests' Deployments and ReplicaSets.

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

func newDeployment(name string, replicas int32) *appsv1.Deployment {
	labels := map[string]string{"app": name}
	surge, unavailable := intstr.FromString("25%"), intstr.FromString("25%")
	return &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: name, UID: types.UID(name + "-uid"), Generation: 1},
		Spec: appsv1.DeploymentSpec{
			Replicas: &replicas,
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "app:1"}}},
			},
			Strategy: appsv1.DeploymentStrategy{
				Type:          appsv1.RollingUpdateDeploymentStrategyType,
				RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
			},
			RevisionHistoryLimit:    new(int32(10)),
			ProgressDeadlineSeconds: new(int32(600)),
		},
	}
}

// rolling sets maxSurge and maxUnavailable.
func rolling(d *appsv1.Deployment, surge, unavailable intstr.IntOrString) *appsv1.Deployment {
	d.Spec.Strategy = appsv1.DeploymentStrategy{
		Type:          appsv1.RollingUpdateDeploymentStrategyType,
		RollingUpdate: &appsv1.RollingUpdateDeployment{MaxSurge: &surge, MaxUnavailable: &unavailable},
	}
	return d
}

func recreate(d *appsv1.Deployment) *appsv1.Deployment {
	d.Spec.Strategy = appsv1.DeploymentStrategy{Type: appsv1.RecreateDeploymentStrategyType}
	return d
}

// newRS is a ReplicaSet of replicas pods, available of them, created age minutes after epoch.
func newRS(name string, replicas, available int32, age int) *appsv1.ReplicaSet {
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Namespace: "ns", Name: name, UID: types.UID(name + "-uid"),
			CreationTimestamp: metav1.NewTime(epoch.Add(time.Duration(age) * time.Minute)),
			Annotations:       map[string]string{},
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas: &replicas,
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: map[string]string{"app": "web", "pod-template-hash": name}},
				Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: name}}},
			},
		},
		Status: appsv1.ReplicaSetStatus{Replicas: replicas, ReadyReplicas: available, AvailableReplicas: available},
	}
}

// withAnnotations sets desired and max replicas annotations (negative: absent).
func withSizes(rs *appsv1.ReplicaSet, desired, maxReplicas int32) *appsv1.ReplicaSet {
	if desired >= 0 {
		rs.Annotations[DesiredReplicasAnnotation] = strconv.Itoa(int(desired))
	}
	if maxReplicas >= 0 {
		rs.Annotations[MaxReplicasAnnotation] = strconv.Itoa(int(maxReplicas))
	}
	return rs
}

func withRevision(rs *appsv1.ReplicaSet, rev string) *appsv1.ReplicaSet {
	rs.Annotations[RevisionAnnotation] = rev
	return rs
}

// sizes maps ReplicaSet names to the sizes steps give them.
func sizes(steps []scaleStep) map[string]int32 {
	out := map[string]int32{}
	for _, s := range steps {
		out[s.rs.Name] = s.replicas
	}
	return out
}
