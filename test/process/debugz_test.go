//go:build linux

package process_test

import (
	"crypto/tls"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"reflect"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/apimachinery/pkg/util/version"

	"github.com/kcm/kcm/internal/options"
)

var _ = Describe("The debug and status pages", func() {
	It("answer /configz, /flagz, /statusz and /metrics/slis as upstream, behind authentication and authorization", func() {
		token := pagesToken("/configz", "/flagz", "/statusz", "/metrics/slis", "/healthz")
		// A command line with flags /configz shows, some given by alias or as text kcm
		// only accepts (60s, printed 1m0s), one split by upstream (the service ranges).
		conf, connection := kubeadmConnection()
		args := append(connection, "--leader-elect=false", "--bind-address=127.0.0.1",
			"--leader-elect-resource-name=kcm-debugz", "--controllers=ttl,-bootstrapsigner",
			"--authentication-kubeconfig="+conf, "--authorization-kubeconfig="+conf,
			"--concurrent-gc-syncs=7", "--node-monitor-grace-period=60s", "--kube-api-qps=50",
			"--horizontal-pod-autoscaler-tolerance=0.2", "--cluster-name=debugz",
			"--service-cluster-ip-range=10.96.0.0/12,fd00:10:96::/112", "--disabled-metrics=a_metric,b_metric")
		port := freePort()
		p := startKCM("kcm", append(args, "--secure-port="+strconv.Itoa(port))...)
		kcm := readPages(p, port, token)

		Expect(kcm.codes).To(Equal(map[string]string{
			"/configz":      "200 application/json",
			"/flagz":        "200 text/plain; charset=utf-8",
			"/statusz":      "200 text/plain; charset=utf-8",
			"/metrics/slis": "200 text/plain; version=0.0.4; charset=utf-8; escaping=underscores",
		}), "kcm: %s", p.State())
		for _, path := range []string{"/configz", "/flagz", "/statusz", "/metrics/slis"} {
			code, _, _ := debugzGet(port, "", path, "")
			Expect(code).To(Equal(http.StatusForbidden), "%s without credentials: system:anonymous is not authorized", path)
		}
		generic := kcm.configz["kubecontrollermanager.config.k8s.io"].(map[string]any)["Generic"].(map[string]any)
		Expect(generic["Controllers"]).To(Equal([]any{"ttl-controller", "-bootstrap-signer-controller"}), "aliases by canonical names")
		Expect(kcm.flagz).To(HaveKeyWithValue("node-monitor-grace-period", "1m0s"))
		Expect(kcm.statusz.BinaryVersion).NotTo(Equal("1.37.1"), "kcm's own version")
		Expect(kcm.slis).To(ContainElement(`kubernetes_healthchecks_total{name="ttl-controller",status="success",type="healthz"}`),
			"kcm's /healthz checks are counted")

		bin := upstreamKCM()
		if bin == "" {
			Skip("upstream's kube-controller-manager is not built (make bench builds it): not compared with its answers")
		}
		upstreamPort := freePort()
		u := startProcess("upstream", syscall.SIGKILL, bin, append(args, "--secure-port="+strconv.Itoa(upstreamPort))...)
		up := readPages(u, upstreamPort, token)

		Expect(kcm.codes).To(Equal(up.codes), "status codes and content types")
		Expect(jsonLeafDiff(up.configz, kcm.configz)).To(BeEmpty(), "/configz, field by field")
		// The ports differ, and so does every process's own version.
		delete(up.flagz, "secure-port")
		delete(kcm.flagz, "secure-port")
		// kcm also has cloud-controller-manager's flags for the cloud loops it runs.
		for _, name := range options.CloudFlagNames() {
			Expect(kcm.flagz).To(HaveKey(name))
			delete(kcm.flagz, name)
		}
		// And its own flags, which upstream does not have.
		for _, name := range options.OwnFlagNames() {
			Expect(kcm.flagz).To(HaveKey(name))
			delete(kcm.flagz, name)
		}
		Expect(kcm.flagz).To(Equal(up.flagz), "/flagz")
		upStatus, kcmStatus := up.statusz, kcm.statusz
		upStatus.BinaryVersion, kcmStatus.BinaryVersion = "", ""
		Expect(kcmStatus).To(Equal(upStatus), "/statusz")
		Expect(kcm.slis).To(Equal(up.slis), "the healthcheck series of /metrics/slis")
	})
})

// pages is what a process's debug and status pages answered.
type pages struct {
	// codes is each path's "<status> <content type>".
	codes   map[string]string
	configz map[string]any
	flagz   map[string]string
	statusz struct {
		BinaryVersion    string   `json:"binaryVersion"`
		EmulationVersion string   `json:"emulationVersion"`
		Paths            []string `json:"paths"`
	}
	// slis are the healthcheck series of /metrics/slis (values left out), sorted.
	slis []string
}

// readPages reads the pages of the process serving port with token, once its /healthz (which
// /metrics/slis then counts) has the ttl-controller's check: upstream adds its controllers'
// checks only once they start, and answers with a "ping" check until then.
func readPages(p *process, port int, token string) pages {
	GinkgoHelper()
	Eventually(func() (string, error) {
		code, _, body, err := debugzRequest(port, token, "/healthz?verbose", "")
		return fmt.Sprintf("%d %s", code, body), err
	}).WithTimeout(30*time.Second).Should(And(HavePrefix("200 "), ContainSubstring("[+]ttl-controller ok")), "%s: %s", p.name, p.State())
	got := pages{codes: map[string]string{}}
	for _, path := range []string{"/configz", "/flagz", "/statusz", "/metrics/slis"} {
		code, ctype, _ := debugzGet(port, token, path, "")
		got.codes[path] = fmt.Sprintf("%d %s", code, ctype)
	}
	_, _, body := debugzGet(port, token, "/configz", "")
	Expect(json.Unmarshal([]byte(body), &got.configz)).To(Succeed(), "%s /configz: %s", p.name, body)
	// Upstream lists the ignored resources in map order.
	if gc, ok := got.configz["kubecontrollermanager.config.k8s.io"].(map[string]any)["GarbageCollectorController"].(map[string]any); ok {
		if list, ok := gc["GCIgnoredResources"].([]any); ok {
			sort.Slice(list, func(i, j int) bool { return fmt.Sprint(list[i]) < fmt.Sprint(list[j]) })
		}
	}

	_, _, body = debugzGet(port, token, "/flagz", "application/json;g=config.k8s.io;v=v1beta1;as=Flagz")
	var flagz struct {
		Flags map[string]string `json:"flags"`
	}
	Expect(json.Unmarshal([]byte(body), &flagz)).To(Succeed(), "%s /flagz: %s", p.name, body)
	got.flagz = flagz.Flags

	_, _, body = debugzGet(port, token, "/statusz", "application/json;g=config.k8s.io;v=v1beta1;as=Statusz")
	Expect(json.Unmarshal([]byte(body), &got.statusz)).To(Succeed(), "%s /statusz: %s", p.name, body)
	_, err := version.Parse(got.statusz.BinaryVersion)
	Expect(err).NotTo(HaveOccurred(), "%s's binary version", p.name)

	_, _, body = debugzGet(port, token, "/metrics/slis", "")
	// Upstream's "ping" stands for its checks before its controllers start; kcm has its
	// checks from its first answer, so only the checks both have are compared.
	for _, series := range regexp.MustCompile(`(?m)^kubernetes_healthchecks?(_total)?\{[^}]*\}`).FindAllString(body, -1) {
		if !strings.Contains(series, `name="ping"`) {
			got.slis = append(got.slis, series)
		}
	}
	sort.Strings(got.slis)
	return got
}

// jsonLeafDiff lists, sorted, the fields (dotted paths) whose values differ.
func jsonLeafDiff(want, got any) []string {
	var diffs []string
	var walk func(prefix string, w, g any)
	walk = func(prefix string, w, g any) {
		wm, wok := w.(map[string]any)
		gm, gok := g.(map[string]any)
		if !wok || !gok {
			if !reflect.DeepEqual(w, g) {
				diffs = append(diffs, fmt.Sprintf("%s: upstream %v, kcm %v", prefix, w, g))
			}
			return
		}
		for k := range wm {
			walk(prefix+"."+k, wm[k], gm[k])
		}
		for k := range gm {
			if _, ok := wm[k]; !ok {
				diffs = append(diffs, fmt.Sprintf("%s.%s: only kcm has it", prefix, k))
			}
		}
	}
	walk("", want, got)
	sort.Strings(diffs)
	return diffs
}

// debugzGet sends GET path to the secure port on 127.0.0.1 (with the token and Accept header
// when given) and returns the status, content type and body.
func debugzGet(port int, token, path, accept string) (int, string, string) {
	GinkgoHelper()
	code, ctype, body, err := debugzRequest(port, token, path, accept)
	Expect(err).NotTo(HaveOccurred(), "GET %s", path)
	return code, ctype, body
}

// debugzRequest is debugzGet's request, its error returned.
func debugzRequest(port int, token, path, accept string) (int, string, string, error) {
	hc := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{
		TLSClientConfig: &tls.Config{InsecureSkipVerify: true}, // the port's certificate is self-signed
	}}
	defer hc.CloseIdleConnections()
	req, err := http.NewRequest(http.MethodGet, fmt.Sprintf("https://127.0.0.1:%d%s", port, path), nil)
	if err != nil {
		return 0, "", "", err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if accept != "" {
		req.Header.Set("Accept", accept)
	}
	resp, err := hc.Do(req)
	if err != nil {
		return 0, "", "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header.Get("Content-Type"), strings.TrimSpace(string(body)), err
}
