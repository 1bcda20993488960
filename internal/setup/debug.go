package setup

import (
	"net/http"

	"k8s.io/apiserver/pkg/server/mux"

	"github.com/kcm/kcm/internal/manager"
)

// DebugHandler serves h at path and below it on the secure port, unlisted and with path
// stripped, behind the port's authentication and authorization, as upstream mounts a
// Debuggable controller's handler at /debug/controllers/<name> (BuildControllers). Only
// controllers that are set up call it, so the page exists only while its controller runs.
// Without a secure port it does nothing.
func (c *Context) DebugHandler(path string, h http.Handler) {
	stripped := http.StripPrefix(path, h)
	manager.AddPages(c.Manager, func(m *mux.PathRecorderMux) {
		m.UnlistedHandle(path, stripped)
		m.UnlistedHandlePrefix(path+"/", stripped)
	})
}
