//go:build linux

package main

import "testing"

func TestCloudProvider(t *testing.T) {
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"none", []string{"--kubeconfig=x", "--controllers=*"}, ""},
		{"equals", []string{"--kubeconfig=x", "--cloud-provider=pool"}, "pool"},
		{"single dash", []string{"-cloud-provider=pool"}, "pool"},
		{"separate value", []string{"--cloud-provider", "pool", "--v=2"}, "pool"},
		{"the last one wins", []string{"--cloud-provider=pool", "--cloud-provider=external"}, "external"},
		{"emptied", []string{"--cloud-provider=pool", "--cloud-provider="}, ""},
		{"a value, not a flag", []string{"--cluster-name", "--cloud-provider=pool"}, "pool"},
		{"another flag's prefix", []string{"--cloud-provider-x=pool", "--cloud-config=pool"}, ""},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if got := cloudProvider(tt.args); got != tt.want {
				t.Errorf("cloudProvider(%q) = %q, want %q", tt.args, got, tt.want)
			}
		})
	}
}
