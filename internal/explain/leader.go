package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/kcm/kcm/internal/track"
)

// The controllers' own views, read from the kcm leader: either at an address given
// (--kcm-url, with the kubeconfig's own credentials, as kcm's secure port authenticates by
// delegation), or through the API server's pods/proxy to the leader's pod, found from the
// Lease's holder.

// leaderSource is an HTTP GET of a path of the leader's secure port.
type leaderSource func(ctx context.Context, path string) (code int, body []byte, err error)

// probe checks the leader answers at all (/healthz, which kcm serves to anyone).
func (get leaderSource) probe(ctx context.Context) error {
	code, body, err := get(ctx, "/healthz")
	switch {
	case err != nil:
		return err
	case code != http.StatusOK:
		return fmt.Errorf("/healthz: %d %s: %s", code, http.StatusText(code), oneLine(string(body)))
	}
	return nil
}

// view reads one controller's view of a key: nil, nil when the controller has not seen it
// (404).
func (get leaderSource) view(ctx context.Context, controller, key string) (*track.View, error) {
	return decodeView(get(ctx, track.DebugPath+"/"+controller+"/objects/"+key))
}

// leaderLease is where kcm (and upstream) holds leadership.
const (
	leaderNamespace = "kube-system"
	leaderLease     = "kube-controller-manager"
	securePort      = 10257
)

// direct reads the leader's secure port at url with the kubeconfig's credentials (client
// certificate, bearer token, exec plugin), trusting caFile or nothing (insecure) for kcm's
// usually self-signed serving certificate.
func direct(cfg *rest.Config, url, caFile string, insecure bool) (leaderSource, error) {
	c := rest.CopyConfig(cfg)
	c.Host = url
	c.APIPath = ""
	c.TLSClientConfig.CAFile, c.TLSClientConfig.CAData = caFile, nil
	c.TLSClientConfig.Insecure = insecure
	c.TLSClientConfig.ServerName = ""
	if c.Timeout == 0 {
		c.Timeout = 10 * time.Second
	}
	hc, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("client for %s: %w", url, err)
	}
	base := strings.TrimSuffix(url, "/")
	return func(ctx context.Context, path string) (int, []byte, error) {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+path, nil)
		if err != nil {
			return 0, nil, err
		}
		resp, err := hc.Do(req)
		if err != nil {
			return 0, nil, err
		}
		defer func() { _ = resp.Body.Close() }()
		body, err := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
		return resp.StatusCode, body, err
	}, nil
}

// proxied reads the leader pod's secure port through the API server's pods/proxy, with the
// user's rights on pods/proxy in kube-system.
func proxied(cs kubernetes.Interface, pod string) leaderSource {
	return func(ctx context.Context, path string) (int, []byte, error) {
		res := cs.CoreV1().RESTClient().Get().Namespace(leaderNamespace).Resource("pods").
			Name(fmt.Sprintf("https:%s:%d", pod, securePort)).SubResource("proxy").Suffix(path).Do(ctx)
		var code int
		res.StatusCode(&code)
		body, err := res.Raw()
		if code != 0 {
			err = nil // an HTTP answer: its code says it
		}
		return code, body, err
	}
}

func decodeView(code int, body []byte, err error) (*track.View, error) {
	switch {
	case err != nil:
		return nil, err
	case code == http.StatusNotFound:
		return nil, nil
	case code != http.StatusOK:
		return nil, fmt.Errorf("%d %s: %s", code, http.StatusText(code), oneLine(string(body)))
	}
	v := &track.View{}
	if err := json.Unmarshal(body, v); err != nil {
		return nil, fmt.Errorf("decoding a view: %w", err)
	}
	return v, nil
}

// findLeader finds the leader's pod from the Lease's holder ("<hostname>_<uuid>"):
// kubeadm's static pod kube-controller-manager-<node> in kube-system, or the pod labelled
// component=kube-controller-manager on that node.
func findLeader(ctx context.Context, cs kubernetes.Interface) (holder string, pod *corev1.Pod, err error) {
	var lease *coordinationv1.Lease
	lease, err = cs.CoordinationV1().Leases(leaderNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
	if err != nil {
		return "", nil, fmt.Errorf("reading the Lease %s/%s: %w", leaderNamespace, leaderLease, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", nil, errors.New("the Lease kube-system/kube-controller-manager has no holder")
	}
	holder = *lease.Spec.HolderIdentity
	host, _, _ := strings.Cut(holder, "_")
	pods, err := cs.CoreV1().Pods(leaderNamespace).List(ctx, metav1.ListOptions{LabelSelector: "component=kube-controller-manager"})
	if err != nil {
		return holder, nil, fmt.Errorf("listing the kube-controller-manager pods: %w", err)
	}
	if p := leaderPod(pods.Items, host); p != nil {
		return holder, p, nil
	}
	return holder, nil, fmt.Errorf("no kube-system pod labelled component=kube-controller-manager runs on %s, the Lease holder's host", host)
}

// leaderPod picks the leader's pod on host: kubeadm's static pod name, else the pod whose
// node (or name, hostNetwork's hostname) is the host.
func leaderPod(pods []corev1.Pod, host string) *corev1.Pod {
	for i, p := range pods {
		if p.Name == "kube-controller-manager-"+host {
			return &pods[i]
		}
	}
	for i, p := range pods {
		if p.Spec.NodeName == host || p.Name == host || p.Spec.Hostname == host {
			return &pods[i]
		}
	}
	return nil
}

// addViews reads each link's view from the leader. A failure other than 404 stops the
// reads (the leader stopped answering, or refuses them all) and is returned; the views read
// stay.
func addViews(ctx context.Context, n *observed, get leaderSource) error {
	if n.controller != "" {
		key := n.viewKey
		if key == "" {
			key = n.obj.GetName()
			if ns := n.obj.GetNamespace(); ns != "" {
				key = ns + "/" + key
			}
		}
		v, err := get.view(ctx, n.controller, key)
		if err != nil {
			return err
		}
		n.view = v
	}
	for _, c := range n.children {
		if err := addViews(ctx, c, get); err != nil {
			return err
		}
	}
	return nil
}
