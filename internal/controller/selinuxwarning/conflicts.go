package selinuxwarning

import (
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// This file holds the controller's memory and its one decision: every volume of every live
// pod with the label and policy the pod uses it with, and which pairs of pods conflict on a
// volume. Pods come and go through Add and Delete; the metric reads Conflicts.

// Event reasons and metric properties of the two kinds of conflict, as upstream's.
const (
	PropertyLabel        = "SELinuxLabel"
	PropertyChangePolicy = "SELinuxChangePolicy"
	ReasonLabelConflict  = "SELinuxLabelConflict"
	ReasonPolicyConflict = "SELinuxChangePolicyConflict"
)

// Conflict is one pod's side of a conflict with another pod on one volume: each conflict
// is reported as two, one on each pod.
type Conflict struct {
	// Property is what differs (PropertyLabel or PropertyChangePolicy), the metric's
	// "property" label.
	Property string
	// Reason is the Event's reason.
	Reason string
	// Pod gets the Event; Value is its label or policy.
	Pod   types.NamespacedName
	Value string
	// OtherPod and OtherValue are the other side, named in the Event when both pods are in
	// one namespace.
	OtherPod   types.NamespacedName
	OtherValue string
}

// Message is upstream's Event message for the conflict, word for word: a pod of another
// namespace is not named, and then, as upstream's, the property and the quoted value are
// not separated by a space.
func (c Conflict) Message() string {
	value, other := `"`+c.Value+`"`, `"`+c.OtherValue+`"`
	if c.Pod.Namespace == c.OtherPod.Namespace {
		return fmt.Sprintf("%s %s conflicts with pod %s that uses the same volume as this pod with %s %s. If both pods land on the same node, only one of them may access the volume.",
			c.Property, value, c.OtherPod.Name, c.Property, other)
	}
	return fmt.Sprintf("%s%s conflicts with another pod that uses the same volume as this pod with a different %s. If both pods land on the same node, only one of them may access the volume.",
		c.Property, value, c.Property)
}

// use is how one pod uses one volume.
type use struct {
	label  string
	parts  [4]string
	policy corev1.PodSELinuxChangePolicy
}

// usedVolume is a volume in use by at least one pod.
type usedVolume struct {
	// csiDriver is the volume's CSI driver, "" for other volumes: a driver's seLinuxMount
	// changing changes how its volumes are mounted.
	csiDriver string
	pods      map[types.NamespacedName]use
}

// volumeCache is every volume used by a live pod, and the conflicts between them. It is
// safe for concurrent use (the metric is gathered while the controller works).
type volumeCache struct {
	mu        sync.RWMutex
	volumes   map[corev1.UniqueVolumeName]*usedVolume
	podVolume map[types.NamespacedName]map[corev1.UniqueVolumeName]bool
	conflicts map[corev1.UniqueVolumeName][]Conflict
}

func newVolumeCache() *volumeCache {
	return &volumeCache{
		volumes:   map[corev1.UniqueVolumeName]*usedVolume{},
		podVolume: map[types.NamespacedName]map[corev1.UniqueVolumeName]bool{},
		conflicts: map[corev1.UniqueVolumeName][]Conflict{},
	}
}

// Add records that pod uses the volume with ctx and returns the conflicts this causes,
// both sides of each, to be reported. A pod already known with the same label and policy
// causes nothing new: its conflicts were reported when it came.
func (c *volumeCache) Add(volume corev1.UniqueVolumeName, pod types.NamespacedName, ctx mountContext, csiDriver string) []Conflict {
	c.mu.Lock()
	defer c.mu.Unlock()
	u := use{label: ctx.Label, parts: labelParts(ctx.Label), policy: ctx.Policy}
	v := c.volumes[volume]
	if v == nil {
		c.volumes[volume] = &usedVolume{csiDriver: csiDriver, pods: map[types.NamespacedName]use{pod: u}}
		c.index(pod, volume)
		return nil
	}
	if old, ok := v.pods[pod]; ok && old == u {
		return nil
	}
	v.pods[pod] = u
	c.index(pod, volume)

	var found []Conflict
	for other, o := range v.pods {
		if other == pod {
			continue
		}
		if o.policy != u.policy {
			found = append(found, pair(PropertyChangePolicy, ReasonPolicyConflict, pod, string(u.policy), other, string(o.policy))...)
		}
		if labelsConflict(o.parts, u.parts) {
			found = append(found, pair(PropertyLabel, ReasonLabelConflict, pod, u.label, other, o.label)...)
		}
	}
	kept := withoutPod(c.conflicts[volume], pod)
	c.setConflicts(volume, append(kept, found...))
	return found
}

// pair is a conflict seen from both pods.
func pair(property, reason string, pod types.NamespacedName, value string, other types.NamespacedName, otherValue string) []Conflict {
	return []Conflict{
		{Property: property, Reason: reason, Pod: pod, Value: value, OtherPod: other, OtherValue: otherValue},
		{Property: property, Reason: reason, Pod: other, Value: otherValue, OtherPod: pod, OtherValue: value},
	}
}

// Delete forgets a pod that is gone or finished, and its conflicts.
func (c *volumeCache) Delete(pod types.NamespacedName) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for volume := range c.podVolume[pod] {
		c.setConflicts(volume, withoutPod(c.conflicts[volume], pod))
		if v := c.volumes[volume]; v != nil {
			delete(v.pods, pod)
			if len(v.pods) == 0 {
				delete(c.volumes, volume)
			}
		}
	}
	delete(c.podVolume, pod)
}

// PodsOfDriver lists the pods using volumes of a CSI driver.
func (c *volumeCache) PodsOfDriver(driver string) []types.NamespacedName {
	c.mu.RLock()
	defer c.mu.RUnlock()
	var pods []types.NamespacedName
	for _, v := range c.volumes {
		if v.csiDriver != driver {
			continue
		}
		for p := range v.pods {
			pods = append(pods, p)
		}
	}
	return pods
}

// Conflicts lists the current conflicts, both sides of each, once each (two volumes shared
// by the same two pods with the same values are one conflict, as upstream's metric).
func (c *volumeCache) Conflicts() []Conflict {
	c.mu.RLock()
	defer c.mu.RUnlock()
	seen := map[Conflict]bool{}
	var all []Conflict
	for _, cs := range c.conflicts {
		for _, x := range cs {
			if !seen[x] {
				seen[x] = true
				all = append(all, x)
			}
		}
	}
	return all
}

func (c *volumeCache) index(pod types.NamespacedName, volume corev1.UniqueVolumeName) {
	if c.podVolume[pod] == nil {
		c.podVolume[pod] = map[corev1.UniqueVolumeName]bool{}
	}
	c.podVolume[pod][volume] = true
}

func (c *volumeCache) setConflicts(volume corev1.UniqueVolumeName, cs []Conflict) {
	if len(cs) == 0 {
		delete(c.conflicts, volume)
		return
	}
	c.conflicts[volume] = cs
}

// withoutPod is cs without the conflicts on either side of which pod is.
func withoutPod(cs []Conflict, pod types.NamespacedName) []Conflict {
	var kept []Conflict
	for _, x := range cs {
		if x.Pod != pod && x.OtherPod != pod {
			kept = append(kept, x)
		}
	}
	return kept
}
