package setup

import (
	"net/http"

	"k8s.io/apiserver/pkg/server/mux"

	"github.com/kcm/kcm/internal/manager"
)

// DebugHandler serves h at path and below it on the secure port, unlisted and with path
// stripped, behind the port's authentication and authorization, as upstream mounts a
// Debuggable controller's handler at /debug/controllers/<name> (BuildControllers). Only
// controllers that are set up call it, and upstream builds them only once elected: until this
// replica leads, the path is not found, as on upstream's standby replicas. Without a secure
// port it does nothing.
func (c *Context) DebugHandler(path string, h http.Handler) {
	if c.Manager == nil {
		return
	}
	elected := c.Manager.Elected()
	stripped := http.StripPrefix(path, http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		select {
		case <-elected:
			h.ServeHTTP(w, req)
		default:
			http.NotFound(w, req)
		}
	}))
	manager.AddPages(c.Manager, func(m *mux.PathRecorderMux) {
		m.UnlistedHandle(path, stripped)
		m.UnlistedHandlePrefix(path+"/", stripped)
	})
}
