package garbagecollector

import (
	"net/http"
	"net/http/httptest"
	"regexp"
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestGraphDOT is the whole text of a small graph, as upstream's dump.go writes it: nodes
// with owners or dependents (not "lone"), sorted by UID, each with upstream's attributes,
// then one edge per owner reference, from the dependent to its owner.
func TestGraphDOT(t *testing.T) {
	g := newGraph()
	for _, c := range []change{
		add(rsGVK, obj("ns", "owner")),
		add(cmGVK, obj("ns", "dep", ref(rsGVK, "owner", true))),
		add(cmGVK, obj("ns", "lone")),
	} {
		g.apply(c)
	}
	code, ctype, body := getGraph(t, g, "/graph")
	if code != http.StatusOK || ctype != "text/vnd.graphviz" {
		t.Fatalf("GET /graph: %d %s", code, ctype)
	}
	want := `strict digraph full {
  // Node definitions.
  "dep" [
    label="uid=dep\nnamespace=ns\nConfigMap.v1/dep\n"
    group=""
    version="v1"
    kind="ConfigMap"
    namespace="ns"
    name="dep"
    uid="dep"
    missing="false"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  "owner" [
    label="uid=owner\nnamespace=ns\nReplicaSet.v1.apps/owner\n"
    group="apps"
    version="v1"
    kind="ReplicaSet"
    namespace="ns"
    name="owner"
    uid="owner"
    missing="false"
    beingDeleted="false"
    deletingDependents="false"
    virtual="false"
  ];
  // Edge definitions.
  "dep" -> "owner";
}
`
	if diff := cmp.Diff(want, body); diff != "" {
		t.Errorf("DOT (-want +got):\n%s", diff)
	}
}

// TestGraphDOTCases: which nodes (by their label) and edges the handler answers, for the
// whole graph and for ?uid= subgraphs, with a virtual owner (referenced, never observed), a
// missing one (deleted while a dependent still names it), and owners being deleted.
func TestGraphDOTCases(t *testing.T) {
	// Two components: owner ← dep → ghost (virtual), and the cluster-scoped node1 ← onNode.
	// gone was deleted while stale still names it; dying is deleted in the foreground,
	// leaving is deleted with its dependent "held" still there.
	changes := []change{
		add(rsGVK, obj("ns", "owner")),
		add(cmGVK, obj("ns", "dep", ref(rsGVK, "owner", true), ref(rsGVK, "ghost", false))),
		add(nodeGVK, obj("", "node1")),
		add(cmGVK, obj("ns", "onNode", ref(nodeGVK, "node1", false))),
		add(rsGVK, obj("ns", "gone")),
		add(cmGVK, obj("ns", "stale", ref(rsGVK, "gone", false))),
		del(rsGVK, obj("ns", "gone")),
		add(rsGVK, obj("ns", "dying")),
		add(cmGVK, obj("ns", "child", ref(rsGVK, "dying", true))),
		update(rsGVK, obj("ns", "dying"), deleting(obj("ns", "dying"), metav1.FinalizerDeleteDependents)),
		add(rsGVK, obj("ns", "leaving")),
		add(cmGVK, obj("ns", "held", ref(rsGVK, "leaving", false))),
		update(rsGVK, obj("ns", "leaving"), deleting(obj("ns", "leaving"), metav1.FinalizerOrphanDependents)),
		add(cmGVK, obj("ns", "lone")),
	}
	labels := map[string]string{
		"owner":   `uid=owner\nnamespace=ns\nReplicaSet.v1.apps/owner\n`,
		"dep":     `uid=dep\nnamespace=ns\nConfigMap.v1/dep\n`,
		"ghost":   `uid=ghost\nnamespace=ns\nReplicaSet.v1.apps/ghost\nvirtual\n`,
		"node1":   `uid=node1\nnamespace=\nNode.v1/node1\n`,
		"onNode":  `uid=onNode\nnamespace=ns\nConfigMap.v1/onNode\n`,
		"gone":    `uid=gone\nnamespace=\nReplicaSet.v1.apps/gone\nmissingFromGraph\n`,
		"stale":   `uid=stale\nnamespace=ns\nConfigMap.v1/stale\n`,
		"dying":   `uid=dying\nnamespace=ns\nReplicaSet.v1.apps/dying\nbeingDeleted,deletingDependents\n`,
		"child":   `uid=child\nnamespace=ns\nConfigMap.v1/child\n`,
		"leaving": `uid=leaving\nnamespace=ns\nReplicaSet.v1.apps/leaving\nbeingDeleted\n`,
		"held":    `uid=held\nnamespace=ns\nConfigMap.v1/held\n`,
	}
	tests := []struct {
		name      string
		path      string
		wantNodes []string
		wantEdges []string
	}{{
		name: "whole graph",
		path: "/graph",
		wantNodes: []string{"child", "dep", "dying", "ghost", "gone", "held", "leaving", "node1", "onNode",
			"owner", "stale"},
		wantEdges: []string{"child -> dying", "dep -> ghost", "dep -> owner", "held -> leaving",
			"onNode -> node1", "stale -> gone"},
	}, {
		name:      "subgraph of an owner: its dependents and their other owners",
		path:      "/graph?uid=owner",
		wantNodes: []string{"dep", "ghost", "owner"},
		wantEdges: []string{"dep -> ghost", "dep -> owner"},
	}, {
		name:      "subgraph of a dependent",
		path:      "/graph?uid=onNode",
		wantNodes: []string{"node1", "onNode"},
		wantEdges: []string{"onNode -> node1"},
	}, {
		name:      "repeated uid: the union",
		path:      "/graph?uid=ghost&uid=child",
		wantNodes: []string{"child", "dep", "dying", "ghost", "owner"},
		wantEdges: []string{"child -> dying", "dep -> ghost", "dep -> owner"},
	}, {
		name:      "a dependent of a missing owner",
		path:      "/graph?uid=stale",
		wantNodes: []string{"gone", "stale"},
		wantEdges: []string{"stale -> gone"},
	}, {
		name: "a node without owners nor dependents is left out, even asked for",
		path: "/graph?uid=lone&uid=unknown",
	}}
	g := newGraph()
	for _, c := range changes {
		g.apply(c)
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, body := getGraph(t, g, tt.path)
			if code != http.StatusOK {
				t.Fatalf("GET %s: %d", tt.path, code)
			}
			nodes, edges := parseDOT(t, body)
			want := map[string]string{}
			for _, uid := range tt.wantNodes {
				want[uid] = labels[uid]
			}
			if diff := cmp.Diff(want, nodes); diff != "" {
				t.Errorf("nodes' labels (-want +got):\n%s\n%s", diff, body)
			}
			if diff := cmp.Diff(tt.wantEdges, edges); diff != "" {
				t.Errorf("edges (-want +got):\n%s", diff)
			}
		})
	}
}

// TestGraphHandlerPaths: only /graph is served below the controller's path, as upstream.
func TestGraphHandlerPaths(t *testing.T) {
	g := newGraph()
	for path, want := range map[string]int{"/graph": 200, "": 404, "/": 404, "/graph/x": 404, "/other": 404} {
		if code, _, _ := getGraph(t, g, path); code != want {
			t.Errorf("GET %q: %d, want %d", path, code, want)
		}
	}
	if _, _, body := getGraph(t, g, "/graph"); body != "strict digraph full {\n}\n" {
		t.Errorf("empty graph: %q", body)
	}
}

func getGraph(t *testing.T, g *graph, path string) (int, string, string) {
	t.Helper()
	req := httptest.NewRequest(http.MethodGet, "http://kcm"+path, nil)
	rec := httptest.NewRecorder()
	g.debugHandler().ServeHTTP(rec, req)
	return rec.Code, rec.Header().Get("Content-Type"), rec.Body.String()
}

var (
	dotNode  = regexp.MustCompile(`(?m)^  "([^"]*)" \[\n    label=("(?:[^"\\]|\\.)*")\n`)
	dotEdges = regexp.MustCompile(`(?m)^  "([^"]*)" -> "([^"]*)";$`)
)

// parseDOT returns each node's label (as written, escapes kept) and the edges "from -> to".
func parseDOT(t *testing.T, body string) (map[string]string, []string) {
	t.Helper()
	nodes := map[string]string{}
	for _, m := range dotNode.FindAllStringSubmatch(body, -1) {
		label, err := strconv.Unquote(m[2])
		if err != nil {
			t.Fatalf("label %s: %v", m[2], err)
		}
		nodes[m[1]] = strconv.Quote(label)[1 : len(strconv.Quote(label))-1]
	}
	var edges []string
	for _, m := range dotEdges.FindAllStringSubmatch(body, -1) {
		edges = append(edges, m[1]+" -> "+m[2])
	}
	return nodes, edges
}
