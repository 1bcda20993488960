package cloudnodelifecycle

import (
	"context"
	"errors"
	"slices"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	k8sfake "k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	"k8s.io/client-go/tools/events"
	cloudprovider "k8s.io/cloud-provider"
	fakecloud "k8s.io/cloud-provider/fake"
)

func node(readyStatus corev1.ConditionStatus, providerID string, taints ...corev1.Taint) *corev1.Node {
	n := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: "n1", UID: "uid-1"},
		Spec:       corev1.NodeSpec{ProviderID: providerID, Taints: taints},
	}
	if readyStatus != "" {
		n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: readyStatus}}
	}
	return n
}

var shutdownTaint = *ShutdownTaint

// TestProcessNode is upstream's decision for one node, against k8s.io/cloud-provider's fake
// provider and a fake clientset: what is written, which Events, which provider calls.
func TestProcessNode(t *testing.T) {
	otherTaint := corev1.Taint{Key: "example.com/other", Effect: corev1.TaintEffectNoSchedule}
	cases := []struct {
		name  string
		node  *corev1.Node
		cloud *fakecloud.Cloud
		// writes are the clientset's verbs other than get, in order.
		writes []string
		// taints are the node's taints afterwards (when it still exists).
		taints []corev1.Taint
		events []string
		calls  []string
	}{
		{
			name:   "ready: the shutdown taint is lifted, the provider not asked",
			node:   node(corev1.ConditionTrue, "p://1", shutdownTaint, otherTaint),
			cloud:  &fakecloud.Cloud{EnableInstancesV2: true, ExistsByProviderID: false},
			writes: []string{"patch"},
			taints: []corev1.Taint{otherTaint},
		},
		{
			name:  "ready without the taint: nothing is written",
			node:  node(corev1.ConditionTrue, "p://1", otherTaint),
			cloud: &fakecloud.Cloud{EnableInstancesV2: true},
		},
		{
			name:   "not ready, instance gone: deleted, with upstream's Event",
			node:   node(corev1.ConditionFalse, "p://1", shutdownTaint),
			cloud:  &fakecloud.Cloud{EnableInstancesV2: true, ExistsByProviderID: false},
			writes: []string{"delete"},
			events: []string{"Normal DeletingNode Deleting node n1 because it does not exist in the cloud provider"},
			calls:  []string{"instance-exists"},
		},
		{
			name:   "unknown (no Ready condition), instance gone: deleted",
			node:   node("", "p://1"),
			cloud:  &fakecloud.Cloud{EnableInstancesV2: true, ExistsByProviderID: false},
			writes: []string{"delete"},
			events: []string{"Normal DeletingNode Deleting node n1 because it does not exist in the cloud provider"},
			calls:  []string{"instance-exists"},
		},
		{
			name:   "not ready, shut down: tainted",
			node:   node(corev1.ConditionFalse, "p://1", otherTaint),
			cloud:  &fakecloud.Cloud{EnableInstancesV2: true, ExistsByProviderID: true, NodeShutdown: true},
			writes: []string{"patch"},
			taints: []corev1.Taint{otherTaint, shutdownTaint},
			calls:  []string{"instance-exists", "instance-shutdown"},
		},
		{
			name:   "not ready, shut down, already tainted: nothing is written",
			node:   node(corev1.ConditionFalse, "p://1", shutdownTaint),
			cloud:  &fakecloud.Cloud{EnableInstancesV2: true, ExistsByProviderID: true, NodeShutdown: true},
			taints: []corev1.Taint{shutdownTaint},
			calls:  []string{"instance-exists", "instance-shutdown"},
		},
		{
			name:   "not ready, running: the taint stays until the node is Ready",
			node:   node(corev1.ConditionFalse, "p://1", shutdownTaint),
			cloud:  &fakecloud.Cloud{EnableInstancesV2: true, ExistsByProviderID: true},
			taints: []corev1.Taint{shutdownTaint},
			calls:  []string{"instance-exists", "instance-shutdown"},
		},
		{
			name:  "existence unknown (provider error): nothing, shutdown not asked",
			node:  node(corev1.ConditionFalse, "p://1"),
			cloud: &fakecloud.Cloud{EnableInstancesV2: true, ErrByProviderID: errors.New("cloud down")},
			calls: []string{"instance-exists"},
		},
		{
			name:   "Instances: by provider ID",
			node:   node(corev1.ConditionFalse, "p://1"),
			cloud:  &fakecloud.Cloud{ExistsByProviderID: false},
			writes: []string{"delete"},
			events: []string{"Normal DeletingNode Deleting node n1 because it does not exist in the cloud provider"},
			calls:  []string{"instance-exists-by-provider-id"},
		},
		{
			name: "Instances, no provider ID, the provider cannot find the instance: deleted",
			node: node(corev1.ConditionFalse, ""),
			cloud: &fakecloud.Cloud{ExistsByProviderID: true,
				ExtIDErr: map[types.NodeName]error{"n1": cloudprovider.InstanceNotFound}},
			writes: []string{"delete"},
			events: []string{"Normal DeletingNode Deleting node n1 because it does not exist in the cloud provider"},
			calls:  []string{"instance-id"},
		},
		{
			name: "Instances, no provider ID: the provider's ID (name/instance ID) is asked about",
			node: node(corev1.ConditionFalse, ""),
			cloud: &fakecloud.Cloud{ExistsByProviderID: true, NodeShutdown: true,
				ExtID: map[types.NodeName]string{"n1": "i-1"}},
			writes: []string{"patch"},
			taints: []corev1.Taint{shutdownTaint},
			calls:  []string{"instance-id", "instance-exists-by-provider-id", "instance-id", "instance-shutdown-by-provider-id"},
		},
		{
			name:   "Instances, shutdown not implemented: not shut down",
			node:   node(corev1.ConditionFalse, "p://1"),
			cloud:  &fakecloud.Cloud{ExistsByProviderID: true, NodeShutdown: true, ErrShutdownByProviderID: cloudprovider.NotImplemented},
			calls:  []string{"instance-exists-by-provider-id", "instance-shutdown-by-provider-id"},
			writes: nil,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cs := k8sfake.NewClientset(tc.node.DeepCopy())
			rec := events.NewFakeRecorder(10)
			r := &Reconciler{Clientset: cs, Recorder: rec, Cloud: tc.cloud}
			r.processNode(context.Background(), tc.node)

			var writes []string
			for _, a := range cs.Actions() {
				if a.GetVerb() != "get" {
					writes = append(writes, a.GetVerb())
				}
			}
			if !slices.Equal(writes, tc.writes) {
				t.Errorf("writes %v, want %v", writes, tc.writes)
			}
			if !slices.Equal(tc.cloud.Calls, tc.calls) {
				t.Errorf("provider calls %v, want %v", tc.cloud.Calls, tc.calls)
			}
			close(rec.Events)
			var got []string
			for e := range rec.Events {
				got = append(got, e)
			}
			if !slices.Equal(got, tc.events) {
				t.Errorf("events %q, want %q", got, tc.events)
			}
			if slices.Contains(tc.writes, "delete") {
				return
			}
			after, err := cs.CoreV1().Nodes().Get(context.Background(), "n1", metav1.GetOptions{})
			if err != nil {
				t.Fatal(err)
			}
			want := tc.taints
			if want == nil {
				want = tc.node.Spec.Taints
			}
			if !equalTaints(after.Spec.Taints, want) {
				t.Errorf("taints %v, want %v", after.Spec.Taints, want)
			}
		})
	}
}

// A failed deletion is upstream's Warning Event after the Normal one.
func TestProcessNodeDeletionFails(t *testing.T) {
	n := node(corev1.ConditionFalse, "p://1")
	cs := k8sfake.NewClientset(n.DeepCopy())
	cs.PrependReactor("delete", "nodes", func(clienttesting.Action) (bool, runtime.Object, error) {
		return true, nil, errors.New("refused")
	})
	rec := events.NewFakeRecorder(10)
	r := &Reconciler{Clientset: cs, Recorder: rec, Cloud: &fakecloud.Cloud{EnableInstancesV2: true}}
	r.processNode(context.Background(), n)
	close(rec.Events)
	var got []string
	for e := range rec.Events {
		got = append(got, e)
	}
	want := []string{
		"Normal DeletingNode Deleting node n1 because it does not exist in the cloud provider",
		"Warning DeletingNodeFailed Failed deleting node n1: refused",
	}
	if !slices.Equal(got, want) {
		t.Errorf("events %q, want %q", got, want)
	}
}

func equalTaints(a, b []corev1.Taint) bool {
	return slices.EqualFunc(a, b, func(x, y corev1.Taint) bool { return x.Key == y.Key && x.Effect == y.Effect && x.Value == y.Value })
}

func TestCallResult(t *testing.T) {
	cases := []struct {
		err  error
		want string
	}{
		{nil, "success"},
		{cloudprovider.NotImplemented, "not_implemented"},
		{cloudprovider.InstanceNotFound, "instance_not_found"},
		{context.Canceled, "canceled"},
		{errors.New("boom"), "error"},
	}
	for _, tc := range cases {
		if got := callResult(tc.err); got != tc.want {
			t.Errorf("callResult(%v) = %q, want %q", tc.err, got, tc.want)
		}
	}
}
