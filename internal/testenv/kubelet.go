package testenv

import (
	"context"
	"encoding/json"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// No kubelet or scheduler runs beside envtest's API server: a spec plays them. These are the
// stand-ins, writing what a kubelet writes (a node's conditions, addresses and capacity, a
// pod's phase, IPs and readiness) through the status subresource, as a kubelet does.

// NodeOption shapes a Node the stand-in creates.
type NodeOption func(*corev1.Node)

// NodeLabels sets the node's labels.
func NodeLabels(labels map[string]string) NodeOption {
	return func(n *corev1.Node) { n.Labels = labels }
}

// NodeAnnotations sets the node's annotations.
func NodeAnnotations(annotations map[string]string) NodeOption {
	return func(n *corev1.Node) { n.Annotations = annotations }
}

// NodeTaints sets the node's taints: exactly these, in place of the ones the API server's
// admission adds.
func NodeTaints(taints ...corev1.Taint) NodeOption {
	return func(n *corev1.Node) { n.Spec.Taints = taints }
}

// NodePodCIDRs sets the node's pod CIDRs, as if a CIDR allocator had already given them
// (none: none).
func NodePodCIDRs(cidrs ...string) NodeOption {
	return func(n *corev1.Node) {
		if len(cidrs) > 0 {
			n.Spec.PodCIDR, n.Spec.PodCIDRs = cidrs[0], cidrs
		}
	}
}

// NodeAddresses sets the addresses the kubelet reports.
func NodeAddresses(addresses ...corev1.NodeAddress) NodeOption {
	return func(n *corev1.Node) { n.Status.Addresses = addresses }
}

// NodeCapacity sets the capacity the kubelet reports, all of it allocatable.
func NodeCapacity(capacity corev1.ResourceList) NodeOption {
	return func(n *corev1.Node) { n.Status.Capacity, n.Status.Allocatable = capacity, capacity }
}

// NodeReady sets the node's Ready condition to status in place of True; "" leaves the node
// without one, as a node whose kubelet never reported.
func NodeReady(status corev1.ConditionStatus) NodeOption {
	return func(n *corev1.Node) { n.Status.Conditions = readyCondition(status) }
}

func readyCondition(status corev1.ConditionStatus) []corev1.NodeCondition {
	if status == "" {
		return nil
	}
	now := metav1.Now()
	return []corev1.NodeCondition{{Type: corev1.NodeReady, Status: status, Reason: "KubeletSays",
		LastHeartbeatTime: now, LastTransitionTime: now}}
}

// Node creates a node as its kubelet registers it and reports it Ready (NodeReady changes
// that), shaped by opts. It carries exactly the taints opts give: a not-ready taint an API
// server's TaintNodesByCondition admission may put on a new node is lifted, as
// node-lifecycle-controller does once the node is Ready. The node is left in place (Cleanup
// deletes it after the spec).
func (e *Env) Node(ctx context.Context, name string, opts ...NodeOption) *corev1.Node {
	GinkgoHelper()
	want := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: name}}
	want.Status.Conditions = readyCondition(corev1.ConditionTrue)
	for _, o := range opts {
		o(want)
	}
	n := want.DeepCopy()
	n.Status = corev1.NodeStatus{}
	Expect(e.Client.Create(ctx, n)).To(Succeed())
	if !apiequality.Semantic.DeepEqual(n.Spec.Taints, want.Spec.Taints) {
		base := n.DeepCopy()
		n.Spec.Taints = want.Spec.Taints
		Expect(e.Client.Patch(ctx, n, client.MergeFrom(base))).To(Succeed())
	}
	if !apiequality.Semantic.DeepEqual(n.Status, want.Status) {
		// The kubelet's report as a strategic merge of want's status alone, not a diff from n:
		// conditions and addresses merge by type, so one a controller wrote meanwhile (a route
		// controller's NetworkUnavailable, possibly in n already, from the taints' patch) stays.
		report, err := json.Marshal(map[string]any{"status": want.Status})
		Expect(err).NotTo(HaveOccurred())
		Expect(e.Client.Status().Patch(ctx, n, client.RawPatch(types.StrategicMergePatchType, report))).To(Succeed())
	}
	return n
}

// SetNodeReady plays the node's kubelet: its Ready condition becomes status, heartbeat now.
func (e *Env) SetNodeReady(ctx context.Context, n *corev1.Node, status corev1.ConditionStatus) {
	GinkgoHelper()
	Expect(e.Client.Get(ctx, client.ObjectKeyFromObject(n), n)).To(Succeed())
	base := n.DeepCopy()
	n.Status.Conditions = append(readyCondition(status), otherNodeConditions(n.Status.Conditions)...)
	// A strategic merge: the other conditions, merged by type, stay as the API server has them.
	Expect(e.Client.Status().Patch(ctx, n, client.StrategicMergeFrom(base))).To(Succeed())
}

func otherNodeConditions(cs []corev1.NodeCondition) []corev1.NodeCondition {
	var out []corev1.NodeCondition
	for _, c := range cs {
		if c.Type != corev1.NodeReady {
			out = append(out, c)
		}
	}
	return out
}

// Cleanup deletes obj after the spec (or the container it is called in), if it still exists.
func (e *Env) Cleanup(obj client.Object) {
	DeferCleanup(func(ctx context.Context) {
		Expect(client.IgnoreNotFound(e.Client.Delete(ctx, obj))).To(Succeed())
	})
}

// NewPod is a pod of one pause container, "app", in ns, on node ("" for none, as the
// scheduler has not bound it): what a spec shapes further (labels, volumes, claims) before
// it creates it.
func NewPod(ns, name, node string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name},
		Spec: corev1.PodSpec{
			NodeName:   node,
			Containers: []corev1.Container{{Name: "app", Image: "registry.k8s.io/pause:3.10"}},
		},
	}
}

// PodStatus is what a kubelet reports for a pod, applied to its status.
type PodStatus func(*corev1.PodStatus)

// Running is a started pod: phase Running, with the IPs (the first one is podIP), and its
// Ready condition True or False since now.
func Running(ready bool, ips ...string) PodStatus {
	return RunningSince(ready, time.Now(), ips...)
}

// RunningSince is Running with the Ready condition's lastTransitionTime at since.
func RunningSince(ready bool, since time.Time, ips ...string) PodStatus {
	return func(s *corev1.PodStatus) {
		s.Phase = corev1.PodRunning
		if len(ips) > 0 {
			s.PodIP, s.PodIPs = ips[0], nil
			for _, ip := range ips {
				s.PodIPs = append(s.PodIPs, corev1.PodIP{IP: ip})
			}
		}
		status := corev1.ConditionFalse
		if ready {
			status = corev1.ConditionTrue
		}
		setPodCondition(s, corev1.PodCondition{Type: corev1.PodReady, Status: status, LastTransitionTime: metav1.NewTime(since)})
	}
}

// Phase is a pod in phase (Pending, Succeeded, Failed, ...) with the reason ("" for none);
// the rest of its status stays.
func Phase(phase corev1.PodPhase, reason string) PodStatus {
	return func(s *corev1.PodStatus) { s.Phase, s.Reason = phase, reason }
}

func setPodCondition(s *corev1.PodStatus, c corev1.PodCondition) {
	for i := range s.Conditions {
		if s.Conditions[i].Type == c.Type {
			s.Conditions[i] = c
			return
		}
	}
	s.Conditions = append(s.Conditions, c)
}

// CreatePod creates p and, when a status is given, plays its kubelet (SetPodStatus).
func (e *Env) CreatePod(ctx context.Context, p *corev1.Pod, status ...PodStatus) *corev1.Pod {
	GinkgoHelper()
	Expect(e.Client.Create(ctx, p)).To(Succeed())
	if len(status) > 0 {
		e.SetPodStatus(ctx, p, status...)
	}
	return p
}

// SetPodStatus plays the pod's kubelet: it reports status through the status subresource,
// on the pod as the API server has it (p as it is when it carries the latest
// resourceVersion, else read again, as on a conflict with a controller's write), and leaves
// p as the API server stored it.
func (e *Env) SetPodStatus(ctx context.Context, p *corev1.Pod, status ...PodStatus) {
	GinkgoHelper()
	read := p.ResourceVersion == ""
	Expect(retry.RetryOnConflict(retry.DefaultRetry, func() error {
		if read {
			if err := e.Client.Get(ctx, client.ObjectKeyFromObject(p), p); err != nil {
				return err
			}
		}
		read = true
		return e.ReportPodStatus(ctx, p, status...)
	})).To(Succeed())
}

// ReportPodStatus is one kubelet report on p as the caller has it, its error returned: for a
// kubelet loop racing the controllers, which skips a pod deleted or changed meanwhile and
// reports it again on its next round.
func (e *Env) ReportPodStatus(ctx context.Context, p *corev1.Pod, status ...PodStatus) error {
	for _, s := range status {
		s(&p.Status)
	}
	return e.Client.Status().Update(ctx, p)
}
