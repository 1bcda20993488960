package selinuxwarning

import (
	"slices"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

const (
	mountOption = corev1.SELinuxChangePolicyMountOption
	recursive   = corev1.SELinuxChangePolicyRecursive
)

type podUse struct {
	ns, name string
	volume   corev1.UniqueVolumeName
	label    string
	policy   corev1.PodSELinuxChangePolicy
}

func (u podUse) key() types.NamespacedName {
	return types.NamespacedName{Namespace: u.ns, Name: u.name}
}

func (u podUse) ctx() mountContext { return mountContext{Label: u.label, Policy: u.policy} }

func nn(ns, name string) types.NamespacedName { return types.NamespacedName{Namespace: ns, Name: name} }

// sorted orders conflicts for comparison.
func sorted(cs []Conflict) []Conflict {
	out := slices.Clone(cs)
	slices.SortFunc(out, func(a, b Conflict) int {
		return strings.Compare(a.Pod.String()+a.Property+a.OtherPod.String(), b.Pod.String()+b.Property+b.OtherPod.String())
	})
	return out
}

// bothSides adds each conflict's other side.
func bothSides(cs ...Conflict) []Conflict {
	var out []Conflict
	for _, c := range cs {
		out = append(out, c, Conflict{Property: c.Property, Reason: c.Reason,
			Pod: c.OtherPod, Value: c.OtherValue, OtherPod: c.Pod, OtherValue: c.Value})
	}
	return out
}

// Upstream's cases for its volume cache's AddVolume.
func TestAddReportsConflicts(t *testing.T) {
	existing := []podUse{
		{"ns1", "pod1-mountOption", "vol1", "system_u:system_r:label1", mountOption},
		{"ns2", "pod2-recursive", "vol2", "", recursive},
		{"ns3", "pod3-1", "vol3", "", recursive},
		{"ns3", "pod3-2", "vol3", "", recursive},
		{"ns4", "pod4-1", "vol4", "system_u:system_r:label4", mountOption},
		{"ns4", "pod4-2", "vol4", "system_u:system_r:label4", mountOption},
		{"ns5", "pod5", "vol5", "::label5", mountOption},
		{"ns6", "pod6", "vol6", ":system_r:label6", mountOption},
		{"ns7", "pod7", "vol7", "::label7:c0,c1", mountOption},
		{"ns8", "pod8", "vol8", "", mountOption},
	}
	test := nn("testns", "testpod")
	for _, tc := range []struct {
		name    string
		initial []podUse
		add     podUse
		want    []Conflict // one side each
	}{
		{name: "new volume in an empty cache",
			add: podUse{"testns", "testpod", "vol-new", "system_u:system_r:label-new", mountOption}},
		{name: "new volume", initial: existing,
			add: podUse{"testns", "testpod", "vol-new", "system_u:system_r:label-new", mountOption}},
		{name: "same policy and label as the volume's pod", initial: existing,
			add: podUse{"testns", "testpod", "vol1", "system_u:system_r:label1", mountOption}},
		{name: "same policy, conflicting label", initial: existing,
			add: podUse{"testns", "testpod", "vol1", "system_u:system_r:label-new", mountOption},
			want: []Conflict{{Property: PropertyLabel, Reason: ReasonLabelConflict, Pod: test, Value: "system_u:system_r:label-new",
				OtherPod: nn("ns1", "pod1-mountOption"), OtherValue: "system_u:system_r:label1"}}},
		{name: "conflicting policy (a Recursive pod has no label)", initial: existing,
			add: podUse{"testns", "testpod", "vol1", "", recursive},
			want: []Conflict{{Property: PropertyChangePolicy, Reason: ReasonPolicyConflict, Pod: test, Value: "Recursive",
				OtherPod: nn("ns1", "pod1-mountOption"), OtherValue: "MountOption"}}},
		{name: "a pod alone on its volume changes policy and label", initial: existing,
			add: podUse{"ns2", "pod2-recursive", "vol2", "system_u:system_r:label-new", mountOption}},
		{name: "a pod changes policy (its CSIDriver's seLinuxMount changed) while another keeps the old", initial: existing,
			add: podUse{"ns3", "pod3-1", "vol3", "system_u:system_r:label-new", mountOption},
			want: []Conflict{{Property: PropertyChangePolicy, Reason: ReasonPolicyConflict, Pod: nn("ns3", "pod3-1"), Value: "MountOption",
				OtherPod: nn("ns3", "pod3-2"), OtherValue: "Recursive"}}},
		{name: "user and role missing on one side are not compared", initial: existing,
			add: podUse{"testns", "testpod", "vol5", "system_u:system_r:label5", mountOption}},
		{name: "different types with user and role missing", initial: existing,
			add: podUse{"testns", "testpod", "vol5", "::label6", mountOption},
			want: []Conflict{{Property: PropertyLabel, Reason: ReasonLabelConflict, Pod: test, Value: "::label6",
				OtherPod: nn("ns5", "pod5"), OtherValue: "::label5"}}},
		{name: "user missing on one side is not compared", initial: existing,
			add: podUse{"testns", "testpod", "vol6", "system_u::label6", mountOption}},
		{name: "a level against none", initial: existing,
			add: podUse{"testns", "testpod", "vol7", "system_u:system_r:label7", mountOption},
			want: []Conflict{{Property: PropertyLabel, Reason: ReasonLabelConflict, Pod: test, Value: "system_u:system_r:label7",
				OtherPod: nn("ns7", "pod7"), OtherValue: "::label7:c0,c1"}}},
		{name: "no label against a label without level", initial: existing,
			add: podUse{"testns", "testpod", "vol8", "system_u:system_r:label8", mountOption}},
		{name: "no label against a label with a level", initial: existing,
			add: podUse{"testns", "testpod", "vol8", "system_u:system_r:label8:c0,c1", mountOption},
			want: []Conflict{{Property: PropertyLabel, Reason: ReasonLabelConflict, Pod: test, Value: "system_u:system_r:label8:c0,c1",
				OtherPod: nn("ns8", "pod8"), OtherValue: ""}}},
		{name: "both the policy and the label conflict", initial: existing,
			add: podUse{"testns", "testpod", "vol8", ":::s0:c1,c2", recursive},
			want: []Conflict{
				{Property: PropertyChangePolicy, Reason: ReasonPolicyConflict, Pod: test, Value: "Recursive", OtherPod: nn("ns8", "pod8"), OtherValue: "MountOption"},
				{Property: PropertyLabel, Reason: ReasonLabelConflict, Pod: test, Value: ":::s0:c1,c2", OtherPod: nn("ns8", "pod8"), OtherValue: ""},
			}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := newVolumeCache()
			for _, u := range tc.initial {
				if got := c.Add(u.volume, u.key(), u.ctx(), "driver"); len(got) != 0 {
					t.Fatalf("adding %v: unexpected conflicts %+v", u, got)
				}
			}
			got := c.Add(tc.add.volume, tc.add.key(), tc.add.ctx(), "driver")
			want := bothSides(tc.want...)
			if !slices.Equal(sorted(got), sorted(want)) {
				t.Errorf("Add returned\n%+v\nwant\n%+v", sorted(got), sorted(want))
			}
			if !slices.Equal(sorted(c.Conflicts()), sorted(want)) {
				t.Errorf("Conflicts() = %+v, want what Add returned", c.Conflicts())
			}
			if again := c.Add(tc.add.volume, tc.add.key(), tc.add.ctx(), "driver"); len(again) != 0 {
				t.Errorf("adding the same pod again reported %+v: its conflicts were reported already", again)
			}
			if !slices.Equal(sorted(c.Conflicts()), sorted(want)) {
				t.Errorf("after adding again, Conflicts() = %+v, want them kept", c.Conflicts())
			}
		})
	}
}

// Upstream's cases for DeletePod: a pod's conflicts go with it, others stay.
func TestDeleteClearsThePodsConflicts(t *testing.T) {
	a, b, c, d := nn("ns", "podA"), nn("ns", "podB"), nn("ns", "podC"), nn("ns", "podD")
	use := func(name string, volume corev1.UniqueVolumeName) podUse {
		return podUse{"ns", name, volume, "system_u:system_r:label" + strings.TrimPrefix(name, "pod"), mountOption}
	}
	for _, tc := range []struct {
		name      string
		initial   []podUse
		delete    types.NamespacedName
		twice     bool
		surviving [][2]types.NamespacedName
	}{
		{name: "one of two conflicting pods", initial: []podUse{use("podA", "vol1"), use("podB", "vol1")}, delete: a},
		{name: "a pod without conflicts", initial: []podUse{use("podA", "vol1"), use("podB", "vol1"), use("podC", "vol2")},
			delete: c, surviving: [][2]types.NamespacedName{{a, b}}},
		{name: "one of three on a volume", initial: []podUse{use("podA", "vol1"), use("podB", "vol1"), use("podC", "vol1")},
			delete: a, surviving: [][2]types.NamespacedName{{b, c}}},
		{name: "a pod conflicting on two volumes", initial: []podUse{use("podB", "vol1"), use("podC", "vol2"), use("podA", "vol1"), use("podA", "vol2")},
			delete: a},
		{name: "conflicts on other volumes stay", initial: []podUse{use("podA", "vol1"), use("podB", "vol1"), use("podC", "vol2"), use("podD", "vol2")},
			delete: a, surviving: [][2]types.NamespacedName{{c, d}}},
		{name: "twice", initial: []podUse{use("podA", "vol1"), use("podB", "vol1")}, delete: a, twice: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			vc := newVolumeCache()
			for _, u := range tc.initial {
				vc.Add(u.volume, u.key(), u.ctx(), "driver")
			}
			vc.Delete(tc.delete)
			if tc.twice {
				vc.Delete(tc.delete)
			}
			var pairs [][2]types.NamespacedName
			for _, x := range vc.Conflicts() {
				pairs = append(pairs, [2]types.NamespacedName{x.Pod, x.OtherPod})
			}
			var want [][2]types.NamespacedName
			for _, p := range tc.surviving {
				want = append(want, p, [2]types.NamespacedName{p[1], p[0]})
			}
			order := func(x, y [2]types.NamespacedName) int {
				return strings.Compare(x[0].String()+x[1].String(), y[0].String()+y[1].String())
			}
			slices.SortFunc(pairs, order)
			slices.SortFunc(want, order)
			if !slices.Equal(pairs, want) {
				t.Errorf("conflicts left between %v, want %v", pairs, want)
			}
			for _, p := range vc.PodsOfDriver("driver") {
				if p == tc.delete {
					t.Errorf("deleted pod %v still listed as using the driver's volumes", p)
				}
			}
		})
	}
}

func TestDeleteEmptiesTheCache(t *testing.T) {
	c := newVolumeCache()
	var pods []types.NamespacedName
	for _, ns := range []string{"ns1", "ns2"} {
		for _, name := range []string{"pod1", "pod2"} {
			for _, v := range []corev1.UniqueVolumeName{"vol1", "vol2"} {
				if got := c.Add(v, nn(ns, name), mountContext{Label: "label1", Policy: mountOption}, "driver"); len(got) != 0 {
					t.Fatalf("unexpected conflicts %+v", got)
				}
			}
			pods = append(pods, nn(ns, name))
		}
	}
	if got := len(c.PodsOfDriver("driver")); got != 8 {
		t.Fatalf("PodsOfDriver lists %d pod volumes, want 8", got)
	}
	for _, p := range pods {
		c.Delete(p)
	}
	if len(c.volumes) != 0 || len(c.podVolume) != 0 || len(c.conflicts) != 0 {
		t.Errorf("cache not empty: %d volumes, %d pods, %d conflicts", len(c.volumes), len(c.podVolume), len(c.conflicts))
	}
}

// A pair of pods conflicting the same way on two volumes is one conflict (each side once),
// as upstream's metric deduplicates.
func TestConflictsAreDeduplicatedAcrossVolumes(t *testing.T) {
	c := newVolumeCache()
	d, e := nn("ns", "podD"), nn("ns", "podE")
	for _, v := range []corev1.UniqueVolumeName{"vol3", "vol4"} {
		c.Add(v, d, mountContext{Label: ":::s0:c1", Policy: mountOption}, "driver")
	}
	for _, v := range []corev1.UniqueVolumeName{"vol3", "vol4"} {
		if got := c.Add(v, e, mountContext{Label: ":::s0:c2", Policy: mountOption}, "driver"); len(got) != 2 {
			t.Fatalf("%s: %d conflicts, want both sides of one", v, len(got))
		}
	}
	if got := c.Conflicts(); len(got) != 2 {
		t.Errorf("Conflicts() = %+v, want the two sides once", got)
	}
}

func TestPodsOfDriver(t *testing.T) {
	c := newVolumeCache()
	c.Add("kubernetes.io/csi/a^1", nn("ns", "p1"), mountContext{Policy: recursive}, "a")
	c.Add("kubernetes.io/csi/b^1", nn("ns", "p2"), mountContext{Policy: recursive}, "b")
	c.Add("kubernetes.io/iscsi/x", nn("ns", "p3"), mountContext{Policy: recursive}, "")
	if got := c.PodsOfDriver("a"); !slices.Equal(got, []types.NamespacedName{nn("ns", "p1")}) {
		t.Errorf("PodsOfDriver(a) = %v", got)
	}
}

// Upstream's messages, word for word (its tests' expected Events, and its quirk: no space
// before the value when the other pod is in another namespace).
func TestMessage(t *testing.T) {
	for _, tc := range []struct {
		c    Conflict
		want string
	}{
		{Conflict{Property: PropertyLabel, Pod: nn("ns", "pod1"), Value: ":::s0:c1,c2", OtherPod: nn("ns", "pod2"), OtherValue: ":::s0:c98,c99"},
			`SELinuxLabel ":::s0:c1,c2" conflicts with pod pod2 that uses the same volume as this pod with SELinuxLabel ":::s0:c98,c99". If both pods land on the same node, only one of them may access the volume.`},
		{Conflict{Property: PropertyChangePolicy, Pod: nn("ns", "pod1"), Value: "Recursive", OtherPod: nn("ns", "pod2"), OtherValue: "MountOption"},
			`SELinuxChangePolicy "Recursive" conflicts with pod pod2 that uses the same volume as this pod with SELinuxChangePolicy "MountOption". If both pods land on the same node, only one of them may access the volume.`},
		{Conflict{Property: PropertyLabel, Pod: nn("ns1", "pod1"), Value: ":::s0:c1,c2", OtherPod: nn("ns2", "pod2"), OtherValue: ":::s0:c98,c99"},
			`SELinuxLabel":::s0:c1,c2" conflicts with another pod that uses the same volume as this pod with a different SELinuxLabel. If both pods land on the same node, only one of them may access the volume.`},
	} {
		if got := tc.c.Message(); got != tc.want {
			t.Errorf("Message() =\n%s\nwant\n%s", got, tc.want)
		}
	}
}
