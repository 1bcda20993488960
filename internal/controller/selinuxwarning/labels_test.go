package selinuxwarning

import (
	"errors"
	"testing"

	corev1 "k8s.io/api/core/v1"
)

func TestFileLabel(t *testing.T) {
	for _, tc := range []struct {
		name string
		opts *corev1.SELinuxOptions
		want string
	}{
		{"nil options", nil, ""},
		{"all fields", &corev1.SELinuxOptions{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}, "system_u:system_r:container_t:s0:c1,c2"},
		{"some fields: no defaults filled in", &corev1.SELinuxOptions{User: "system_u", Type: "container_t"}, "system_u::container_t:"},
		{"only the level", &corev1.SELinuxOptions{Level: "s0:c1,c2"}, ":::s0:c1,c2"},
		{"no field: no label", &corev1.SELinuxOptions{}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := fileLabel(tc.opts); got != tc.want {
				t.Errorf("fileLabel = %q, want %q", got, tc.want)
			}
		})
	}
}

// Upstream's cases for its translator's Conflicts.
func TestLabelsConflict(t *testing.T) {
	for _, tc := range []struct {
		name string
		a, b string
		want bool
	}{
		{"empty strings", "", "", false},
		{"empty conflicts with nothing but the level", "", "system_u:system_r:container_t", false},
		{"empty conflicts with a level", "", "system_u:system_r:container_t:s0:c1,c2", true},
		{"empty parts conflict with nothing", ":::", "system_u:system_r:container_t", false},
		{"different lengths, same common parts", "system_u:system_r:container_t:", "system_u:system_r", false},
		{"different lengths, different common parts", "system_u:system_r:conflict_t:", "system_u:system_r:container_t", true},
		{"empty user and role, different types", "::conflict_t", "::container_t", true},
		{"complementary empty parts", "system_u::container_t", ":system_r::", false},
		{"a level against none", ":::s0:c1,c2", "", true},
		{"same level, one without user, role and type", ":::s0:c1,c2", "system_u:system_r:container_t:s0:c1,c2", false},
		{"different categories", ":::s0:c1,c2", ":::s0:c98,c99", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := labelsConflict(labelParts(tc.a), labelParts(tc.b)); got != tc.want {
				t.Errorf("labelsConflict(%q, %q) = %t, want %t", tc.a, tc.b, got, tc.want)
			}
			if got := labelsConflict(labelParts(tc.b), labelParts(tc.a)); got != tc.want {
				t.Errorf("labelsConflict(%q, %q) = %t, want %t (symmetric)", tc.b, tc.a, got, tc.want)
			}
		})
	}
}

func TestMountedVolumes(t *testing.T) {
	level := func(l string) *corev1.SELinuxOptions { return &corev1.SELinuxOptions{Level: l} }
	p := &corev1.Pod{Spec: corev1.PodSpec{
		SecurityContext: &corev1.PodSecurityContext{SELinuxOptions: level("s0:c1,c2")},
		InitContainers: []corev1.Container{{Name: "init", VolumeMounts: []corev1.VolumeMount{{Name: "data"}},
			SecurityContext: &corev1.SecurityContext{SELinuxOptions: level("s0:c3,c4")}}},
		Containers: []corev1.Container{
			{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data"}, {Name: "cache"}}},
			{Name: "raw", VolumeDevices: []corev1.VolumeDevice{{Name: "block"}}},
			{Name: "sc-without-selinux", VolumeMounts: []corev1.VolumeMount{{Name: "logs"}}, SecurityContext: &corev1.SecurityContext{}},
		},
		EphemeralContainers: []corev1.EphemeralContainer{{EphemeralContainerCommon: corev1.EphemeralContainerCommon{
			Name: "debug", VolumeMounts: []corev1.VolumeMount{{Name: "debug"}}}}},
	}}
	names, opts := mountedVolumes(p)
	if want := []string{"cache", "data", "debug", "logs"}; !equal(names, want) {
		t.Errorf("mounted = %v, want %v (block devices are not mounted)", names, want)
	}
	var data []string
	for _, o := range opts["data"] {
		data = append(data, o.Level)
	}
	if want := []string{"s0:c3,c4", "s0:c1,c2"}; !equal(data, want) {
		t.Errorf("levels of data = %v, want %v (the container's own, else the pod's)", data, want)
	}
	if got := opts["logs"]; len(got) != 1 || got[0].Level != "s0:c1,c2" {
		t.Errorf("logs: %v, want the pod's options for a security context without SELinux options", got)
	}

	bare := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "app", VolumeMounts: []corev1.VolumeMount{{Name: "data"}}}}}}
	if names, opts := mountedVolumes(bare); !equal(names, []string{"data"}) || len(opts["data"]) != 0 {
		t.Errorf("no SELinux options anywhere: %v %v, want data mounted without options", names, opts)
	}
}

func equal(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestDecideMountContext(t *testing.T) {
	opts := func(levels ...string) []*corev1.SELinuxOptions {
		var out []*corev1.SELinuxOptions
		for _, l := range levels {
			out = append(out, &corev1.SELinuxOptions{Level: l})
		}
		return out
	}
	policy := func(p corev1.PodSELinuxChangePolicy) *corev1.PodSecurityContext {
		return &corev1.PodSecurityContext{SELinuxChangePolicy: &p}
	}
	for _, tc := range []struct {
		name     string
		opts     []*corev1.SELinuxOptions
		podSC    *corev1.PodSecurityContext
		supports bool
		want     mountContext
		multiple bool
	}{
		{name: "a label, mount supported: mounted with it",
			opts: opts("s0:c1,c2"), supports: true,
			want: mountContext{Label: ":::s0:c1,c2", Policy: corev1.SELinuxChangePolicyMountOption}},
		{name: "two containers with the same label",
			opts: opts("s0:c1,c2", "s0:c1,c2"), supports: true,
			want: mountContext{Label: ":::s0:c1,c2", Policy: corev1.SELinuxChangePolicyMountOption}},
		{name: "explicit MountOption",
			opts: opts("s0:c1,c2"), podSC: policy(corev1.SELinuxChangePolicyMountOption), supports: true,
			want: mountContext{Label: ":::s0:c1,c2", Policy: corev1.SELinuxChangePolicyMountOption}},
		{name: "the pod opted into Recursive: no mount label",
			opts: opts("s0:c1,c2"), podSC: policy(corev1.SELinuxChangePolicyRecursive), supports: true,
			want: mountContext{Policy: corev1.SELinuxChangePolicyRecursive}},
		{name: "the plugin cannot mount with a context: Recursive",
			opts: opts("s0:c1,c2"), supports: false,
			want: mountContext{Policy: corev1.SELinuxChangePolicyRecursive}},
		{name: "no label: Recursive",
			supports: true,
			want:     mountContext{Policy: corev1.SELinuxChangePolicyRecursive}},
		{name: "empty options are no label: Recursive",
			opts: opts(""), supports: true,
			want: mountContext{Policy: corev1.SELinuxChangePolicyRecursive}},
		{name: "two containers with different labels",
			opts: opts("s0:c1,c2", "s0:c3,c4"), supports: true, multiple: true},
		{name: "different labels count even where the plugin cannot mount with a context",
			opts: opts("s0:c1,c2", ""), supports: false, multiple: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := decideMountContext(tc.opts, tc.podSC, tc.supports)
			var multiple *multipleLabelsError
			if tc.multiple != errors.As(err, &multiple) {
				t.Fatalf("error %v, want a multiple-labels error: %t", err, tc.multiple)
			}
			if !tc.multiple && got != tc.want {
				t.Errorf("got %+v, want %+v", got, tc.want)
			}
		})
	}
}
