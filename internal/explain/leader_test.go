package explain

import (
	"context"
	"reflect"
	"strings"
	"testing"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/ptr"

	"github.com/kcm/kcm/internal/groups"
)

// lease is a Lease in kube-system held by holder ("" unheld); controllers, when given, make it
// a group Lease of kube-controller-manager naming them.
func lease(name, holder string, controllers ...string) *coordinationv1.Lease {
	l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: name}}
	if holder != "" {
		l.Spec.HolderIdentity = ptr.To(holder)
	}
	if len(controllers) > 0 {
		l.Labels = map[string]string{groups.GroupLabel: "kube-controller-manager"}
		l.Annotations = map[string]string{groups.ControllersAnnotation: strings.Join(controllers, ",")}
	}
	return l
}

// kcmPod is kubeadm's static pod of kcm on node.
func kcmPod(node string) *corev1.Pod {
	return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "kube-system", Name: "kube-controller-manager-" + node,
		Labels: map[string]string{"component": "kube-controller-manager"}}, Spec: corev1.PodSpec{NodeName: node}}
}

// found is a target as the tests compare it: the pod by name, the error by a substring.
type found struct {
	leases      []string
	holder      string
	url, pod    string
	err         string
	controllers []string
}

func foundOf(t *target) *found {
	if t == nil {
		return nil
	}
	f := &found{leases: t.leases, holder: t.holder, url: t.url, controllers: t.controllers}
	if t.pod != nil {
		f.pod = t.pod.Name
	}
	if t.err != nil {
		f.err = t.err.Error()
	}
	return f
}

func TestFindLeaders(t *testing.T) {
	const (
		cp1 = "cp-1_0d1f0a9e"
		cp2 = "cp-2_4c42a57e"
		cp3 = "cp-3_9b8e1a2b"
	)
	single := lease("kube-controller-manager", cp1)
	apps := lease("kube-controller-manager-apps", cp2, "deployment-controller", "replicaset-controller")
	nodes := lease("kube-controller-manager-nodes", cp3, "node-lifecycle-controller", "daemonset-controller")
	pods := []runtime.Object{kcmPod("cp-1"), kcmPod("cp-2"), kcmPod("cp-3")}
	tree := []string{"deployment-controller", "replicaset-controller", "node-lifecycle-controller"}
	for _, tc := range []struct {
		name        string
		objects     []runtime.Object
		controllers []string
		urls        holderURLs
		// single is the one Lease's leader; groups the group Leases' holders, in order; by
		// maps each controller to its target's holder ("" for none).
		single *found
		groups []*found
		by     map[string]string
	}{{
		name:    "no group Leases: the one Lease's leader for every controller, as without groups",
		objects: append([]runtime.Object{single}, pods...), controllers: tree,
		single: &found{holder: cp1, pod: "kube-controller-manager-cp-1"},
		by:     map[string]string{"deployment-controller": cp1, "node-lifecycle-controller": cp1},
	}, {
		name:    "no Lease at all: the one Lease's error",
		objects: pods, controllers: tree,
		single: &found{err: `reading the Lease kube-system/kube-controller-manager: leases.coordination.k8s.io "kube-controller-manager" not found`},
		by:     map[string]string{"deployment-controller": ""},
	}, {
		name:    "group Leases: each controller from the holder of the group Lease naming it, one target per holder",
		objects: append([]runtime.Object{single, apps, nodes}, pods...), controllers: tree,
		groups: []*found{
			{leases: []string{"kube-controller-manager-apps"}, holder: cp2, pod: "kube-controller-manager-cp-2",
				controllers: []string{"deployment-controller", "replicaset-controller"}},
			{leases: []string{"kube-controller-manager-nodes"}, holder: cp3, pod: "kube-controller-manager-cp-3",
				controllers: []string{"node-lifecycle-controller"}},
		},
		by: map[string]string{"deployment-controller": cp2, "replicaset-controller": cp2, "node-lifecycle-controller": cp3},
	}, {
		name:    "one holder of two groups: one target, both Leases",
		objects: append([]runtime.Object{apps, lease("kube-controller-manager-nodes", cp2, "node-lifecycle-controller")}, pods...), controllers: tree,
		groups: []*found{{leases: []string{"kube-controller-manager-apps", "kube-controller-manager-nodes"}, holder: cp2,
			pod: "kube-controller-manager-cp-2", controllers: tree}},
		by: map[string]string{"deployment-controller": cp2, "node-lifecycle-controller": cp2},
	}, {
		name:    "a controller no group Lease names: from the one Lease's leader",
		objects: append([]runtime.Object{single, apps}, pods...), controllers: tree,
		single: &found{holder: cp1, pod: "kube-controller-manager-cp-1", controllers: []string{"node-lifecycle-controller"}},
		groups: []*found{{leases: []string{"kube-controller-manager-apps"}, holder: cp2, pod: "kube-controller-manager-cp-2",
			controllers: []string{"deployment-controller", "replicaset-controller"}}},
		by: map[string]string{"deployment-controller": cp2, "node-lifecycle-controller": cp1},
	}, {
		name:    "a controller no group Lease names, and no one Lease: its error, the others from their groups",
		objects: append([]runtime.Object{apps}, pods...), controllers: tree,
		single: &found{err: "not found", controllers: []string{"node-lifecycle-controller"}},
		groups: []*found{{leases: []string{"kube-controller-manager-apps"}, holder: cp2, pod: "kube-controller-manager-cp-2",
			controllers: []string{"deployment-controller", "replicaset-controller"}}},
		by: map[string]string{"replicaset-controller": cp2, "node-lifecycle-controller": ""},
	}, {
		name: "released group Leases (no holder) name no one: the one Lease's leader for all",
		objects: append([]runtime.Object{single, lease("kube-controller-manager-apps", "", "deployment-controller"),
			lease("kube-controller-manager-nodes", "", "node-lifecycle-controller")}, pods...), controllers: tree,
		single: &found{holder: cp1, pod: "kube-controller-manager-cp-1"},
		by:     map[string]string{"deployment-controller": cp1, "node-lifecycle-controller": cp1},
	}, {
		name:    "a group holder with no pod: its error, the other group read",
		objects: []runtime.Object{single, apps, nodes, kcmPod("cp-3")}, controllers: tree,
		groups: []*found{
			{leases: []string{"kube-controller-manager-apps"}, holder: cp2,
				err:         "no kube-system pod labelled component=kube-controller-manager runs on cp-2, the Lease holder's host",
				controllers: []string{"deployment-controller", "replicaset-controller"}},
			{leases: []string{"kube-controller-manager-nodes"}, holder: cp3, pod: "kube-controller-manager-cp-3",
				controllers: []string{"node-lifecycle-controller"}},
		},
		by: map[string]string{"deployment-controller": cp2, "node-lifecycle-controller": cp3},
	}, {
		name:    "the one Lease's holder with no pod: its error, as without groups",
		objects: []runtime.Object{single}, controllers: tree,
		single: &found{holder: cp1, err: "no kube-system pod labelled component=kube-controller-manager runs on cp-1, the Lease holder's host"},
		by:     map[string]string{"deployment-controller": cp1},
	}, {
		name:    "addresses given by identity or host: no pod looked for",
		objects: []runtime.Object{single, apps, nodes}, controllers: tree,
		urls: holderURLs{cp2: "https://10.0.0.2:10257", "cp-3": "https://10.0.0.3:10257"},
		groups: []*found{
			{leases: []string{"kube-controller-manager-apps"}, holder: cp2, url: "https://10.0.0.2:10257",
				controllers: []string{"deployment-controller", "replicaset-controller"}},
			{leases: []string{"kube-controller-manager-nodes"}, holder: cp3, url: "https://10.0.0.3:10257",
				controllers: []string{"node-lifecycle-controller"}},
		},
		by: map[string]string{"deployment-controller": cp2, "node-lifecycle-controller": cp3},
	}, {
		name:    "group Leases of another resource name are not kcm's",
		objects: append([]runtime.Object{single, withLabel(apps, "other-manager")}, pods...), controllers: tree,
		single: &found{holder: cp1, pod: "kube-controller-manager-cp-1"},
		by:     map[string]string{"deployment-controller": cp1},
	}} {
		t.Run(tc.name, func(t *testing.T) {
			l := findLeaders(context.Background(), fake.NewClientset(tc.objects...), tc.controllers, tc.urls)
			same := func(what string, got, want *found) {
				t.Helper()
				if want != nil && got != nil && want.err != "" && strings.Contains(got.err, want.err) {
					got = ptr.To(*got)
					got.err = want.err
				}
				if !reflect.DeepEqual(got, want) {
					t.Errorf("%s: got %+v, want %+v", what, got, want)
				}
			}
			same("single", foundOf(l.single), tc.single)
			if len(l.groups) != len(tc.groups) {
				t.Fatalf("groups: got %d targets, want %d", len(l.groups), len(tc.groups))
			}
			for i := range tc.groups {
				same("groups["+l.groups[i].holder+"]", foundOf(l.groups[i]), tc.groups[i])
			}
			for c, holder := range tc.by {
				got := l.of(c)
				switch {
				case holder == "" && got != nil && got.holder != "":
					t.Errorf("%s: read from %q, want no holder", c, got.holder)
				case holder != "" && (got == nil || got.holder != holder):
					t.Errorf("%s: read from %+v, want %q", c, got, holder)
				}
			}
		})
	}
}

func withLabel(l *coordinationv1.Lease, name string) *coordinationv1.Lease {
	l = l.DeepCopy()
	l.Labels[groups.GroupLabel] = name
	return l
}
