package debugz

import (
	"strconv"
	"strings"
	"time"

	"github.com/spf13/pflag"
	"k8s.io/apiserver/pkg/server/flagz"

	"github.com/kcm/kcm/internal/options"
)

// FlagReader is /flagz's view of kcm's command line: every flag with its value as upstream's
// typed flag prints it. Upstream's page reads its NamedFlagSets (flagz.NamedFlagSetsReader);
// kcm's flags are one set, and the upstream flags kcm only accepts hold the text given, which
// is printed here as upstream's type prints it (60s as 1m0s, a list in brackets, ...).
func FlagReader(opts *options.Options) flagz.Reader { return flagReader{opts.FlagSet()} }

type flagReader struct{ fs *pflag.FlagSet }

func (r flagReader) GetFlagz() map[string]string {
	flags := map[string]string{
		// pflag answers -h/--help without a flag of kcm's; upstream's cobra command has one.
		"help": "false",
	}
	r.fs.VisitAll(func(f *pflag.Flag) {
		value := canonical(f.Value)
		// As upstream's reader: a flag annotated classified never shows its value.
		if set, ok := f.Annotations["classified"]; ok && len(set) > 0 {
			value = "CLASSIFIED"
		}
		flags[f.Name] = value
	})
	return flags
}

// canonical prints a value as the pflag value of its type prints it. Values that are already
// pflag's (or component-base's) print the same; text that does not parse stays as given.
func canonical(v pflag.Value) string {
	text := v.String()
	switch v.Type() {
	case "bool":
		if b, err := strconv.ParseBool(text); err == nil {
			return strconv.FormatBool(b)
		}
	case "int", "int32":
		if n, err := strconv.ParseInt(text, 0, 64); err == nil {
			return strconv.FormatInt(n, 10)
		}
	case "float32":
		if x, err := strconv.ParseFloat(text, 32); err == nil {
			return strconv.FormatFloat(x, 'g', -1, 32)
		}
	case "float64":
		if x, err := strconv.ParseFloat(text, 64); err == nil {
			return strconv.FormatFloat(x, 'g', -1, 64)
		}
	case "duration":
		if d, err := time.ParseDuration(text); err == nil {
			return d.String()
		}
	case "stringSlice", "stringToString":
		if !strings.HasPrefix(text, "[") {
			return "[" + text + "]"
		}
	}
	return text
}
