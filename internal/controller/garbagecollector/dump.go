package garbagecollector

import (
	"bytes"
	"fmt"
	"net/http"
	"slices"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// DebugPath is where upstream mounts a controller's debugging handler
// (cmd/kube-controller-manager/app/controllermanager.go BuildControllers): the collector's
// graph is served at DebugPath+"/graph".
const DebugPath = "/debug/controllers/" + ControllerName

// dotVertex is one node of the DOT dump, as upstream's dump.go describes it.
type dotVertex struct {
	uid                types.UID
	gvk                schema.GroupVersionKind
	namespace          string
	name               string
	missingFromGraph   bool
	beingDeleted       bool
	deletingDependents bool
	virtual            bool
}

// dotEdge points from a dependent to its owner.
type dotEdge struct{ from, to types.UID }

func vertexOf(n *node) dotVertex {
	// An unparsable apiVersion gives an empty group version, as upstream's dump renders it.
	gv, _ := schema.ParseGroupVersion(n.identity.APIVersion)
	return dotVertex{
		uid:                n.identity.UID,
		gvk:                gv.WithKind(n.identity.Kind),
		namespace:          n.identity.Namespace,
		name:               n.identity.Name,
		beingDeleted:       n.beingDeleted,
		deletingDependents: n.deletingDependents,
		virtual:            n.virtual,
	}
}

// missingVertexOf is an owner a dependent still names but the graph no longer holds (it was
// deleted; the dependent has not been processed yet). Upstream gives it no namespace.
func missingVertexOf(ref metav1.OwnerReference) dotVertex {
	gv, _ := schema.ParseGroupVersion(ref.APIVersion)
	return dotVertex{uid: ref.UID, gvk: gv.WithKind(ref.Kind), name: ref.Name, missingFromGraph: true}
}

// dot returns the vertices and edges of the whole graph, or with uids of the part reachable
// from those nodes through owners and dependents (unknown UIDs are ignored), as upstream's
// ToDOTNodesAndEdges(ForObj). It holds the graph's read lock only to copy the nodes' fields,
// so the watches' handlers wait no longer than that copy.
func (g *graph) dot(uids ...types.UID) ([]dotVertex, []dotEdge) {
	g.mu.RLock()
	nodes := g.nodes
	if len(uids) > 0 {
		nodes = g.reachable(uids)
	}
	vertices, edges := toDOT(nodes)
	g.mu.RUnlock()
	// Sorted as upstream sorts them, once the lock is released.
	slices.SortStableFunc(vertices, func(a, b dotVertex) int { return strings.Compare(string(a.uid), string(b.uid)) })
	slices.SortStableFunc(edges, func(a, b dotEdge) int {
		if c := strings.Compare(string(a.from), string(b.from)); c != 0 {
			return c
		}
		return strings.Compare(string(a.to), string(b.to))
	})
	return vertices, edges
}

// reachable is the set of nodes connected to uids, both ways; g.mu is held.
func (g *graph) reachable(uids []types.UID) map[types.UID]*node {
	out := map[types.UID]*node{}
	pending := slices.Clone(uids)
	for len(pending) > 0 {
		uid := pending[len(pending)-1]
		pending = pending[:len(pending)-1]
		if _, seen := out[uid]; seen {
			continue
		}
		n, ok := g.nodes[uid]
		if !ok {
			continue
		}
		out[uid] = n
		for _, ref := range n.owners {
			pending = append(pending, ref.UID)
		}
		for dep := range n.dependents {
			pending = append(pending, dep.identity.UID)
		}
	}
	return out
}

// toDOT renders nodes: every node with owners or dependents (in the whole graph, as upstream
// counts them even in a subgraph), one edge per owner reference, and a "missing" vertex for
// an owner referenced but absent from nodes; g.mu is held.
func toDOT(nodes map[types.UID]*node) ([]dotVertex, []dotEdge) {
	vertices := []dotVertex{}
	edges := []dotEdge{}
	known := map[types.UID]bool{}
	for uid, n := range nodes {
		if len(n.dependents) == 0 && len(n.owners) == 0 {
			continue
		}
		known[uid] = true
		vertices = append(vertices, vertexOf(n))
	}
	for uid, n := range nodes {
		for _, ref := range n.owners {
			if !known[ref.UID] {
				// Upstream adds one such vertex per reference; a strict digraph merges
				// repeated node statements, so one is the same graph.
				known[ref.UID] = true
				vertices = append(vertices, missingVertexOf(ref))
			}
			edges = append(edges, dotEdge{from: uid, to: ref.UID})
		}
	}
	return vertices, edges
}

// attributes are upstream's node attributes, in its order: a label for rendering and the
// object's coordinates and states for tools reading the dump.
func (v dotVertex) attributes() [][2]string {
	kind := v.gvk.Kind + "." + v.gvk.Version
	if v.gvk.Group != "" {
		kind += "." + v.gvk.Group
	}
	label := fmt.Sprintf("uid=%v\nnamespace=%v\n%v/%v\n", v.uid, v.namespace, kind, v.name)
	var conditions []string
	for _, c := range []struct {
		on   bool
		name string
	}{{v.beingDeleted, "beingDeleted"}, {v.deletingDependents, "deletingDependents"}, {v.virtual, "virtual"}, {v.missingFromGraph, "missingFromGraph"}} {
		if c.on {
			conditions = append(conditions, c.name)
		}
	}
	if len(conditions) > 0 {
		label += strings.Join(conditions, ",") + "\n"
	}
	return [][2]string{
		{"label", label},
		{"group", v.gvk.Group},
		{"version", v.gvk.Version},
		{"kind", v.gvk.Kind},
		{"namespace", v.namespace},
		{"name", v.name},
		{"uid", string(v.uid)},
		{"missing", fmt.Sprint(v.missingFromGraph)},
		{"beingDeleted", fmt.Sprint(v.beingDeleted)},
		{"deletingDependents", fmt.Sprint(v.deletingDependents)},
		{"virtual", fmt.Sprint(v.virtual)},
	}
}

// writeDOT writes upstream's DOT text: a strict digraph, the node statements, then the edges.
func writeDOT(b *bytes.Buffer, vertices []dotVertex, edges []dotEdge) {
	b.WriteString("strict digraph full {\n")
	if len(vertices) > 0 {
		b.WriteString("  // Node definitions.\n")
		for _, v := range vertices {
			fmt.Fprintf(b, "  %q [\n", v.uid)
			for _, a := range v.attributes() {
				fmt.Fprintf(b, "    %s=%q\n", a[0], a[1])
			}
			b.WriteString("  ];\n")
		}
	}
	if len(edges) > 0 {
		b.WriteString("  // Edge definitions.\n")
		for _, e := range edges {
			fmt.Fprintf(b, "  %q -> %q;\n", e.from, e.to)
		}
	}
	b.WriteString("}\n")
}

// debugHandler serves the graph below DebugPath (the prefix stripped): /graph, with ?uid=
// (repeatable) for the part reachable from those objects; anything else is not found.
func (g *graph) debugHandler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if req.URL.Path != "/graph" {
			http.Error(w, "", http.StatusNotFound)
			return
		}
		var uids []types.UID
		for _, s := range req.URL.Query()["uid"] {
			uids = append(uids, types.UID(s))
		}
		vertices, edges := g.dot(uids...)
		var b bytes.Buffer
		writeDOT(&b, vertices, edges)
		w.Header().Set("Content-Type", "text/vnd.graphviz")
		w.Header().Set("X-Content-Type-Options", "nosniff")
		_, _ = w.Write(b.Bytes())
	})
}
