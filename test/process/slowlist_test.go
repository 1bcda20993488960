//go:build linux

package process_test

import (
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// A large cluster's first list can take longer than controller-runtime's default
// CacheSyncTimeout (2 minutes), after which a controller's Start fails and the process exits,
// to list again from the start on every restart. Upstream waits for its caches as long as it
// takes. Here an API server made slow holds the first list of ServiceAccounts (which the
// serviceaccount-controller's cache needs) for stall.
var _ = Describe("A slow first list", func() {
	const (
		stall = 15 * time.Second
		// shortWait is the cache-sync timeout of a kcm built with the test knob: shorter than
		// the stall, so that the knob's build shows what a timeout in effect does (what
		// controller-runtime's default does to kcm after 2 minutes).
		shortWait = 5 * time.Second
	)

	It("does not make kcm exit: it waits, /healthz stays ok, and the controller works once the list arrives", func() {
		proxy := newSlowListProxy("/api/v1/serviceaccounts", stall)
		port := freePort()
		// Every controller on by default: none may give up waiting (the ServiceAccount
		// controllers wait for the list, the others run).
		p := startKCM("kcm", "--kubeconfig="+proxy.kubeconfig, "--root-ca-file="+proxy.rootCA,
			"--bind-address=127.0.0.1", "--secure-port="+strconv.Itoa(port), healthPaths)
		get := healthGetter(port)

		Eventually(proxy.stalled.Load).WithTimeout(30*time.Second).Should(BeNumerically(">", 0), "no list of ServiceAccounts was held")
		Eventually(get("/healthz?verbose")).WithTimeout(10 * time.Second).
			Should(And(HavePrefix("200 [+]leaderElection ok\n"), ContainSubstring("[+]serviceaccount-controller ok\n")))
		// Upstream's /healthz stays ok while its informers wait; so does kcm's.
		if stallLeft := time.Until(proxy.releaseAt.Add(-time.Second)); stallLeft > 0 {
			Consistently(func(g Gomega) {
				g.Expect(p.Exited()).To(BeFalse(), "kcm exited during the stall: %s", p.State())
				g.Expect(get("/healthz")()).To(Equal("200 ok"))
			}).WithTimeout(stallLeft).WithPolling(500 * time.Millisecond).Should(Succeed())
		}
		Expect(workersStarted(p, "serviceaccount-controller")()).To(BeZero(), "the controller started before its cache synced")

		Eventually(workersStarted(p, "serviceaccount-controller")).WithTimeout(30 * time.Second).Should(Equal(1))
		ns := newNamespace(env.Client)
		Eventually(getSA(env.Client, ns, defaultSA)).WithTimeout(30 * time.Second).Should(Succeed())
		Expect(p.Lines("Could not wait for Cache to sync")).To(BeEmpty())
		Expect(p.Lines("timed out waiting")).To(BeEmpty())
		Expect(p.Exited()).To(BeFalse(), "kcm exited: %s", p.State())
	})

	// The mechanism the spec above rules out, made visible within the same stall: kcm built
	// with its cache-sync timeout lowered below the stall (a link-time knob, never set in kcm's
	// builds) exits as controller-runtime's default makes it exit after 2 minutes.
	It("would make kcm exit if a cache-sync timeout shorter than the list were in effect", func() {
		binary := filepath.Join(binDir, "kcm-short-cache-sync")
		buildWith(binary, "-X", "github.com/kcm/kcm/internal/manager.cacheSyncTimeoutForTests="+shortWait.String())
		proxy := newSlowListProxy("/api/v1/serviceaccounts", stall)
		p := startProcess("kcm-short-cache-sync", syscall.SIGKILL, binary, "--kubeconfig="+proxy.kubeconfig, "--secure-port=0",
			"--leader-elect-resource-name="+uniqueLeaseName(), "--controllers=serviceaccount-controller")
		code, exited := p.Wait(stall + 30*time.Second)
		Expect(exited).To(BeTrue(), "kcm with a %s cache-sync timeout outlived a %s list", shortWait, stall)
		Expect(code).To(Equal(1))
		Expect(proxy.stalled.Load()).To(BeNumerically(">", 0))
		Expect(p.exitedAt).To(BeTemporally("<", proxy.releaseAt), "kcm exited only after the list arrived")
		Expect(p.Lines("Could not wait for Cache to sync")).NotTo(BeEmpty())
	})
})

// slowListProxy stands between kcm and the suite's API server (as an administrator) and holds
// every initial list of one collection until releaseAt: a plain list (a GET that is no watch)
// or a streaming one (a watch with sendInitialEvents, client-go's WatchListClient).
type slowListProxy struct {
	kubeconfig string
	// rootCA is the API server's CA, which the proxy's kubeconfig (plain HTTP) does not name.
	rootCA    string
	releaseAt time.Time
	stalled   atomic.Int32
}

func newSlowListProxy(collection string, stall time.Duration) *slowListProxy {
	GinkgoHelper()
	target, err := url.Parse(env.Config.Host)
	Expect(err).NotTo(HaveOccurred())
	transport, err := rest.TransportFor(env.Config)
	Expect(err).NotTo(HaveOccurred())
	p := &slowListProxy{}
	var once sync.Once
	rp := &httputil.ReverseProxy{
		Rewrite:       func(r *httputil.ProxyRequest) { r.SetURL(target) },
		Transport:     transport,
		FlushInterval: -1, // watches stream
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		q := r.URL.Query()
		if r.Method == http.MethodGet && r.URL.Path == collection && (q.Get("watch") != "true" || q.Get("sendInitialEvents") == "true") {
			once.Do(func() { p.releaseAt = time.Now().Add(stall) })
			p.stalled.Add(1)
			select {
			case <-time.After(time.Until(p.releaseAt)):
			case <-r.Context().Done():
				return
			}
		}
		rp.ServeHTTP(w, r)
	}))
	DeferCleanup(srv.Close)

	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["slow"] = &clientcmdapi.Cluster{Server: srv.URL}
	cfg.AuthInfos["slow"] = &clientcmdapi.AuthInfo{}
	cfg.Contexts["slow"] = &clientcmdapi.Context{Cluster: "slow", AuthInfo: "slow"}
	cfg.CurrentContext = "slow"
	f, err := os.CreateTemp(binDir, "slow-kubeconfig-")
	Expect(err).NotTo(HaveOccurred())
	Expect(f.Close()).To(Succeed())
	Expect(clientcmd.WriteToFile(*cfg, f.Name())).To(Succeed())
	p.kubeconfig = f.Name()
	p.rootCA = f.Name() + ".ca.crt"
	Expect(os.WriteFile(p.rootCA, env.Config.CAData, 0o600)).To(Succeed())
	return p
}

// buildWith builds kcm into out with extra -ldflags.
func buildWith(out string, ldflags ...string) {
	GinkgoHelper()
	cmd := exec.Command("go", "build", "-o", out, "-ldflags", strings.Join(ldflags, " "), "github.com/kcm/kcm")
	cmd.Dir = root
	output, err := cmd.CombinedOutput()
	Expect(err).NotTo(HaveOccurred(), "go build:\n%s", output)
}
