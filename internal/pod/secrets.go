package pod

import corev1 "k8s.io/api/core/v1"

// SecretNames returns the names of the Secrets a pod refers to: image pull secrets, env and
// envFrom of every container (init and ephemeral ones included), and volumes, as upstream's
// VisitPodSecretNames; references through PVCs are not followed.
func SecretNames(p *corev1.Pod) []string {
	var names []string
	add := func(name string) {
		if name != "" {
			names = append(names, name)
		}
	}
	for _, ref := range p.Spec.ImagePullSecrets {
		add(ref.Name)
	}
	envs := func(from []corev1.EnvFromSource, env []corev1.EnvVar) {
		for _, e := range from {
			if e.SecretRef != nil {
				add(e.SecretRef.Name)
			}
		}
		for _, e := range env {
			if e.ValueFrom != nil && e.ValueFrom.SecretKeyRef != nil {
				add(e.ValueFrom.SecretKeyRef.Name)
			}
		}
	}
	for _, c := range p.Spec.InitContainers {
		envs(c.EnvFrom, c.Env)
	}
	for _, c := range p.Spec.Containers {
		envs(c.EnvFrom, c.Env)
	}
	for _, c := range p.Spec.EphemeralContainers {
		envs(c.EnvFrom, c.Env)
	}
	for _, v := range p.Spec.Volumes {
		switch s := v.VolumeSource; {
		case s.Secret != nil:
			add(s.Secret.SecretName)
		case s.Projected != nil:
			for _, src := range s.Projected.Sources {
				if src.Secret != nil {
					add(src.Secret.Name)
				}
			}
		case s.AzureFile != nil:
			add(s.AzureFile.SecretName)
		case s.CephFS != nil && s.CephFS.SecretRef != nil:
			add(s.CephFS.SecretRef.Name)
		case s.Cinder != nil && s.Cinder.SecretRef != nil:
			add(s.Cinder.SecretRef.Name)
		case s.FlexVolume != nil && s.FlexVolume.SecretRef != nil:
			add(s.FlexVolume.SecretRef.Name)
		case s.RBD != nil && s.RBD.SecretRef != nil:
			add(s.RBD.SecretRef.Name)
		case s.ScaleIO != nil && s.ScaleIO.SecretRef != nil:
			add(s.ScaleIO.SecretRef.Name)
		case s.ISCSI != nil && s.ISCSI.SecretRef != nil:
			add(s.ISCSI.SecretRef.Name)
		case s.StorageOS != nil && s.StorageOS.SecretRef != nil:
			add(s.StorageOS.SecretRef.Name)
		case s.CSI != nil && s.CSI.NodePublishSecretRef != nil:
			add(s.CSI.NodePublishSecretRef.Name)
		}
	}
	return names
}
