package metricsapi_test

import (
	"context"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// asKCM is the admin config with the content type kcm's clients ask for
// (--kube-api-content-type's default): the harness answers JSON, which they accept too.
func asKCM() *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.ContentType = runtime.ContentTypeProtobuf
	return cfg
}

func servedGroups(disco discovery.DiscoveryInterface) []string {
	GinkgoHelper()
	groups, err := disco.ServerGroups()
	Expect(err).NotTo(HaveOccurred())
	var names []string
	for _, g := range groups.Groups {
		names = append(names, g.Name)
	}
	return names
}

func pod(ctx context.Context, ns, name string, lbls map[string]string, containers ...string) *corev1.Pod {
	GinkgoHelper()
	p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: lbls}}
	for _, c := range containers {
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "busybox"})
	}
	Expect(env.Client.Create(ctx, p)).To(Succeed())
	return p
}
