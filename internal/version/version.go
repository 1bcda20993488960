// Package version reports the version kcm was built as.
package version

// gitVersion is set at build time: -ldflags "-X github.com/kcm/kcm/internal/version.gitVersion=v0.1.0".
var gitVersion = "v0.0.0-dev"

// Get returns kcm's version.
func Get() string { return gitVersion }
