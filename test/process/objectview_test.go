//go:build linux

package process_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strconv"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/track"
)

var _ = Describe("A controller's per-object view", func() {
	It("is served on the secure port behind its authentication and authorization", func() {
		ctx := context.Background()
		token := pagesToken("/debug/controllers/*", "/healthz")
		ns := newNamespace(env.Client)
		labels := map[string]string{"app": "viewed"}
		rs := &appsv1.ReplicaSet{
			ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "viewed"},
			Spec: appsv1.ReplicaSetSpec{
				Replicas: ptr.To[int32](1),
				Selector: &metav1.LabelSelector{MatchLabels: labels},
				Template: corev1.PodTemplateSpec{
					ObjectMeta: metav1.ObjectMeta{Labels: labels},
					Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}}},
				},
			},
		}
		Expect(env.Client.Create(ctx, rs)).To(Succeed())

		conf := kubeadmKubeconfig()
		port := freePort()
		p := startKCM("kcm", "--kubeconfig="+conf, "--use-service-account-credentials=true", "--leader-elect=false",
			"--bind-address=127.0.0.1", "--authentication-kubeconfig="+conf, "--authorization-kubeconfig="+conf,
			"--controllers=replicaset", "--secure-port="+strconv.Itoa(port))
		path := "/debug/controllers/replicaset-controller/objects/" + ns + "/viewed"
		Eventually(func(g Gomega) {
			code, ctype, body, err := debugzRequest(port, token, path, "")
			g.Expect(err).NotTo(HaveOccurred())
			g.Expect(code).To(Equal(http.StatusOK), body)
			g.Expect(ctype).To(HavePrefix("application/json"))
			var v track.View
			g.Expect(json.Unmarshal([]byte(body), &v)).To(Succeed())
			g.Expect(v.Controller).To(Equal("replicaset-controller"))
			g.Expect(v.Key).To(Equal(ns + "/viewed"))
			g.Expect(v.Syncs).NotTo(BeEmpty())
			g.Expect(v.Syncs[len(v.Syncs)-1].Result).To(Equal(track.Success))
		}).Should(Succeed(), "kcm: %s", p.State())
		code, _, _ := debugzGet(port, "", path, "")
		Expect(code).To(Equal(http.StatusForbidden), "without credentials")
		code, _, _ = debugzGet(port, token, "/debug/controllers/replicaset-controller/objects/"+ns+"/never-created", "")
		Expect(code).To(Equal(http.StatusNotFound), "a key never seen")
		code, _, _ = debugzGet(port, token, "/debug/controllers/no-such-controller/objects/"+ns+"/viewed", "")
		Expect(code).To(Equal(http.StatusNotFound), "a controller not running")
	})
})
