// Package faultproxy is a fault-injecting reverse proxy that sits between kcm and
// kube-apiserver in test/chaos: kcm's kubeconfig points at the proxy, and a spec throttles,
// fails, resets, delays, cuts or partitions kcm's traffic at will (Proxy.Set).
//
// # TLS termination and identity
//
// The proxy terminates TLS with a serving certificate of its own, signed by a fresh CA
// (Proxy.CAPEM), and serves HTTP/2 and HTTP/1.1 as kube-apiserver does. Terminating TLS loses
// the client certificate kcm would present, so the proxy is given that certificate (kubeadm's
// controller-manager.conf, Options.ClientCert) and presents it upstream itself. It must not
// present it on every request: with --use-service-account-credentials each controller sends
// its ServiceAccount's bearer token, and kube-apiserver authenticates x509 before tokens, so a
// certificate on the connection would turn every controller into system:kube-controller-manager.
// Hence two upstream transports: a request without an Authorization header goes over the one
// presenting the client certificate, a request with one over the one presenting none.
// Proxy.WriteKubeconfig writes the kubeconfig kcm runs with: the proxy's URL and CA and no
// credentials of its own.
//
// # Audit marking
//
// Every forwarded request's User-Agent gets " via-faultproxy" appended (UserAgentSuffix), so
// the API server's audit log tells kcm's traffic through the proxy from anything else (the
// suite checks from the audit log's userAgent that no write of a partitioned leader was
// accepted after its renew deadline).
//
// # Faults
//
// A Fault holds every fault at once; Set replaces the current one at any time, Heal clears it.
// Each request reads the fault when it arrives, decides its fate (held, throttled, failed,
// reset, delayed) from a source seeded with Options.Seed, then acts. Watch streams in flight
// are cut by CutWatches or every Fault.CutWatchesEvery, and freeze while Fault.Blackhole holds.
//
// # Use
//
// On test/cluster, with kcm started from its kubeadm command line:
//
//	opts, err := faultproxy.OptionsFromKubeconfig(c.ControllerManagerKubeconfig)
//	opts.Seed = GinkgoRandomSeed()
//	p, err := faultproxy.New(opts)
//	err = p.WriteKubeconfig(filepath.Join(dir, "faultproxy.conf"))
//	args := c.KubeadmArgs("--kubeconfig=" + filepath.Join(dir, "faultproxy.conf"))
//	// --authentication-kubeconfig and --authorization-kubeconfig stay on controller-manager.conf:
//	// kcm's delegated authn/authz of its own /metrics and /healthz is not under test.
//	p.Set(faultproxy.Fault{Throttle: 0.3, Latency: 50 * time.Millisecond})
//	... // then p.Stats(), p.Heal(), p.ResetStats(), and p.Close() after kcm has stopped
//
// The partition is the proxy's, not the network's: during a Blackhole the proxy still
// completes TLS handshakes and answers HTTP/2 PINGs, so a client notices the partition only
// through its own request timeouts, not through connection health checks.
package faultproxy
