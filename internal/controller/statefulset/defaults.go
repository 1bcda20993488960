package statefulset

import (
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"
)

// defaultTemplate gives a pod template the defaults the v1.37.1 API server gives the
// template of a StatefulSet it stores (core/v1's pod spec, volume, container, probe and
// handler defaults, as its generated SetObjectDefaults_StatefulSet applies them). Upstream's
// semantic revision comparison defaults a decoded revision with the API server's own
// defaulting functions, which live in k8s.io/kubernetes; kcm may not import them, so this is
// the same list of defaults, field for field. A revision written before a field was defaulted
// (or by a manager that serialized the template differently) then compares equal to the
// set's current, API-server-defaulted template.
func defaultTemplate(t *corev1.PodTemplateSpec) {
	spec := &t.Spec
	if spec.ServiceAccountName == "" {
		spec.ServiceAccountName = spec.DeprecatedServiceAccount
	}
	spec.DeprecatedServiceAccount = spec.ServiceAccountName
	defaultString((*string)(&spec.DNSPolicy), string(corev1.DNSClusterFirst))
	defaultString((*string)(&spec.RestartPolicy), string(corev1.RestartPolicyAlways))
	if spec.SecurityContext == nil {
		spec.SecurityContext = &corev1.PodSecurityContext{}
	}
	if spec.TerminationGracePeriodSeconds == nil {
		spec.TerminationGracePeriodSeconds = ptr.To[int64](corev1.DefaultTerminationGracePeriodSeconds)
	}
	defaultString(&spec.SchedulerName, corev1.DefaultSchedulerName)
	for i := range spec.Volumes {
		defaultVolume(&spec.Volumes[i])
	}
	for i := range spec.InitContainers {
		defaultContainer(&spec.InitContainers[i])
	}
	for i := range spec.Containers {
		defaultContainer(&spec.Containers[i])
	}
	for i := range spec.EphemeralContainers {
		defaultContainer((*corev1.Container)(&spec.EphemeralContainers[i].EphemeralContainerCommon))
	}
	roundUp(spec.Overhead)
	if spec.Resources != nil {
		roundUp(spec.Resources.Limits)
		roundUp(spec.Resources.Requests)
	}
}

func defaultVolume(v *corev1.Volume) {
	s := &v.VolumeSource
	if ptr.AllPtrFieldsNil(s) {
		s.EmptyDir = &corev1.EmptyDirVolumeSource{}
	}
	if s.Image != nil && s.Image.PullPolicy == "" {
		s.Image.PullPolicy = pullPolicy(s.Image.Reference)
	}
	if s.HostPath != nil && s.HostPath.Type == nil {
		s.HostPath.Type = ptr.To(corev1.HostPathUnset)
	}
	if s.Secret != nil && s.Secret.DefaultMode == nil {
		s.Secret.DefaultMode = ptr.To(corev1.SecretVolumeSourceDefaultMode)
	}
	if s.ISCSI != nil {
		defaultString(&s.ISCSI.ISCSIInterface, "default")
	}
	if s.RBD != nil {
		defaultString(&s.RBD.RBDPool, "rbd")
		defaultString(&s.RBD.RadosUser, "admin")
		defaultString(&s.RBD.Keyring, "/etc/ceph/keyring")
	}
	if s.DownwardAPI != nil {
		if s.DownwardAPI.DefaultMode == nil {
			s.DownwardAPI.DefaultMode = ptr.To(corev1.DownwardAPIVolumeSourceDefaultMode)
		}
		defaultFieldRefs(s.DownwardAPI.Items)
	}
	if s.ConfigMap != nil && s.ConfigMap.DefaultMode == nil {
		s.ConfigMap.DefaultMode = ptr.To(corev1.ConfigMapVolumeSourceDefaultMode)
	}
	if d := s.AzureDisk; d != nil {
		if d.CachingMode == nil {
			d.CachingMode = ptr.To(corev1.AzureDataDiskCachingReadWrite)
		}
		if d.FSType == nil {
			d.FSType = ptr.To("ext4")
		}
		if d.ReadOnly == nil {
			d.ReadOnly = ptr.To(false)
		}
		if d.Kind == nil {
			d.Kind = ptr.To(corev1.AzureSharedBlobDisk)
		}
	}
	if p := s.Projected; p != nil {
		if p.DefaultMode == nil {
			p.DefaultMode = ptr.To(corev1.ProjectedVolumeSourceDefaultMode)
		}
		for i := range p.Sources {
			if p.Sources[i].DownwardAPI != nil {
				defaultFieldRefs(p.Sources[i].DownwardAPI.Items)
			}
			if tok := p.Sources[i].ServiceAccountToken; tok != nil && tok.ExpirationSeconds == nil {
				tok.ExpirationSeconds = ptr.To[int64](3600)
			}
		}
	}
	if s.ScaleIO != nil {
		defaultString(&s.ScaleIO.StorageMode, "ThinProvisioned")
		defaultString(&s.ScaleIO.FSType, "xfs")
	}
	if s.Ephemeral != nil && s.Ephemeral.VolumeClaimTemplate != nil {
		claim := &s.Ephemeral.VolumeClaimTemplate.Spec
		if claim.VolumeMode == nil {
			claim.VolumeMode = ptr.To(corev1.PersistentVolumeFilesystem)
		}
		roundUp(claim.Resources.Limits)
		roundUp(claim.Resources.Requests)
	}
}

func defaultFieldRefs(items []corev1.DownwardAPIVolumeFile) {
	for i := range items {
		if items[i].FieldRef != nil {
			defaultString(&items[i].FieldRef.APIVersion, "v1")
		}
	}
}

func defaultContainer(c *corev1.Container) {
	if c.ImagePullPolicy == "" {
		c.ImagePullPolicy = pullPolicy(c.Image)
	}
	defaultString(&c.TerminationMessagePath, corev1.TerminationMessagePathDefault)
	defaultString((*string)(&c.TerminationMessagePolicy), string(corev1.TerminationMessageReadFile))
	for i := range c.Ports {
		defaultString((*string)(&c.Ports[i].Protocol), string(corev1.ProtocolTCP))
	}
	for i := range c.Env {
		from := c.Env[i].ValueFrom
		if from == nil {
			continue
		}
		if from.FieldRef != nil {
			defaultString(&from.FieldRef.APIVersion, "v1")
		}
		if from.FileKeyRef != nil && from.FileKeyRef.Optional == nil {
			from.FileKeyRef.Optional = ptr.To(false)
		}
	}
	roundUp(c.Resources.Limits)
	roundUp(c.Resources.Requests)
	for _, p := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe, c.StartupProbe} {
		if p == nil {
			continue
		}
		defaultInt32(&p.TimeoutSeconds, 1)
		defaultInt32(&p.PeriodSeconds, 10)
		defaultInt32(&p.SuccessThreshold, 1)
		defaultInt32(&p.FailureThreshold, 3)
		defaultHTTPGet(p.HTTPGet)
		if p.GRPC != nil && p.GRPC.Service == nil {
			p.GRPC.Service = ptr.To("")
		}
	}
	if l := c.Lifecycle; l != nil {
		if l.PostStart != nil {
			defaultHTTPGet(l.PostStart.HTTPGet)
		}
		if l.PreStop != nil {
			defaultHTTPGet(l.PreStop.HTTPGet)
		}
	}
}

func defaultHTTPGet(a *corev1.HTTPGetAction) {
	if a == nil {
		return
	}
	defaultString(&a.Path, "/")
	defaultString((*string)(&a.Scheme), string(corev1.URISchemeHTTP))
}

// pullPolicy is the pull policy an image gets by default: Always for the tag latest (or no
// tag and no digest, which means latest), IfNotPresent otherwise.
func pullPolicy(image string) corev1.PullPolicy {
	if imageTag(image) == "latest" {
		return corev1.PullAlways
	}
	return corev1.PullIfNotPresent
}

// imageTag is the tag of an image reference, "latest" when it names neither a tag nor a
// digest: [host[:port]/]path[:tag][@digest].
func imageTag(image string) string {
	if strings.Contains(image, "@") {
		name, _, _ := strings.Cut(image, "@")
		if tag := tagOf(name); tag != "" {
			return tag
		}
		return ""
	}
	if tag := tagOf(image); tag != "" {
		return tag
	}
	return "latest"
}

func tagOf(name string) string {
	last := name[strings.LastIndex(name, "/")+1:]
	if i := strings.LastIndex(last, ":"); i >= 0 {
		return last[i+1:]
	}
	return ""
}

// roundUp rounds quantities up to milli units, as the API server stores them.
func roundUp(list corev1.ResourceList) {
	for name, q := range list {
		q.RoundUp(-3)
		list[name] = q
	}
}

func defaultString(s *string, v string) {
	if *s == "" {
		*s = v
	}
}

func defaultInt32(i *int32, v int32) {
	if *i == 0 {
		*i = v
	}
}
