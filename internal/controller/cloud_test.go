package controller

import (
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	cloudprovider "k8s.io/cloud-provider"
	"k8s.io/cloud-provider/fake"

	"github.com/kcm/kcm/internal/controller/servicelb"
	"github.com/kcm/kcm/internal/setup"
)

// untaggedProvider is a provider without a cluster ID, which upstream refuses unless
// --allow-untagged-cloud.
const untaggedProvider = "kcm-test-untagged"

func init() {
	cloudprovider.RegisterCloudProvider(untaggedProvider, func(io.Reader) (cloudprovider.Interface, error) {
		return untagged{&fake.Cloud{Balancers: map[string]fake.Balancer{}}}, nil
	})
}

type untagged struct{ *fake.Cloud }

func (untagged) HasClusterID() bool { return false }

// --cloud-provider chooses the cloud loops' provider as the cloud-controller-manager does: none
// or "external" leaves the loops out, a name no compiled-in provider registered and an
// unreadable --cloud-config stop kcm at startup, and a provider without a cluster ID needs
// --allow-untagged-cloud. service-lb-controller's Setup is the witness for all four loops, which
// get their provider through the same internal/cloud.Provider.
func TestCloudProviderChoice(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "absent.yaml")
	for _, tc := range []struct {
		name string
		args []string
		// want is "" for a controller set up, "skipped", or a substring of the error.
		want string
	}{
		{"no provider", nil, "skipped"},
		{"external", []string{"--cloud-provider=external"}, "skipped"},
		{"unknown", []string{"--cloud-provider=nosuch"}, `unknown cloud provider "nosuch"`},
		{"unreadable config", []string{"--cloud-provider=pool", "--cloud-config=" + missing}, "couldn't open cloud provider configuration"},
		{"untagged", []string{"--cloud-provider=" + untaggedProvider}, "no ClusterID found"},
		{"untagged allowed", []string{"--cloud-provider=" + untaggedProvider, "--allow-untagged-cloud"}, ""},
		{"pool", []string{"--cloud-provider=pool"}, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			root := unstartedContext(t, Registry(), tc.args...)
			err := servicelb.Descriptor.Setup(root.For(servicelb.Descriptor))
			switch {
			case tc.want == "" && err != nil:
				t.Errorf("set up failed: %v", err)
			case tc.want == "skipped" && !errors.Is(err, setup.ErrSkipped):
				t.Errorf("got %v, want the controller skipped", err)
			case tc.want != "" && tc.want != "skipped" && (err == nil || !strings.Contains(err.Error(), tc.want)):
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
}
