package selinuxwarning

import (
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
)

// This file decides, for one volume of one pod, the SELinux label kubelet would mount it
// with and the pod's effective SELinuxChangePolicy for it, as upstream's controller does
// through pkg/volume/util (GetPodVolumeNames, GetMountSELinuxLabel) with its own label
// translator: no defaults are filled in from a node's /etc/selinux, which kcm cannot see.

// mountedVolumes lists, sorted, the volumes the pod's containers (init, regular and
// ephemeral) mount as filesystems, with the effective SELinux options of every container
// that mounts each (the container's own, else the pod's; containers with neither add
// none). Volumes used only as raw block devices are not mounted and not listed, as upstream.
func mountedVolumes(p *corev1.Pod) ([]string, map[string][]*corev1.SELinuxOptions) {
	var names []string
	opts := map[string][]*corev1.SELinuxOptions{}
	seen := map[string]bool{}
	visit := func(sc *corev1.SecurityContext, mounts []corev1.VolumeMount) {
		effective := effectiveSELinuxOptions(p, sc)
		for _, m := range mounts {
			if !seen[m.Name] {
				seen[m.Name] = true
				names = append(names, m.Name)
			}
			if effective != nil {
				opts[m.Name] = append(opts[m.Name], effective)
			}
		}
	}
	for i := range p.Spec.InitContainers {
		visit(p.Spec.InitContainers[i].SecurityContext, p.Spec.InitContainers[i].VolumeMounts)
	}
	for i := range p.Spec.Containers {
		visit(p.Spec.Containers[i].SecurityContext, p.Spec.Containers[i].VolumeMounts)
	}
	for i := range p.Spec.EphemeralContainers {
		visit(p.Spec.EphemeralContainers[i].SecurityContext, p.Spec.EphemeralContainers[i].VolumeMounts)
	}
	slices.Sort(names)
	return names, opts
}

// effectiveSELinuxOptions is a container's SELinux options: its own when set, else the pod's.
func effectiveSELinuxOptions(p *corev1.Pod, sc *corev1.SecurityContext) *corev1.SELinuxOptions {
	if sc != nil && sc.SELinuxOptions != nil {
		return sc.SELinuxOptions
	}
	if p.Spec.SecurityContext != nil {
		return p.Spec.SecurityContext.SELinuxOptions
	}
	return nil
}

// fileLabel is the label "user:role:type:level" made of the options as they are: the
// parts a node would default are left empty. Empty options are no label at all.
func fileLabel(o *corev1.SELinuxOptions) string {
	if o == nil {
		return ""
	}
	label := strings.Join([]string{o.User, o.Role, o.Type, o.Level}, ":")
	if label == ":::" {
		return ""
	}
	return label
}

// multipleLabelsError is a volume mounted by containers of one pod with different labels.
type multipleLabelsError struct{ labels []string }

func (e *multipleLabelsError) Error() string {
	return "multiple SELinux labels found: " + strings.Join(e.labels, ",")
}

// mountContext is how one pod uses one volume, as far as SELinux goes.
type mountContext struct {
	// Label is the label the volume is mounted with (mount -o context); empty when it is
	// relabelled recursively instead.
	Label string
	// Policy is the pod's effective SELinuxChangePolicy for the volume.
	Policy corev1.PodSELinuxChangePolicy
}

// decideMountContext gives the label and policy of a volume mounted by containers with the
// given SELinux options, in a pod with the given security context, by a volume plugin that
// does (or does not) support mounting with -o context. A volume the plugin cannot mount
// with a context, a pod that opted into Recursive, and a pod without a label are all
// relabelled recursively, with no mount label. Containers disagreeing on the label is an
// error (*multipleLabelsError), as upstream.
func decideMountContext(opts []*corev1.SELinuxOptions, podSC *corev1.PodSecurityContext, supportsMount bool) (mountContext, error) {
	labels := map[string]bool{}
	for _, o := range opts {
		labels[fileLabel(o)] = true
	}
	if len(labels) > 1 {
		all := make([]string, 0, len(labels))
		for l := range labels {
			all = append(all, l)
		}
		slices.Sort(all)
		return mountContext{}, &multipleLabelsError{labels: all}
	}
	var label string
	for l := range labels {
		label = l
	}
	policy := corev1.SELinuxChangePolicyMountOption
	if podSC != nil && podSC.SELinuxChangePolicy != nil {
		policy = *podSC.SELinuxChangePolicy
	}
	if policy == corev1.SELinuxChangePolicyRecursive || !supportsMount {
		label = ""
	}
	if !supportsMount || label == "" {
		policy = corev1.SELinuxChangePolicyRecursive
	}
	return mountContext{Label: label, Policy: policy}, nil
}

// labelParts splits a label into user, role, type and level; missing parts are empty, and
// the level keeps its categories ("s0:c1,c2").
func labelParts(label string) [4]string {
	var parts [4]string
	if label != "" {
		copy(parts[:], strings.SplitN(label, ":", 4))
	}
	return parts
}

// labelsConflict tells whether two labels made by fileLabel conflict. The user, role and
// type may be empty, to be filled in by a node's defaults: an empty one conflicts with
// nothing. The level is never defaulted and must always be equal.
func labelsConflict(a, b [4]string) bool {
	for i := range 4 {
		if a[i] == b[i] {
			continue
		}
		if i == 3 || a[i] != "" && b[i] != "" {
			return true
		}
	}
	return false
}
