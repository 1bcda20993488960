package deployment

import (
	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// replicaSetName is "<deployment>-<hash>", the deployment name cut so that the whole fits a
// DNS subdomain, as upstream.
func replicaSetName(deployment, hash string) string {
	maxPrefix := validation.DNS1123SubdomainMaxLength - len("-") - len(hash)
	if len(deployment) > maxPrefix && maxPrefix > 0 {
		deployment = deployment[:maxPrefix]
	}
	return deployment + "-" + hash
}

// withLabel returns a copy of labels with key=value added.
func withLabel(labels map[string]string, key, value string) map[string]string {
	out := make(map[string]string, len(labels)+1)
	for k, v := range labels {
		out[k] = v
	}
	out[key] = value
	return out
}

// withoutLabel returns a copy of labels without key; nil stays nil.
func withoutLabel(labels map[string]string, key string) map[string]string {
	if labels == nil {
		return nil
	}
	out := make(map[string]string, len(labels))
	for k, v := range labels {
		if k != key {
			out[k] = v
		}
	}
	return out
}

// selectorWithLabel returns a copy of selector that also requires key=value; an empty key
// leaves it as it is (upstream's CloneSelectorAndAddLabel).
func selectorWithLabel(selector *metav1.LabelSelector, key, value string) *metav1.LabelSelector {
	if selector == nil {
		return nil
	}
	out := selector.DeepCopy()
	if key == "" {
		return out
	}
	if out.MatchLabels == nil {
		out.MatchLabels = map[string]string{}
	}
	out.MatchLabels[key] = value
	return out
}

// newReplicaSetFor is the ReplicaSet d wants for its current template with the given hash,
// before its replicas and annotations are decided.
func newReplicaSetFor(d *appsv1.Deployment, hash string) *appsv1.ReplicaSet {
	template := *d.Spec.Template.DeepCopy()
	template.Labels = withLabel(d.Spec.Template.Labels, appsv1.DefaultDeploymentUniqueLabelKey, hash)
	return &appsv1.ReplicaSet{
		ObjectMeta: metav1.ObjectMeta{
			Name:            replicaSetName(d.Name, hash),
			Namespace:       d.Namespace,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(d, deploymentGVK)},
			Labels:          template.Labels,
		},
		Spec: appsv1.ReplicaSetSpec{
			Replicas:        new(int32),
			MinReadySeconds: d.Spec.MinReadySeconds,
			Selector:        selectorWithLabel(d.Spec.Selector, appsv1.DefaultDeploymentUniqueLabelKey, hash),
			Template:        template,
		},
	}
}
