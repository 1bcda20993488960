package faultproxy

import (
	"net/http"
	"strings"
)

// Verbs as Stats.ByVerb counts them: kube-apiserver's request verbs, with GET split into
// get, list and watch by the request's shape.
const (
	VerbGet    = "GET"
	VerbList   = "LIST"
	VerbWatch  = "WATCH"
	VerbPost   = "POST"
	VerbPut    = "PUT"
	VerbPatch  = "PATCH"
	VerbDelete = "DELETE"
)

// isWatch reports whether r is a watch: ?watch=true (or 1), or the legacy /watch/ path.
func isWatch(r *http.Request) bool {
	switch r.URL.Query().Get("watch") {
	case "true", "1":
		return true
	}
	return strings.Contains(r.URL.Path, "/watch/")
}

// verbOf names r's verb. A GET is a LIST when its path names a collection: one segment after
// the group version (/api/v1/pods), or three starting with namespaces
// (/api/v1/namespaces/ns/pods). Other methods (HEAD, OPTIONS) are counted under their own name.
func verbOf(r *http.Request) string {
	if r.Method != http.MethodGet {
		return r.Method
	}
	if isWatch(r) {
		return VerbWatch
	}
	if isCollection(r.URL.Path) {
		return VerbList
	}
	return VerbGet
}

// isCollection reports whether path names a resource collection of the API.
func isCollection(path string) bool {
	segs := strings.Split(strings.Trim(path, "/"), "/")
	switch {
	case len(segs) >= 2 && segs[0] == "api":
		segs = segs[2:] // api, v1
	case len(segs) >= 3 && segs[0] == "apis":
		segs = segs[3:] // apis, group, version
	default:
		return false // /healthz, /version, discovery
	}
	return len(segs) == 1 || (len(segs) == 3 && segs[0] == "namespaces")
}
