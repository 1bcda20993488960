//go:build linux

package process_test

import (
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

var _ = Describe("The secure port", func() {
	It("serves /healthz to anyone, no /readyz or /livez, and metrics to no anonymous client", func() {
		port := freePort()
		p := startKCM("kcm", "--leader-elect=false", "--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port))
		hc := &http.Client{
			Timeout:   5 * time.Second,
			Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, // self-signed
		}
		DeferCleanup(hc.CloseIdleConnections)
		get := func(path string) func() (string, error) {
			return func() (string, error) {
				resp, err := hc.Get(fmt.Sprintf("https://127.0.0.1:%d%s", port, path))
				if err != nil {
					return "", err
				}
				defer resp.Body.Close()
				body, err := io.ReadAll(resp.Body)
				return fmt.Sprintf("%d %s", resp.StatusCode, body), err
			}
		}
		Eventually(get("/healthz")).WithTimeout(30*time.Second).Should(Equal("200 ok"), "kcm: %s", p.State())
		// As upstream kube-controller-manager: no /readyz, no /livez.
		Expect(get("/readyz")()).To(HavePrefix("404 "))
		Expect(get("/livez")()).To(HavePrefix("404 "))
		Expect(get("/metrics")()).To(MatchRegexp(`^40[13] `), "/metrics without credentials")
	})
})

// freePort returns a TCP port on 127.0.0.1 nothing listens on at the moment.
func freePort() int {
	GinkgoHelper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	Expect(err).NotTo(HaveOccurred())
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
