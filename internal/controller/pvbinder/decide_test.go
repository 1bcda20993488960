package pvbinder

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"
)

func TestDeleter(t *testing.T) {
	withAnn := func(v *corev1.PersistentVolume, k, val string) *corev1.PersistentVolume {
		v.Annotations = map[string]string{k: val}
		return v
	}
	csi := pv("csi", "1Gi")
	csi.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}
	host := pv("host", "1Gi")
	host.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/tmp/x"}
	nfs := pv("nfs", "1Gi")
	nfs.Spec.NFS = &corev1.NFSVolumeSource{Server: "s", Path: "/"}
	tests := []struct {
		name string
		v    *corev1.PersistentVolume
		want string
		err  string
	}{
		{"external provisioner", withAnn(pv("a", "1Gi"), AnnDynamicallyProvisioned, "csi.example.com"), "", ""},
		{"in-tree provisioner without plugin", withAnn(pv("b", "1Gi"), AnnDynamicallyProvisioned, "kubernetes.io/gce-pd"), "", "no deletable volume plugin matched"},
		{"migrated", withAnn(pv("c", "1Gi"), AnnMigratedTo, "pd.csi.storage.gke.io"), "", ""},
		{"csi", csi, "", ""},
		{"hostPath", host, hostPathPlugin, ""},
		{"nfs", nfs, "", `error getting deleter volume plugin for volume "nfs": no deletable volume plugin matched`},
	}
	for _, tt := range tests {
		got, err := deleter(tt.v)
		gotErr := ""
		if err != nil {
			gotErr = err.Error()
		}
		if got != tt.want || gotErr != tt.err {
			t.Errorf("%s: got %q, %q; want %q, %q", tt.name, got, gotErr, tt.want, tt.err)
		}
	}
}

func TestClaimStatus(t *testing.T) {
	v := pv("v", "10Gi", modes(rwo, rox))
	v.Spec.VolumeAttributesClassName = ptr.To("gold")
	pending := pvc("1Gi")
	pending.Status.Phase = corev1.ClaimPending

	s, err := claimStatus(pending, corev1.ClaimBound, v)
	if err != nil {
		t.Fatal(err)
	}
	if s.Phase != corev1.ClaimBound || !reflect.DeepEqual(s.AccessModes, v.Spec.AccessModes) ||
		!s.Capacity.Storage().Equal(resource.MustParse("10Gi")) || ptr.Deref(s.CurrentVolumeAttributesClassName, "") != "gold" {
		t.Errorf("Pending to Bound: got %+v", s)
	}

	bound := pending.DeepCopy()
	bound.Status = s
	bound.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("8Gi")}
	if s, _ = claimStatus(bound, corev1.ClaimBound, v); !s.Capacity.Storage().Equal(resource.MustParse("8Gi")) {
		t.Errorf("a Bound claim keeps its capacity, got %v", s.Capacity.Storage())
	}

	resizing := v.DeepCopy()
	resizing.Annotations = map[string]string{AnnPreResizeCapacity: "5Gi"}
	if s, _ = claimStatus(pending, corev1.ClaimBound, resizing); !s.Capacity.Storage().Equal(resource.MustParse("5Gi")) {
		t.Errorf("pre-resize capacity: got %v", s.Capacity.Storage())
	}

	if s, _ = claimStatus(bound, corev1.ClaimLost, nil); s.Phase != corev1.ClaimLost || s.AccessModes != nil || s.Capacity != nil || s.CurrentVolumeAttributesClassName != nil {
		t.Errorf("Lost clears what came from the volume: got %+v", s)
	}
}

// outcome is a plan as a table reads it: each step it takes, by name.
type outcome struct {
	Migrate, Events, Err, Bind, Assign, Provision, Phase, PhaseEvent string
	EndsProvision                                                    bool
}

func notes(ns []notice) string {
	s := ""
	for _, n := range ns {
		s += fmt.Sprintf("%s %s: %s;", n.Type, n.Reason, fmt.Sprintf(n.Format, n.Args...))
	}
	return s
}

func claimOutcome(p claimPlan) outcome {
	o := outcome{Events: notes(p.Events), Phase: string(p.Phase), EndsProvision: p.EndsProvision}
	if p.Migrate != nil {
		o.Migrate = p.Migrate.Annotations[AnnMigratedTo]
	}
	if p.Err != nil {
		o.Err = p.Err.Error()
	}
	if b := p.Bind; b != nil {
		o.Bind = b.Volume.Name
		if b.VolumeEdit != nil {
			o.Bind += fmt.Sprintf(" volume→%s/%s(%s) byController=%v", b.VolumeEdit.Spec.ClaimRef.Namespace, b.VolumeEdit.Spec.ClaimRef.Name,
				b.VolumeEdit.Spec.ClaimRef.UID, b.VolumeEdit.Annotations[AnnBoundByController] == "yes")
		}
		if b.ClaimEdit != nil {
			o.Bind += fmt.Sprintf(" claim→%s byController=%v completed=%v", b.ClaimEdit.Spec.VolumeName,
				b.ClaimEdit.Annotations[AnnBoundByController] == "yes", b.ClaimEdit.Annotations[AnnBindCompleted] == "yes")
		}
	}
	if p.AssignClass != nil {
		o.Assign = *p.AssignClass.Spec.StorageClassName
	}
	if p.AssignErr != nil {
		o.Assign = "error: " + p.AssignErr.Error()
	}
	if pr := p.Provision; pr != nil {
		o.Provision = pr.Plugin
		if pr.Edit != nil {
			o.Provision += " named " + pr.Edit.Annotations[AnnStorageProvisioner] + "," + pr.Edit.Annotations[AnnBetaStorageProvisioner]
		}
		if pr.Refused != nil {
			o.Provision += " refused: " + pr.Refused.Error()
		}
	}
	if p.PhaseEvent != nil {
		o.PhaseEvent = notes([]notice{*p.PhaseEvent})
	}
	return o
}

func TestDecideClaim(t *testing.T) {
	bindCompleted := func(c *corev1.PersistentVolumeClaim) {
		c.Annotations = map[string]string{AnnBindCompleted: "yes", AnnBoundByController: "yes"}
	}
	boundByController := func(c *corev1.PersistentVolumeClaim) { c.Annotations = map[string]string{AnnBoundByController: "yes"} }
	naming := func(name string) pvcOpt { return func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = name } }
	provisioner := func(p string) pvcOpt {
		return func(c *corev1.PersistentVolumeClaim) { c.Annotations = map[string]string{AnnStorageProvisioner: p} }
	}
	phased := func(p corev1.PersistentVolumeClaimPhase) pvcOpt {
		return func(c *corev1.PersistentVolumeClaim) { c.Status.Phase = p }
	}
	wffc := &storagev1.StorageClass{Provisioner: "csi.example.com", VolumeBindingMode: ptr.To(storagev1.VolumeBindingWaitForFirstConsumer)}
	wffc.Name = "local"
	csi := &storagev1.StorageClass{Provisioner: "csi.example.com"}
	csi.Name = "fast"
	gcePD := &storagev1.StorageClass{Provisioner: "kubernetes.io/gce-pd"}
	gcePD.Name = "pd"
	hostPath := &storagev1.StorageClass{Provisioner: hostPathPlugin}
	hostPath.Name = "hp"
	noPlugin := &storagev1.StorageClass{Provisioner: "kubernetes.io/no-provisioner"}
	noPlugin.Name = "none"

	const lostRef = "Warning ClaimLost: Bound claim has lost reference to PersistentVolume. Data on the volume is lost!;"
	tests := []struct {
		name string
		in   claimInput
		want outcome
	}{
		// A claim that was bound.
		{"bound, volumeName cleared: Lost", claimInput{Claim: pvc("1Gi", bindCompleted, phased(corev1.ClaimBound))},
			outcome{Phase: "Lost", PhaseEvent: lostRef}},
		{"bound, volume gone: Lost", claimInput{Claim: pvc("1Gi", bindCompleted, naming("v"))},
			outcome{Phase: "Lost", PhaseEvent: "Warning ClaimLost: Bound claim has lost its PersistentVolume. Data on the volume is lost!;"}},
		{"bound, volume bound to another claim: Lost (misbound)",
			claimInput{Claim: pvc("1Gi", bindCompleted, naming("v")), Volume: pv("v", "1Gi", claimRef("ns", "other", "other-uid"))},
			outcome{Phase: "Lost", PhaseEvent: "Warning ClaimMisbound: Two claims are bound to the same volume, this one is bound incorrectly;"}},
		{"bound, both sides bound: the bind is repeated, nothing to edit",
			claimInput{Claim: pvc("1Gi", bindCompleted, naming("v")), Volume: pv("v", "1Gi", claimRef("ns", "claim", "claim-uid"))},
			outcome{Bind: "v"}},
		{"bound, volume lost its claimRef: bound again",
			claimInput{Claim: pvc("1Gi", bindCompleted, naming("v")), Volume: pv("v", "1Gi")},
			outcome{Bind: "v volume→ns/claim(claim-uid) byController=true"}},

		// A claim naming its volume.
		{"pre-bound, volume missing: Pending", claimInput{Claim: pvc("1Gi", naming("v"))}, outcome{Phase: "Pending"}},
		{"pre-bound, volume fits: bound, the claim not bound by the controller",
			claimInput{Claim: pvc("1Gi", naming("v")), Volume: pv("v", "2Gi")},
			outcome{Bind: "v volume→ns/claim(claim-uid) byController=true claim→v byController=false completed=true"}},
		{"pre-bound, volume too small: VolumeMismatch and Pending",
			claimInput{Claim: pvc("5Gi", naming("v")), Volume: pv("v", "2Gi")},
			outcome{Events: `Warning VolumeMismatch: Cannot bind to requested volume "v": requested PV is too small;`, Phase: "Pending"}},
		{"pre-bound both ways by name: bound, the volume not bound by the controller",
			claimInput{Claim: pvc("1Gi", naming("v")), Volume: pv("v", "2Gi", claimRef("ns", "claim", ""))},
			outcome{Bind: "v volume→ns/claim(claim-uid) byController=false claim→v byController=false completed=true"}},
		{"pre-bound, volume taken: FailedBinding and Pending",
			claimInput{Claim: pvc("1Gi", naming("v")), Volume: pv("v", "2Gi", claimRef("ns", "other", "x"))},
			outcome{Events: `Warning FailedBinding: volume "v" already bound to a different claim.;`, Phase: "Pending"}},
		{"controller's binding, bind-completed removed, volume taken: an error",
			claimInput{Claim: pvc("1Gi", naming("v"), boundByController), Volume: pv("v", "2Gi", claimRef("ns", "other", "x"))},
			outcome{Events: `Warning FailedBinding: volume "v" already bound to a different claim.;`,
				Err: `invalid binding of claim "ns/claim" to volume "v": volume already claimed by "ns/other"`}},

		// A claim naming no volume.
		{"unbound, a match: bound, ending a provision",
			claimInput{Claim: pvc("1Gi", ofClass("fast")), Class: csi, Match: pv("v", "1Gi", class("fast"))},
			outcome{Bind: "v volume→ns/claim(claim-uid) byController=true claim→v byController=true completed=true", EndsProvision: true}},
		{"unbound, an invalid selector: an error",
			claimInput{Claim: pvc("1Gi"), MatchErr: errors.New("bad selector")},
			outcome{Err: `error finding PV for claim "ns/claim": bad selector`}},
		{"unbound, class unset, a default class: assigned",
			claimInput{Claim: pvc("1Gi"), DefaultClass: csi}, outcome{Assign: "fast"}},
		{"unbound, class unset, classes unreadable: the failed assignment counts",
			claimInput{Claim: pvc("1Gi"), DefaultClassErr: errors.New("no list")}, outcome{Assign: "error: no list"}},
		{"unbound, class \"\" never gets the default",
			claimInput{Claim: pvc("1Gi", ofClass("")), DefaultClass: csi},
			outcome{Events: "Normal FailedBinding: no persistent volumes available for this claim and no storage class is set;", Phase: "Pending"}},
		{"unbound, WaitForFirstConsumer, no pod", claimInput{Claim: pvc("1Gi", ofClass("local")), Class: wffc, DelayBinding: true},
			outcome{Events: "Normal WaitForFirstConsumer: waiting for first consumer to be created before binding;", Phase: "Pending"}},
		{"unbound, WaitForFirstConsumer, one pod", claimInput{Claim: pvc("1Gi", ofClass("local")), Class: wffc, DelayBinding: true, Waiting: []string{"a"}},
			outcome{Events: "Normal WaitForPodScheduled: waiting for pod a to be scheduled;", Phase: "Pending"}},
		{"unbound, WaitForFirstConsumer, two pods", claimInput{Claim: pvc("1Gi", ofClass("local")), Class: wffc, DelayBinding: true, Waiting: []string{"a", "b"}},
			outcome{Events: "Normal WaitForPodScheduled: waiting for pods a,b to be scheduled;", Phase: "Pending"}},
		{"unbound, WaitForFirstConsumer, node selected: provisioned",
			claimInput{Claim: pvc("1Gi", ofClass("local"), func(c *corev1.PersistentVolumeClaim) { c.Annotations = map[string]string{AnnSelectedNode: "n"} }),
				Class: wffc, DelayBinding: true, DynamicProvisioning: true},
			outcome{Provision: "csi.example.com named csi.example.com,csi.example.com"}},
		{"unbound, provisioning disabled: nothing", claimInput{Claim: pvc("1Gi", ofClass("fast")), Class: csi}, outcome{}},
		{"unbound, external provisioner", claimInput{Claim: pvc("1Gi", ofClass("fast")), Class: csi, DynamicProvisioning: true},
			outcome{Provision: "csi.example.com named csi.example.com,csi.example.com"}},
		{"unbound, external provisioner already named", claimInput{Claim: pvc("1Gi", ofClass("fast"), provisioner("csi.example.com")), Class: csi, DynamicProvisioning: true},
			outcome{Provision: "csi.example.com"}},
		{"unbound, migrated in-tree provisioner: its CSI driver",
			claimInput{Claim: pvc("1Gi", ofClass("pd")), Class: gcePD, DynamicProvisioning: true},
			outcome{Provision: "pd.csi.storage.gke.io named pd.csi.storage.gke.io,pd.csi.storage.gke.io"}},
		{"unbound, class missing: ProvisioningFailed", claimInput{Claim: pvc("1Gi", ofClass("gone")), DynamicProvisioning: true},
			outcome{Events: `Warning ProvisioningFailed: storageclass.storage.k8s.io "gone" not found;`}},
		{"unbound, in-tree provisioner without plugin: ProvisioningFailed",
			claimInput{Claim: pvc("1Gi", ofClass("none")), Class: noPlugin, DynamicProvisioning: true},
			outcome{Events: "Warning ProvisioningFailed: no provisionable volume plugin matched;"}},
		{"unbound, hostPath: named and timed, then refused",
			claimInput{Claim: pvc("1Gi", ofClass("hp")), Class: hostPath, DynamicProvisioning: true},
			outcome{Provision: hostPathPlugin + " named " + hostPathPlugin + "," + hostPathPlugin +
				` refused: Failed to create provisioner: provisioning in volume plugin "kubernetes.io/host-path" is disabled`}},

		// Migration annotations come first, whatever else is done.
		{"a migrated provisioner's claim gets migrated-to, then its sync",
			claimInput{Claim: pvc("1Gi", bindCompleted, func(c *corev1.PersistentVolumeClaim) {
				c.Annotations[AnnStorageProvisioner] = "kubernetes.io/gce-pd"
			})},
			outcome{Migrate: "pd.csi.storage.gke.io", Phase: "Lost", PhaseEvent: lostRef}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.in.Claim.DeepCopy()
			if got := claimOutcome(decideClaim(tt.in)); got != tt.want {
				t.Errorf("got  %+v\nwant %+v", got, tt.want)
			}
			if !reflect.DeepEqual(before, tt.in.Claim) {
				t.Error("decideClaim changed the claim it was given")
			}
		})
	}
}

func volumeOutcome(p volumePlan) string {
	s := ""
	if p.Anneal != nil {
		s += fmt.Sprintf("anneal %v %v; ", p.Anneal.Annotations, p.Anneal.Finalizers)
	}
	if len(p.Events)+len(p.ClaimEvents) > 0 {
		s += "volume: " + notes(p.Events) + " claim: " + notes(p.ClaimEvents) + " "
	}
	if u := p.Unbind; u != nil {
		s += fmt.Sprintf("unbind claimRef=%v annotations=%v; ", u.Spec.ClaimRef, u.Annotations)
	}
	if p.Phase != "" {
		s += "phase " + string(p.Phase) + "; "
	}
	if rc := p.Reclaim; rc != nil {
		switch {
		case rc.Recycle:
			s += "recycle"
		case rc.Delete:
			s += fmt.Sprintf("delete by %q err=%v unprotect=%v", rc.Deleter, rc.DeleterErr, rc.Unprotect != nil)
			if rc.Unprotect != nil {
				s += fmt.Sprintf(" %v", rc.Unprotect.Finalizers)
			}
		case rc.Fail != nil:
			s += fmt.Sprintf("fail %q %s", rc.Fail.Message, notes([]notice{rc.Fail.Event}))
		}
	}
	return s
}

func TestDecideVolume(t *testing.T) {
	policy := func(p corev1.PersistentVolumeReclaimPolicy) pvOpt {
		return func(v *corev1.PersistentVolume) { v.Spec.PersistentVolumeReclaimPolicy = p }
	}
	annotated := func(k, val string) pvOpt {
		return func(v *corev1.PersistentVolume) {
			if v.Annotations == nil {
				v.Annotations = map[string]string{}
			}
			v.Annotations[k] = val
		}
	}
	finalized := func(f ...string) pvOpt { return func(v *corev1.PersistentVolume) { v.Finalizers = f } }
	hostPathSource := func(v *corev1.PersistentVolume) { v.Spec.HostPath = &corev1.HostPathVolumeSource{Path: "/tmp/x"} }
	bound := claimRef("ns", "claim", "claim-uid")
	claimOf := func(volume string, opts ...pvcOpt) *corev1.PersistentVolumeClaim {
		return pvc("1Gi", append([]pvcOpt{func(c *corev1.PersistentVolumeClaim) { c.Spec.VolumeName = volume }}, opts...)...)
	}

	tests := []struct {
		name  string
		v     *corev1.PersistentVolume
		claim *corev1.PersistentVolumeClaim
		want  string
	}{
		{"no claimRef: Available", pv("v", "1Gi", phase(corev1.VolumePending)), nil, "phase Available; "},
		{"pre-bound by name: Available", pv("v", "1Gi", claimRef("ns", "claim", "")), nil, "phase Available; "},
		{"claim bound to it: Bound", pv("v", "1Gi", bound), claimOf("v"), "phase Bound; "},
		{"claim not bound yet: nothing (its sync binds)", pv("v", "1Gi", bound), claimOf(""), ""},
		{"claim not bound yet, volume modes differ: VolumeMismatch on both", pv("v", "1Gi", bound, block), claimOf(""),
			`volume: Warning VolumeMismatch: Cannot bind PersistentVolume to requested PersistentVolumeClaim "claim" due to incompatible volumeMode.; ` +
				`claim: Warning VolumeMismatch: Cannot bind PersistentVolume "v" to requested PersistentVolumeClaim due to incompatible volumeMode.; `},
		{"claim bound elsewhere, the controller's binding: undone", pv("v", "1Gi", bound, annotated(AnnBoundByController, "yes")), claimOf("other"),
			"unbind claimRef=nil annotations=map[]; "},
		{"claim bound elsewhere, the user's pre-binding: kept without the UID", pv("v", "1Gi", bound, annotated("keep", "me")), claimOf("other"),
			"unbind claimRef=&ObjectReference{Kind:,Namespace:ns,Name:claim,UID:,APIVersion:,ResourceVersion:,FieldPath:,} annotations=map[keep:me]; "},
		{"provisioned, Delete, claim bound elsewhere: released and deleted",
			pv("v", "1Gi", bound, policy(corev1.PersistentVolumeReclaimDelete), annotated(AnnDynamicallyProvisioned, "csi.example.com")), claimOf("other"),
			`phase Released; delete by "" err=<nil> unprotect=false`},
		{"claim gone, Retain: Released", pv("v", "1Gi", bound, phase(corev1.VolumeBound), policy(corev1.PersistentVolumeReclaimRetain)), nil,
			"phase Released; "},
		{"claim gone, Retain, already Released: nothing", pv("v", "1Gi", bound, phase(corev1.VolumeReleased), policy(corev1.PersistentVolumeReclaimRetain)), nil, ""},
		{"claim gone, Recycle, Failed: stays Failed, recycled again", pv("v", "1Gi", bound, phase(corev1.VolumeFailed), policy(corev1.PersistentVolumeReclaimRecycle)), nil,
			"recycle"},
		{"claim gone, Delete, hostPath: deleted by the plugin, the in-tree finalizer dropped",
			pv("v", "1Gi", bound, phase(corev1.VolumeReleased), policy(corev1.PersistentVolumeReclaimDelete), hostPathSource, finalized(FinalizerInTree, "x")), nil,
			`delete by "kubernetes.io/host-path" err=<nil> unprotect=true [x]`},
		{"claim gone, Delete, no plugin: fails", pv("v", "1Gi", bound, phase(corev1.VolumeReleased), policy(corev1.PersistentVolumeReclaimDelete)), nil,
			`delete by "" err=error getting deleter volume plugin for volume "v": no deletable volume plugin matched unprotect=false`},
		{"claim gone, migrated: its CSI driver reclaims", pv("v", "1Gi", bound, policy(corev1.PersistentVolumeReclaimDelete), annotated(AnnMigratedTo, "pd.csi.storage.gke.io")), nil,
			"phase Released; "},
		{"claim gone, unknown policy: Failed with VolumeUnknownReclaimPolicy",
			pv("v", "1Gi", bound, phase(corev1.VolumeReleased), policy("Keep")), nil,
			`fail "Volume has unrecognized PersistentVolumeReclaimPolicy" Warning VolumeUnknownReclaimPolicy: Volume has unrecognized PersistentVolumeReclaimPolicy;`},
		{"in-tree provisioned, Delete: annealed with the in-tree finalizer first",
			pv("v", "1Gi", policy(corev1.PersistentVolumeReclaimDelete), annotated(AnnDynamicallyProvisioned, hostPathPlugin)), nil,
			"anneal map[pv.kubernetes.io/provisioned-by:kubernetes.io/host-path] [kubernetes.io/pv-controller]; phase Available; "},
		{"migrated provisioned: annealed with migrated-to, then reclaimed by its driver",
			pv("v", "1Gi", bound, phase(corev1.VolumeReleased), policy(corev1.PersistentVolumeReclaimDelete), annotated(AnnDynamicallyProvisioned, "kubernetes.io/gce-pd")), nil,
			"anneal map[pv.kubernetes.io/migrated-to:pd.csi.storage.gke.io pv.kubernetes.io/provisioned-by:kubernetes.io/gce-pd] []; "},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := tt.v.DeepCopy()
			if got := volumeOutcome(decideVolume(volumeInput{Volume: tt.v, Claim: tt.claim})); got != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			if !reflect.DeepEqual(before, tt.v) {
				t.Error("decideVolume changed the volume it was given")
			}
		})
	}
}

func TestDecideRecycle(t *testing.T) {
	rs := &Recyclers{NFS: Recycler{Template: DefaultRecyclerPodTemplate()}, HostPath: Recycler{Template: DefaultRecyclerPodTemplate()}}
	nfs := pv("v", "1Gi", func(v *corev1.PersistentVolume) { v.Spec.NFS = &corev1.NFSVolumeSource{Server: "s", Path: "/"} })
	csi := pv("v", "1Gi", func(v *corev1.PersistentVolume) {
		v.Spec.CSI = &corev1.CSIPersistentVolumeSource{Driver: "d", VolumeHandle: "h"}
	})
	tests := []struct {
		name        string
		v           *corev1.PersistentVolume
		pods        []string
		claimExists bool
		want        string
	}{
		{"unused: the recycler pod", nfs, nil, false, "pod recycler-for-v"},
		{"used by running pods of the gone claim: reported, not started", nfs, []string{"ns/a", "ns/b"}, false,
			"used Normal VolumeFailedRecycle: Volume is used by pods: ns/a,ns/b;"},
		{"pods of a new claim of that name do not use it", nfs, []string{"ns/a"}, true, "pod recycler-for-v"},
		{"no recycler plugin: Failed", csi, nil, false,
			`fail "No recycler plugin found for the volume!" Warning VolumeFailedRecycle: No recycler plugin found for the volume!;`},
	}
	for _, tt := range tests {
		s := decideRecycle(tt.v, tt.pods, tt.claimExists, rs)
		got := ""
		switch {
		case s.Used != nil:
			got = "used " + notes([]notice{*s.Used})
		case s.Fail != nil:
			got = fmt.Sprintf("fail %q %s", s.Fail.Message, notes([]notice{s.Fail.Event}))
		case s.Pod != nil:
			got = "pod " + s.Pod.Name
		}
		if got != tt.want {
			t.Errorf("%s: got %s, want %s", tt.name, got, tt.want)
		}
	}
}
