package explain

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/groups"
	"github.com/kcm/kcm/internal/track"
)

// The controllers' own views, read from the kcm leader: either at an address given
// (--kcm-url, with the kubeconfig's own credentials, as kcm's secure port authenticates by
// delegation), or through the API server's pods/proxy to the leader's pod, found from the
// Lease's holder. With controller groups, each controller's view is read from the holder of
// its group's Lease (findLeaders, below).

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

// leaseHolder is the holder of the one Lease, kube-system/kube-controller-manager.
func leaseHolder(ctx context.Context, cs kubernetes.Interface) (string, error) {
	lease, err := cs.CoordinationV1().Leases(leaderNamespace).Get(ctx, leaderLease, metav1.GetOptions{})
	if err != nil {
		return "", fmt.Errorf("reading the Lease %s/%s: %w", leaderNamespace, leaderLease, err)
	}
	if lease.Spec.HolderIdentity == nil || *lease.Spec.HolderIdentity == "" {
		return "", errors.New("the Lease kube-system/kube-controller-manager has no holder")
	}
	return *lease.Spec.HolderIdentity, nil
}

// holderPod is the pod of a Lease holder ("<hostname>_<uuid>"): kubeadm's static pod
// kube-controller-manager-<host> in kube-system, or the pod labelled
// component=kube-controller-manager on that host.
func holderPod(ctx context.Context, cs kubernetes.Interface, holder string) (*corev1.Pod, error) {
	host, _, _ := strings.Cut(holder, "_")
	pods, err := cs.CoreV1().Pods(leaderNamespace).List(ctx, metav1.ListOptions{LabelSelector: "component=kube-controller-manager"})
	if err != nil {
		return nil, fmt.Errorf("listing the kube-controller-manager pods: %w", err)
	}
	if p := leaderPod(pods.Items, host); p != nil {
		return p, nil
	}
	return nil, fmt.Errorf("no kube-system pod labelled component=kube-controller-manager runs on %s, the Lease holder's host", host)
}

// Controller groups (kcm's --controller-groups, internal/groups): each group is led under its
// own Lease, labelled groups.GroupLabel=kube-controller-manager and annotated with its
// controllers (groups.ControllersAnnotation), and each replica serves the views of the
// controllers it runs. So a controller's view is read from the holder of the group Lease that
// names it; a controller no held group Lease names, from the one Lease's leader, as without
// groups. No held group Lease (groups off, or every group released): the one Lease for all.

// target is one kcm the views are read from: a Lease's holder, and its pod or the address
// given for it (--kcm-holder-url).
type target struct {
	// leases are the group Leases it holds that name the controllers asked (group mode).
	leases []string
	holder string
	url    string      // the address given for the holder, if any
	pod    *corev1.Pod // else its pod
	err    error       // why it cannot be found
	// controllers are the controllers asked whose views are read from it (group mode).
	controllers []string
}

// lookup says where each controller's view is read from.
type lookup struct {
	// single is the one Lease's leader: for every controller without held group Leases, else
	// for the controllers no held group Lease names; nil when none is read from it.
	single *target
	// groups are the group Leases' holders the controllers asked are read from, in the order
	// asked; byController maps each controller a held group Lease names to its holder's.
	groups       []*target
	byController map[string]*target
}

// of is where controller's view is read from; nil: nowhere.
func (l lookup) of(controller string) *target {
	if t, ok := l.byController[controller]; ok {
		return t
	}
	return l.single
}

// findLeaders finds where the controllers' views (distinct names) are read from: by the held group Leases, or
// the one Lease. A holder with an address in urls is not looked for among the pods. A failure
// to list the group Leases (no rights to list Leases) is the one Lease's path, its error
// said only if that fails too.
func findLeaders(ctx context.Context, cs kubernetes.Interface, controllers []string, urls holderURLs) lookup {
	held, listErr := heldGroupLeases(ctx, cs)
	find := func(holder string) *target {
		t := &target{holder: holder}
		if t.url = urls.of(holder); t.url == "" {
			t.pod, t.err = holderPod(ctx, cs, holder)
		}
		return t
	}
	single := func() *target {
		holder, err := leaseHolder(ctx, cs)
		if err != nil {
			if listErr != nil {
				err = fmt.Errorf("%w (listing the controller groups' Leases: %v)", err, listErr)
			}
			return &target{err: err}
		}
		return find(holder)
	}
	if len(held) == 0 {
		return lookup{single: single()}
	}
	l := lookup{byController: map[string]*target{}}
	byHolder := map[string]*target{}
	for _, c := range controllers {
		g, ok := held[c]
		if !ok {
			if l.single == nil {
				l.single = single()
			}
			l.single.controllers = append(l.single.controllers, c)
			continue
		}
		t := byHolder[g.holder]
		if t == nil {
			t = find(g.holder)
			byHolder[g.holder] = t
			l.groups = append(l.groups, t)
		}
		if !slices.Contains(t.leases, g.lease) {
			t.leases = append(t.leases, g.lease)
		}
		t.controllers = append(t.controllers, c)
		l.byController[c] = t
	}
	return l
}

// groupLease is a held group Lease: its name and holder.
type groupLease struct{ lease, holder string }

// heldGroupLeases reads the group Leases of kube-controller-manager: by controller, the held
// one that names it. A released Lease (no holder) names no one.
func heldGroupLeases(ctx context.Context, cs kubernetes.Interface) (map[string]groupLease, error) {
	list, err := cs.CoordinationV1().Leases(leaderNamespace).List(ctx, metav1.ListOptions{LabelSelector: groups.GroupLabel + "=" + leaderLease})
	if err != nil {
		return nil, err
	}
	held := map[string]groupLease{}
	for _, l := range list.Items {
		holder := ptr.Deref(l.Spec.HolderIdentity, "")
		if holder == "" {
			continue
		}
		for _, c := range strings.Split(l.Annotations[groups.ControllersAnnotation], ",") {
			if c = strings.TrimSpace(c); c != "" {
				held[c] = groupLease{lease: l.Name, holder: holder}
			}
		}
	}
	return held, nil
}

// holderURLs are the addresses given for Lease holders (--kcm-holder-url HOLDER=URL), by
// holder identity or its host.
type holderURLs map[string]string

// of is the address given for holder: by its identity, else by its host.
func (u holderURLs) of(holder string) string {
	if url, ok := u[holder]; ok {
		return url
	}
	host, _, _ := strings.Cut(holder, "_")
	return u[host]
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

// reader reads views from one kcm until it fails once: its failure is then said in the report.
type reader struct {
	get leaderSource
	err error
}

// controllers are the distinct controllers of the tree's links, in the order walked.
func (n *observed) controllers() []string {
	var out []string
	var walk func(*observed)
	walk = func(n *observed) {
		if n.controller != "" && !slices.Contains(out, n.controller) {
			out = append(out, n.controller)
		}
		for _, c := range n.children {
			walk(c)
		}
	}
	walk(n)
	return out
}

// addViews reads each link's view from its controller's reader (none: no view). A failure
// other than 404 stops the reads from that reader (its kcm stopped answering, or refuses
// them all) and is kept in it; the views read stay.
func addViews(ctx context.Context, n *observed, readerOf func(controller string) *reader) {
	if n.controller != "" {
		if r := readerOf(n.controller); r != nil && r.get != nil && r.err == nil {
			key := n.viewKey
			if key == "" {
				key = n.obj.GetName()
				if ns := n.obj.GetNamespace(); ns != "" {
					key = ns + "/" + key
				}
			}
			n.view, r.err = r.get.view(ctx, n.controller, key)
		}
	}
	for _, c := range n.children {
		addViews(ctx, c, readerOf)
	}
}
