package track

import (
	"encoding/json"
	"net/http"
	"strings"
)

// DebugPath is where the leader serves the views, below which each is at
// <controller>/objects/<namespace>/<name> (or <controller>/objects/<name>). A controller's
// own debug handler at DebugPath/<controller> (the garbage collector's graph) keeps its
// paths: the secure port's mux prefers the prefix with the most slashes.
const DebugPath = "/debug/controllers"

// Handler serves the views at the path below DebugPath: /<controller>/objects/<key>. A
// controller whose queue is not tracked, or a key it never saw (or dropped, deleted), is a
// 404 with a one-line message.
func Handler() http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			http.Error(w, "only GET", http.StatusMethodNotAllowed)
			return
		}
		controller, key, ok := parsePath(r.URL.Path)
		if !ok {
			http.Error(w, "not found: want "+DebugPath+"/<controller>/objects/<namespace>/<name> or .../objects/<name>", http.StatusNotFound)
			return
		}
		c := lookup(controller)
		if c == nil {
			http.Error(w, "no controller "+controller+" with per-object views in this process", http.StatusNotFound)
			return
		}
		v, ok := c.View(key)
		if !ok {
			http.Error(w, controller+" has no view of "+key+": never seen, or deleted", http.StatusNotFound)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(v)
	})
}

// parsePath reads /<controller>/objects/<namespace>/<name> or /<controller>/objects/<name>.
func parsePath(p string) (controller, key string, ok bool) {
	parts := strings.Split(strings.TrimPrefix(p, "/"), "/")
	if len(parts) < 3 || len(parts) > 4 || parts[1] != "objects" {
		return "", "", false
	}
	for _, s := range parts {
		if s == "" {
			return "", "", false
		}
	}
	return parts[0], strings.Join(parts[2:], "/"), true
}

// ViewOf is the named controller's view of key, as the handler serves it.
func ViewOf(controller, key string) (*View, bool) {
	c := lookup(controller)
	if c == nil {
		return nil, false
	}
	return c.View(key)
}
