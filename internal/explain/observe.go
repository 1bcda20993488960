package explain

import (
	"context"
	"fmt"
	"sort"
	"strings"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"

	"github.com/kcm/kcm/internal/controller/cronjob"
	"github.com/kcm/kcm/internal/controller/daemonset"
	"github.com/kcm/kcm/internal/controller/deployment"
	"github.com/kcm/kcm/internal/controller/endpointslice"
	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/controller/namespace"
	"github.com/kcm/kcm/internal/controller/nodelifecycle"
	"github.com/kcm/kcm/internal/controller/pvbinder"
	"github.com/kcm/kcm/internal/controller/replicaset"
	"github.com/kcm/kcm/internal/controller/servicelb"
	"github.com/kcm/kcm/internal/controller/statefulset"
	"github.com/kcm/kcm/internal/track"
)

// Observe: the reads from the API, into plain data (observed) that the judgement reads.
// Nothing here decides anything: a read that fails for want of rights leaves the link's
// facts empty rather than failing the whole command, except for the object asked about.

// Controllers' names (the controller-runtime names, upstream's controller names), as the
// links of the chain name them and the leader serves their views: the controllers' own.
var (
	deploymentController  = deployment.ControllerName
	replicaSetController  = replicaset.ReplicaSetKind.ControllerName
	jobController         = job.ControllerName
	cronJobController     = cronjob.ControllerName
	statefulSetController = statefulset.ControllerName
	daemonSetController   = daemonset.ControllerName
	endpointSliceCtrl     = endpointslice.ControllerName
	namespaceController   = namespace.ControllerName
	claimBinderController = pvbinder.ControllerName + "-claims"
	volumeBinderCtrl      = pvbinder.ControllerName + "-volumes"
	serviceLBController   = servicelb.ControllerName
	nodeLifecycleCtrl     = nodelifecycle.ControllerName
)

// Kinds the walk knows, by group and kind.
var (
	gkDeployment  = schema.GroupKind{Group: "apps", Kind: "Deployment"}
	gkReplicaSet  = schema.GroupKind{Group: "apps", Kind: "ReplicaSet"}
	gkStatefulSet = schema.GroupKind{Group: "apps", Kind: "StatefulSet"}
	gkDaemonSet   = schema.GroupKind{Group: "apps", Kind: "DaemonSet"}
	gkJob         = schema.GroupKind{Group: "batch", Kind: "Job"}
	gkCronJob     = schema.GroupKind{Group: "batch", Kind: "CronJob"}
	gkPod         = schema.GroupKind{Kind: "Pod"}
	gkService     = schema.GroupKind{Kind: "Service"}
	gkNamespace   = schema.GroupKind{Kind: "Namespace"}
	gkPVC         = schema.GroupKind{Kind: "PersistentVolumeClaim"}
	gkPV          = schema.GroupKind{Kind: "PersistentVolume"}
	gkNode        = schema.GroupKind{Kind: "Node"}
	gkSlice       = schema.GroupKind{Group: "discovery.k8s.io", Kind: "EndpointSlice"}
	gkClass       = schema.GroupKind{Group: "storage.k8s.io", Kind: "StorageClass"}
	gkPDB         = schema.GroupKind{Group: "policy", Kind: "PodDisruptionBudget"}
)

// Resources the walk reads, by their preferred version.
var (
	grDeployments = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}
	grReplicaSets = schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "replicasets"}
	grJobs        = schema.GroupVersionResource{Group: "batch", Version: "v1", Resource: "jobs"}
	grPods        = schema.GroupVersionResource{Version: "v1", Resource: "pods"}
	grPVCs        = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumeclaims"}
	grPVs         = schema.GroupVersionResource{Version: "v1", Resource: "persistentvolumes"}
	grNodes       = schema.GroupVersionResource{Version: "v1", Resource: "nodes"}
	grEvents      = schema.GroupVersionResource{Version: "v1", Resource: "events"}
	grSlices      = schema.GroupVersionResource{Group: "discovery.k8s.io", Version: "v1", Resource: "endpointslices"}
	grClasses     = schema.GroupVersionResource{Group: "storage.k8s.io", Version: "v1", Resource: "storageclasses"}
	grPDBs        = schema.GroupVersionResource{Group: "policy", Version: "v1", Resource: "poddisruptionbudgets"}
)

// observed is one link of the chain as the API shows it.
type observed struct {
	obj *unstructured.Unstructured
	// controller is the controller responsible for the link; viewKey the key its view is
	// kept under when not the object's own (an EndpointSlice's is its Service's).
	controller, viewKey string
	// events are the Events about the object, newest first (the judgement keeps the
	// Warnings and the few Normal ones that say a link waits, as the binder's FailedBinding).
	events []corev1.Event
	// missing names a referenced object that does not exist (a Pod's node, a claim's
	// StorageClass): its kind and name.
	missing *Ref
	// pdbs are the PodDisruptionBudgets covering a workload's pods.
	pdbs []*unstructured.Unstructured
	// remaining counts a Terminating Namespace's remaining objects by resource; the objects
	// still holding finalizers are its children.
	remaining map[string]int
	// discoveryErr is a Terminating Namespace's partial discovery failure.
	discoveryErr string
	children     []*observed
	view         *track.View
}

// observer reads the chain with the user's rights.
type observer struct {
	dyn       dynamic.Interface
	discovery discovery.DiscoveryInterface
	// events caches the Warning Events per namespace (a cluster-scoped object's are read by
	// uid); lists caches the lists (a Deployment's ReplicaSets each list the namespace's
	// pods), nodes the nodes by name (a DaemonSet's pods each read theirs).
	events map[string][]corev1.Event
	lists  map[string][]*unstructured.Unstructured
	nodes  map[string]*unstructured.Unstructured
}

func newObserver(dyn dynamic.Interface, dc discovery.DiscoveryInterface) *observer {
	return &observer{dyn: dyn, discovery: dc, events: map[string][]corev1.Event{},
		lists: map[string][]*unstructured.Unstructured{}, nodes: map[string]*unstructured.Unstructured{}}
}

// walk reads the object's chain below it.
func (o *observer) walk(ctx context.Context, obj *unstructured.Unstructured) *observed {
	n := &observed{obj: obj}
	n.events = o.eventsOf(ctx, obj)
	gk := obj.GroupVersionKind().GroupKind()
	ns := obj.GetNamespace()
	switch gk {
	case gkDeployment:
		n.controller = deploymentController
		for _, rs := range o.owned(ctx, grReplicaSets, ns, obj) {
			n.children = append(n.children, o.walk(ctx, rs))
		}
		n.pdbs = o.pdbsCovering(ctx, obj)
	case gkReplicaSet:
		n.controller = replicaSetController
		n.children = o.walkPods(ctx, obj)
	case gkCronJob:
		n.controller = cronJobController
		for _, job := range o.owned(ctx, grJobs, ns, obj) {
			n.children = append(n.children, o.walk(ctx, job))
		}
	case gkJob:
		n.controller = jobController
		n.children = o.walkPods(ctx, obj)
	case gkStatefulSet:
		n.controller = statefulSetController
		n.children = o.walkPods(ctx, obj)
		n.children = append(n.children, o.walkClaimsOf(ctx, obj)...)
		n.pdbs = o.pdbsCovering(ctx, obj)
	case gkDaemonSet:
		n.controller = daemonSetController
		n.children = o.walkPods(ctx, obj)
	case gkService:
		n.controller = endpointSliceCtrl
		if t, _, _ := unstructured.NestedString(obj.Object, "spec", "type"); t == string(corev1.ServiceTypeLoadBalancer) {
			n.controller = serviceLBController
		}
		sel := labels.SelectorFromSet(labels.Set{"kubernetes.io/service-name": obj.GetName()})
		for _, s := range o.list(ctx, grSlices, ns, sel) {
			c := &observed{obj: s, controller: endpointSliceCtrl, viewKey: ns + "/" + obj.GetName()}
			c.events = o.eventsOf(ctx, s)
			n.children = append(n.children, c)
		}
	case gkNamespace:
		n.controller = namespaceController
		if obj.GetDeletionTimestamp() != nil {
			o.walkNamespaceContent(ctx, n)
		}
	case gkPVC:
		n.controller = claimBinderController
		o.walkClaim(ctx, n)
	case gkPV:
		n.controller = volumeBinderCtrl
	case gkPod:
		o.walkPod(ctx, n)
	}
	return n
}

// walkPods reads the pods the object controls, each with its node.
func (o *observer) walkPods(ctx context.Context, owner *unstructured.Unstructured) []*observed {
	var out []*observed
	for _, p := range o.owned(ctx, grPods, owner.GetNamespace(), owner) {
		out = append(out, o.walk(ctx, p))
	}
	return out
}

// walkPod reads the pod's node: a pod bound to a node that does not exist is a cause.
func (o *observer) walkPod(ctx context.Context, n *observed) {
	node, _, _ := unstructured.NestedString(n.obj.Object, "spec", "nodeName")
	if node == "" {
		return
	}
	got, seen := o.nodes[node]
	if !seen {
		var err error
		if got, err = o.dyn.Resource(grNodes).Get(ctx, node, metav1.GetOptions{}); err != nil {
			got = nil
			if !apierrors.IsNotFound(err) {
				return // no rights to read nodes: nothing to say of it
			}
		}
		o.nodes[node] = got
	}
	if got == nil {
		n.missing = &Ref{Kind: "Node", Name: node}
		return
	}
	n.children = append(n.children, &observed{obj: got, controller: nodeLifecycleCtrl})
}

// walkClaimsOf reads a StatefulSet's claims: <template>-<set>-<ordinal> of each template.
func (o *observer) walkClaimsOf(ctx context.Context, sts *unstructured.Unstructured) []*observed {
	templates, _, _ := unstructured.NestedSlice(sts.Object, "spec", "volumeClaimTemplates")
	if len(templates) == 0 {
		return nil
	}
	var prefixes []string
	for _, t := range templates {
		if m, ok := t.(map[string]any); ok {
			name, _, _ := unstructured.NestedString(m, "metadata", "name")
			prefixes = append(prefixes, name+"-"+sts.GetName()+"-")
		}
	}
	var out []*observed
	for _, c := range o.list(ctx, grPVCs, sts.GetNamespace(), labels.Everything()) {
		for _, p := range prefixes {
			if strings.HasPrefix(c.GetName(), p) {
				out = append(out, o.walk(ctx, c))
				break
			}
		}
	}
	return out
}

// walkClaim reads a claim's volume, or the StorageClass it waits on.
func (o *observer) walkClaim(ctx context.Context, n *observed) {
	if volume, _, _ := unstructured.NestedString(n.obj.Object, "spec", "volumeName"); volume != "" {
		pv, err := o.dyn.Resource(grPVs).Get(ctx, volume, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			n.missing = &Ref{Kind: "PersistentVolume", Name: volume}
		case err == nil:
			n.children = append(n.children, o.walk(ctx, pv))
		}
		return
	}
	class, set, _ := unstructured.NestedString(n.obj.Object, "spec", "storageClassName")
	if set && class == "" {
		return // no class: only a pre-provisioned volume binds it
	}
	if !set {
		class = o.defaultClass(ctx)
		if class == "" {
			return
		}
	}
	sc, err := o.dyn.Resource(grClasses).Get(ctx, class, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		n.missing = &Ref{Kind: "StorageClass", Name: class}
	case err == nil:
		n.children = append(n.children, &observed{obj: sc, events: o.eventsOf(ctx, sc)})
	}
}

// defaultClass is the default StorageClass's name, "" when there is none.
func (o *observer) defaultClass(ctx context.Context) string {
	for _, sc := range o.list(ctx, grClasses, "", labels.Everything()) {
		a := sc.GetAnnotations()
		if a["storageclass.kubernetes.io/is-default-class"] == "true" || a["storageclass.beta.kubernetes.io/is-default-class"] == "true" {
			return sc.GetName()
		}
	}
	return ""
}

// walkNamespaceContent lists every namespaced, listable resource in a Terminating
// namespace, as namespace-controller does: the objects still holding finalizers become the
// namespace's children, the others are counted.
func (o *observer) walkNamespaceContent(ctx context.Context, n *observed) {
	ns := n.obj.GetName()
	lists, err := o.discovery.ServerPreferredNamespacedResources()
	if err != nil {
		n.discoveryErr = err.Error()
	}
	n.remaining = map[string]int{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			continue
		}
		for _, r := range l.APIResources {
			if !hasVerb(r.Verbs, "list") || strings.Contains(r.Name, "/") {
				continue
			}
			items := o.list(ctx, gv.WithResource(r.Name), ns, labels.Everything())
			if len(items) == 0 {
				continue
			}
			resource := schema.GroupResource{Group: gv.Group, Resource: r.Name}.String()
			n.remaining[resource] += len(items)
			for _, item := range items {
				if len(item.GetFinalizers()) > 0 {
					n.children = append(n.children, &observed{obj: item, events: o.eventsOf(ctx, item)})
				}
			}
		}
	}
	sort.SliceStable(n.children, func(i, j int) bool {
		a, b := n.children[i].obj, n.children[j].obj
		return a.GetKind()+"/"+a.GetName() < b.GetKind()+"/"+b.GetName()
	})
}

func hasVerb(verbs []string, verb string) bool {
	for _, v := range verbs {
		if v == verb {
			return true
		}
	}
	return false
}

// pdbsCovering lists the PodDisruptionBudgets whose selector matches the workload's pod
// template.
func (o *observer) pdbsCovering(ctx context.Context, workload *unstructured.Unstructured) []*unstructured.Unstructured {
	tmpl, _, _ := unstructured.NestedStringMap(workload.Object, "spec", "template", "metadata", "labels")
	var out []*unstructured.Unstructured
	for _, pdb := range o.list(ctx, grPDBs, workload.GetNamespace(), labels.Everything()) {
		raw, ok, _ := unstructured.NestedMap(pdb.Object, "spec", "selector")
		if !ok {
			continue
		}
		ls := &metav1.LabelSelector{}
		if runtime.DefaultUnstructuredConverter.FromUnstructured(raw, ls) != nil {
			continue
		}
		sel, err := metav1.LabelSelectorAsSelector(ls)
		if err != nil || sel.Empty() || !sel.Matches(labels.Set(tmpl)) {
			continue
		}
		out = append(out, pdb)
	}
	return out
}

// owned lists the objects of the resource in ns whose controller owner is owner.
func (o *observer) owned(ctx context.Context, gvr schema.GroupVersionResource, ns string, owner *unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	for _, item := range o.list(ctx, gvr, ns, labels.Everything()) {
		if ref := metav1.GetControllerOfNoCopy(item); ref != nil && ref.UID == owner.GetUID() {
			out = append(out, item)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return lessByName(out[i].GetName(), out[j].GetName()) })
	return out
}

// lessByName orders names with their numeric suffixes as numbers (web-2 before web-10).
func lessByName(a, b string) bool {
	pa, na := splitOrdinal(a)
	pb, nb := splitOrdinal(b)
	if pa == pb && na >= 0 && nb >= 0 {
		return na < nb
	}
	return a < b
}

// list lists a resource; a failure (no rights, no such resource) is an empty list.
func (o *observer) list(ctx context.Context, gvr schema.GroupVersionResource, ns string, sel labels.Selector) []*unstructured.Unstructured {
	key := gvr.String() + "|" + ns + "|" + sel.String()
	if l, ok := o.lists[key]; ok {
		return l
	}
	l := o.listFresh(ctx, gvr, ns, sel)
	o.lists[key] = l
	return l
}

func (o *observer) listFresh(ctx context.Context, gvr schema.GroupVersionResource, ns string, sel labels.Selector) []*unstructured.Unstructured {
	var ri dynamic.ResourceInterface = o.dyn.Resource(gvr)
	if ns != "" {
		ri = o.dyn.Resource(gvr).Namespace(ns)
	}
	l, err := ri.List(ctx, metav1.ListOptions{LabelSelector: sel.String()})
	if err != nil {
		return nil
	}
	out := make([]*unstructured.Unstructured, len(l.Items))
	for i := range l.Items {
		out[i] = &l.Items[i]
	}
	return out
}

// eventsOf is the Events about obj (core/v1, which also shows events.k8s.io's), newest
// first.
func (o *observer) eventsOf(ctx context.Context, obj *unstructured.Unstructured) []corev1.Event {
	ns := obj.GetNamespace()
	var all []corev1.Event
	if ns != "" {
		cached, ok := o.events[ns]
		if !ok {
			cached = o.readEvents(ctx, ns, "")
			o.events[ns] = cached
		}
		all = cached
	} else {
		// A cluster-scoped object's Events are in "default" (or the object's own namespace,
		// for a Namespace): read them by uid everywhere.
		all = o.readEvents(ctx, metav1.NamespaceAll, string(obj.GetUID()))
	}
	var out []corev1.Event
	for _, e := range all {
		if e.InvolvedObject.UID == obj.GetUID() {
			out = append(out, e)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return eventTime(out[i]).After(eventTime(out[j]).Time) })
	return out
}

func (o *observer) readEvents(ctx context.Context, ns, uid string) []corev1.Event {
	sel := fields.Set{}
	if uid != "" {
		sel["involvedObject.uid"] = uid
	}
	var ri dynamic.ResourceInterface = o.dyn.Resource(grEvents)
	if ns != "" {
		ri = o.dyn.Resource(grEvents).Namespace(ns)
	}
	l, err := ri.List(ctx, metav1.ListOptions{FieldSelector: fields.SelectorFromSet(sel).String()})
	if err != nil {
		return nil
	}
	out := make([]corev1.Event, 0, len(l.Items))
	for _, item := range l.Items {
		var e corev1.Event
		if runtime.DefaultUnstructuredConverter.FromUnstructured(item.Object, &e) == nil {
			out = append(out, e)
		}
	}
	return out
}

// eventTime is when the Event last happened.
func eventTime(e corev1.Event) metav1.Time {
	switch {
	case e.Series != nil && !e.Series.LastObservedTime.IsZero():
		return metav1.Time{Time: e.Series.LastObservedTime.Time}
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp
	case !e.EventTime.IsZero():
		return metav1.Time{Time: e.EventTime.Time}
	}
	return e.CreationTimestamp
}

// getObject reads the object asked about; its errors are the command's.
func getObject(ctx context.Context, dyn dynamic.Interface, mapping *meta.RESTMapping, ns, name string) (*unstructured.Unstructured, error) {
	ri := dynamic.ResourceInterface(dyn.Resource(mapping.Resource))
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		ri = dyn.Resource(mapping.Resource).Namespace(ns)
	}
	obj, err := ri.Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		where := ""
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			where = fmt.Sprintf(" in namespace %q", ns)
		}
		return nil, fmt.Errorf("%s %q not found%s", mapping.Resource.GroupResource(), name, where)
	}
	return obj, err
}
