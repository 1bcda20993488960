package attachdetach

import (
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestDecide(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	vol := func(handle string, multi bool) volume {
		return volume{UniqueName: uniqueName("csi.example.com", handle), Driver: "csi.example.com", Handle: handle,
			SpecName: "pv-" + handle, PVName: "pv-" + handle, MultiAttach: multi}
	}
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "p"}}
	want := func(v volume, e elsewhere) map[corev1.UniqueVolumeName]*wanted {
		return map[corev1.UniqueVolumeName]*wanted{v.UniqueName: {volume: v, Pods: []*corev1.Pod{pod}, Elsewhere: e}}
	}
	a, rwx := vol("a", false), vol("x", true)
	iscsi := volume{UniqueName: "kubernetes.io/iscsi/10.0.0.1:3260:iqn.x:0", SpecName: "pv-i", PVName: "pv-i", StatusOnly: true}
	iscsiReported := attachment{Volume: iscsi.UniqueName, Attached: true, StatusOnly: true}
	va := func(v volume, attached bool) attachment {
		return attachment{Name: attachmentName(v.Handle, v.Driver, "n1"), Volume: v.UniqueName, Attached: attached, Created: now.Add(-time.Second)}
	}
	node := func(mod ...func(*nodeView)) nodeView {
		n := nodeView{Name: "n1", Exists: true, Healthy: true, InUse: map[corev1.UniqueVolumeName]bool{}}
		for _, m := range mod {
			m(&n)
		}
		return n
	}
	inUse := func(v volume) func(*nodeView) { return func(n *nodeView) { n.InUse[v.UniqueName] = true } }
	reported := func(names ...corev1.UniqueVolumeName) func(*nodeView) {
		return func(n *nodeView) {
			for _, name := range names {
				n.Attached = append(n.Attached, corev1.AttachedVolume{Name: name})
			}
		}
	}
	unhealthy := func(n *nodeView) { n.Healthy = false }
	outOfService := func(n *nodeView) { n.OutOfService = true }
	gone := func(n *nodeView) { n.Exists = false }

	type want_ struct {
		attach, attached, multiAttach []corev1.UniqueVolumeName
		detach                        []detach
		status                        []corev1.UniqueVolumeName
		statusChanged                 bool
		failed                        []string
		requeue                       time.Duration
	}
	cases := []struct {
		name string
		in   input
		want want_
	}{
		{name: "needed, no attachment: attach",
			in:   input{Node: node(), Wanted: want(a, elsewhere{})},
			want: want_{attach: []corev1.UniqueVolumeName{a.UniqueName}}},
		{name: "attachment not attached yet: wait until the attach timeout",
			in:   input{Node: node(), Wanted: want(a, elsewhere{}), Attachments: []attachment{va(a, false)}},
			want: want_{requeue: attachTimeout}},
		{name: "attached: reported, SuccessfulAttachVolume",
			in: input{Node: node(), Wanted: want(a, elsewhere{}), Attachments: []attachment{va(a, true)}},
			want: want_{attached: []corev1.UniqueVolumeName{a.UniqueName}, status: []corev1.UniqueVolumeName{a.UniqueName},
				statusChanged: true}},
		{name: "attached and reported: nothing",
			in:   input{Node: node(reported(a.UniqueName)), Wanted: want(a, elsewhere{}), Attachments: []attachment{va(a, true)}},
			want: want_{status: []corev1.UniqueVolumeName{a.UniqueName}}},
		{name: "reported but its attachment gone: no longer reported, attached again",
			in:   input{Node: node(reported(a.UniqueName)), Wanted: want(a, elsewhere{})},
			want: want_{attach: []corev1.UniqueVolumeName{a.UniqueName}, statusChanged: true}},
		{name: "single-node volume attached elsewhere: multi-attach error, no attach",
			in:   input{Node: node(), Wanted: want(a, elsewhere{AttachedTo: []string{"n2"}})},
			want: want_{multiAttach: []corev1.UniqueVolumeName{a.UniqueName}}},
		{name: "single-node volume being attached or detached elsewhere: wait",
			in:   input{Node: node(), Wanted: want(a, elsewhere{Pending: true})},
			want: want_{}},
		{name: "multi-node volume attached elsewhere: attach",
			in:   input{Node: node(), Wanted: want(rwx, elsewhere{AttachedTo: []string{"n2"}})},
			want: want_{attach: []corev1.UniqueVolumeName{rwx.UniqueName}}},
		{name: "needed while its attachment is being deleted: wait for it to go",
			in: input{Node: node(), Wanted: want(a, elsewhere{}),
				Attachments: []attachment{func() attachment { x := va(a, true); x.Deleting = true; return x }()}},
			want: want_{}},
		{name: "attacher error: FailedAttachVolume with its message",
			in: input{Node: node(), Wanted: want(a, elsewhere{}), Attachments: []attachment{func() attachment {
				x := va(a, false)
				x.AttachError = &storagev1.VolumeError{Message: "rpc error: boom"}
				return x
			}()}},
			want: want_{failed: []string{"rpc error: boom"}}},
		{name: "no answer within the attach timeout: FailedAttachVolume timed out",
			in: input{Node: node(), Wanted: want(a, elsewhere{}), Attachments: []attachment{func() attachment {
				x := va(a, false)
				x.Created = now.Add(-attachTimeout)
				return x
			}()}},
			want: want_{failed: []string{"timed out waiting for external-attacher of csi.example.com CSI driver to attach volume a"}}},
		{name: "unneeded, still mounted: kept and reported",
			in:   input{Node: node(inUse(a), reported(a.UniqueName)), Attachments: []attachment{va(a, true)}},
			want: want_{status: []corev1.UniqueVolumeName{a.UniqueName}}},
		{name: "unneeded and unmounted: unreported, then detached after a live check",
			in:   input{Node: node(reported(a.UniqueName)), Attachments: []attachment{va(a, true)}},
			want: want_{detach: []detach{{attachment: va(a, true), VerifySafe: true}}, statusChanged: true}},
		{name: "unneeded and mounted on an unhealthy node: wait for the rest of the unmount wait",
			in: input{Node: node(inUse(a), unhealthy, reported(a.UniqueName)), Attachments: []attachment{va(a, true)},
				DetachRequested: map[corev1.UniqueVolumeName]time.Time{a.UniqueName: now.Add(-time.Minute)}},
			want: want_{status: []corev1.UniqueVolumeName{a.UniqueName}, requeue: maxWaitForUnmount - time.Minute}},
		{name: "mounted on an unhealthy node past the unmount wait: force detach",
			in: input{Node: node(inUse(a), unhealthy, reported(a.UniqueName)), Attachments: []attachment{va(a, true)},
				DetachRequested: map[corev1.UniqueVolumeName]time.Time{a.UniqueName: now.Add(-maxWaitForUnmount - time.Second)}},
			want: want_{detach: []detach{{attachment: va(a, true), Forced: forcedTimeout}}, statusChanged: true}},
		{name: "past the unmount wait with --disable-force-detach-on-timeout: kept",
			in: input{Node: node(inUse(a), unhealthy, reported(a.UniqueName)), Attachments: []attachment{va(a, true)},
				DisableForceDetachOnTimeout: true,
				DetachRequested:             map[corev1.UniqueVolumeName]time.Time{a.UniqueName: now.Add(-maxWaitForUnmount - time.Second)}},
			want: want_{status: []corev1.UniqueVolumeName{a.UniqueName}}},
		{name: "mounted on a healthy node past the unmount wait: kept",
			in: input{Node: node(inUse(a), reported(a.UniqueName)), Attachments: []attachment{va(a, true)},
				DetachRequested: map[corev1.UniqueVolumeName]time.Time{a.UniqueName: now.Add(-maxWaitForUnmount - time.Second)}},
			want: want_{status: []corev1.UniqueVolumeName{a.UniqueName}}},
		{name: "mounted on an out-of-service node: force detach at once",
			in:   input{Node: node(inUse(a), outOfService, reported(a.UniqueName)), Attachments: []attachment{va(a, true)}},
			want: want_{detach: []detach{{attachment: va(a, true), Forced: forcedOutOfService}}, statusChanged: true}},
		{name: "attached for no pod and never reported: detached without being reported",
			in:   input{Node: node(), Attachments: []attachment{va(a, true)}},
			want: want_{detach: []detach{{attachment: va(a, true), VerifySafe: true}}}},
		{name: "other plugins' entries kept",
			in:   input{Node: node(reported("example.com/other/x")), Wanted: want(a, elsewhere{}), Attachments: []attachment{va(a, true)}},
			want: want_{attached: []corev1.UniqueVolumeName{a.UniqueName}, status: []corev1.UniqueVolumeName{"example.com/other/x", a.UniqueName}, statusChanged: true}},
		{name: "iSCSI volume needed: reported at once, SuccessfulAttachVolume, no VolumeAttachment",
			in:   input{Node: node(), Wanted: map[corev1.UniqueVolumeName]*wanted{iscsi.UniqueName: {volume: iscsi, Pods: []*corev1.Pod{pod}}}},
			want: want_{attached: []corev1.UniqueVolumeName{iscsi.UniqueName}, status: []corev1.UniqueVolumeName{iscsi.UniqueName}, statusChanged: true}},
		{name: "iSCSI volume needed and reported: nothing",
			in: input{Node: node(reported(iscsi.UniqueName)), Wanted: map[corev1.UniqueVolumeName]*wanted{iscsi.UniqueName: {volume: iscsi, Pods: []*corev1.Pod{pod}}},
				Attachments: []attachment{iscsiReported}},
			want: want_{status: []corev1.UniqueVolumeName{iscsi.UniqueName}}},
		{name: "iSCSI volume unneeded and mounted: kept",
			in:   input{Node: node(reported(iscsi.UniqueName), inUse(iscsi)), Attachments: []attachment{iscsiReported}},
			want: want_{status: []corev1.UniqueVolumeName{iscsi.UniqueName}}},
		{name: "iSCSI volume unneeded and unmounted: unreported",
			in:   input{Node: node(reported(iscsi.UniqueName)), Attachments: []attachment{iscsiReported}},
			want: want_{detach: []detach{{attachment: iscsiReported, VerifySafe: true}}, statusChanged: true}},
		{name: "deleted node, volume in use in its last status: wait for the unmount wait (a deleted node is unhealthy)",
			in: input{Node: node(gone, unhealthy, inUse(a)), Attachments: []attachment{va(a, true)},
				DetachRequested: map[corev1.UniqueVolumeName]time.Time{a.UniqueName: now.Add(-time.Minute)}},
			want: want_{requeue: maxWaitForUnmount - time.Minute}},
		{name: "deleted node past the unmount wait: force detach",
			in: input{Node: node(gone, unhealthy, inUse(a)), Attachments: []attachment{va(a, true)},
				DetachRequested: map[corev1.UniqueVolumeName]time.Time{a.UniqueName: now.Add(-maxWaitForUnmount - time.Second)}},
			want: want_{detach: []detach{{attachment: va(a, true), Forced: forcedTimeout}}}},
		{name: "deleted node: nothing attached, unneeded volumes detached",
			in:   input{Node: node(gone), Wanted: want(rwx, elsewhere{}), Attachments: []attachment{va(a, true)}},
			want: want_{detach: []detach{{attachment: va(a, true), VerifySafe: true}}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			c.in.Now = now
			p := decide(c.in)
			check := func(what string, got, want any) {
				t.Helper()
				if !equal(got, want) {
					t.Errorf("%s = %v, want %v", what, got, want)
				}
			}
			check("attach", names(p.Attach), c.want.attach)
			check("attached", names(p.Attached), c.want.attached)
			check("multiAttach", names(p.MultiAttach), c.want.multiAttach)
			check("detach", p.Detach, c.want.detach)
			var status []corev1.UniqueVolumeName
			for _, s := range p.Status {
				status = append(status, s.Name)
			}
			check("status", status, c.want.status)
			check("statusChanged", p.StatusChanged, c.want.statusChanged)
			var failed []string
			for _, f := range p.AttachFailed {
				failed = append(failed, f.Message)
			}
			check("failed", failed, c.want.failed)
			if c.want.requeue != 0 && (p.RequeueAfter < c.want.requeue || p.RequeueAfter > c.want.requeue+2*time.Second) {
				t.Errorf("requeue = %v, want about %v", p.RequeueAfter, c.want.requeue)
			}
			if c.want.requeue == 0 && p.RequeueAfter != 0 {
				t.Errorf("requeue = %v, want none", p.RequeueAfter)
			}
		})
	}
}

func TestDecideKeepsDetachRequestTime(t *testing.T) {
	now := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	v := volume{UniqueName: uniqueName("d", "h"), Driver: "d", Handle: "h"}
	in := input{Node: nodeView{Exists: true, Healthy: true, InUse: map[corev1.UniqueVolumeName]bool{v.UniqueName: true}},
		Attachments: []attachment{{Name: "va", Volume: v.UniqueName, Attached: true}}, Now: now}
	first := decide(in).DetachRequested[v.UniqueName]
	if !first.Equal(now) {
		t.Fatalf("first request time = %v, want now", first)
	}
	in.DetachRequested = map[corev1.UniqueVolumeName]time.Time{v.UniqueName: now}
	in.Now = now.Add(time.Minute)
	if got := decide(in).DetachRequested[v.UniqueName]; !got.Equal(now) {
		t.Errorf("request time moved to %v", got)
	}
	in.Wanted = map[corev1.UniqueVolumeName]*wanted{v.UniqueName: {volume: v}}
	if got, ok := decide(in).DetachRequested[v.UniqueName]; ok {
		t.Errorf("needed again, request time kept: %v", got)
	}
}

func TestMultiAttachMessage(t *testing.T) {
	pod := func(ns, name string) *corev1.Pod {
		return &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}
	}
	w := func(pods ...*corev1.Pod) *wanted {
		return &wanted{volume: volume{SpecName: "pv1"}, Elsewhere: elsewhere{AttachedTo: []string{"n2"}, Pods: pods}}
	}
	cases := []struct {
		w    *wanted
		want string
	}{
		{w(), `Waiting for detach for volume "pv1" Volume is already exclusively attached to one node, waiting on detach before it can be attached to another node`},
		{w(pod("ns", "a"), pod("ns", "b")), `Waiting for detach for volume "pv1" Volume is already used by pod(s) a, b`},
		{w(pod("ns", "a"), pod("other", "b")), `Waiting for detach for volume "pv1" Volume is already used by pod(s) a and 1 pod(s) in different namespaces`},
		{w(pod("other", "b")), `Waiting for detach for volume "pv1" Volume is already used by 1 pod(s) in different namespaces`},
	}
	for _, c := range cases {
		if got := multiAttachMessage(c.w, pod("ns", "me")); got != c.want {
			t.Errorf("got  %s\nwant %s", got, c.want)
		}
	}
}

func TestNames(t *testing.T) {
	if got, want := uniqueName("ebs.csi.aws.com", "vol-1"), corev1.UniqueVolumeName("kubernetes.io/csi/ebs.csi.aws.com^vol-1"); got != want {
		t.Errorf("uniqueName = %s, want %s", got, want)
	}
	// sha256("vol-1" + "ebs.csi.aws.com" + "node-1"), as upstream's getAttachmentName.
	if got, want := attachmentName("vol-1", "ebs.csi.aws.com", "node-1"), "csi-"+sha256hex("vol-1ebs.csi.aws.comnode-1"); got != want {
		t.Errorf("attachmentName = %s, want %s", got, want)
	}
	d, h, ok := splitCSIName("kubernetes.io/csi/d.example.com^a^b")
	if !ok || d != "d.example.com" || h != "a^b" {
		t.Errorf("splitCSIName = %q %q %v", d, h, ok)
	}
}
