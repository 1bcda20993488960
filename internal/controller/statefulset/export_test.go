package statefulset

// DefaultTemplate lets the suite compare kcm's defaults with the API server's.
var DefaultTemplate = defaultTemplate
