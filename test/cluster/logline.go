//go:build linux

package cluster

import (
	"encoding/json"
	"regexp"
	"strings"
)

// LogLine is one structured line of a log in klog's text format, the default of kcm and
// upstream's components (--logging-format=text):
//
//	I1124 20:01:02.345678   12345 select.go:97] "Controllers set up" logger="controllers" controllers=["a","b"]
//
// klog quotes the message and string values and writes every other value as JSON, so each
// value decodes as JSON: a string, a float64, a bool, a []any or a map[string]any.
type LogLine struct {
	// Severity is I, W, E or F.
	Severity byte
	Message  string
	Fields   map[string]any
}

// klogHeader is the header of a klog line: severity, date, time, thread id, file:line.
var klogHeader = regexp.MustCompile(`^([IWEF])\d{4} \d{2}:\d{2}:\d{2}\.\d{6}\s+\d+ [^\]]*\] `)

// ParseLogLine parses one line of a klog text log. ok is false for any other line: another
// program's output, a printf-style klog message (unquoted), the continuation lines of a
// multi-line value (key=<...>), or a value that does not decode.
func ParseLogLine(line string) (l LogLine, ok bool) {
	m := klogHeader.FindStringSubmatchIndex(line)
	if m == nil || !strings.HasPrefix(line[m[1]:], `"`) {
		return LogLine{}, false
	}
	l.Severity = line[m[2]]
	rest := line[m[1]:]
	dec := json.NewDecoder(strings.NewReader(rest))
	if err := dec.Decode(&l.Message); err != nil {
		return LogLine{}, false
	}
	rest = rest[dec.InputOffset():]
	l.Fields = map[string]any{}
	for rest != "" {
		// " key=value": a key may hold spaces ("worker count"), never '='.
		key, value, found := strings.Cut(strings.TrimPrefix(rest, " "), "=")
		if !found || key == "" {
			return LogLine{}, false
		}
		dec := json.NewDecoder(strings.NewReader(value))
		var v any
		if err := dec.Decode(&v); err != nil {
			return LogLine{}, false
		}
		l.Fields[key] = v
		rest = value[dec.InputOffset():]
	}
	return l, true
}

// Strings returns the value of key as strings: a list's items, or a single value as one;
// nil when the line has no such key.
func (l LogLine) Strings(key string) []string {
	switch v := l.Fields[key].(type) {
	case nil:
		return nil
	case []any:
		s := make([]string, 0, len(v))
		for _, item := range v {
			s = append(s, toString(item))
		}
		return s
	default:
		return []string{toString(v)}
	}
}

func toString(v any) string {
	if s, ok := v.(string); ok {
		return s
	}
	b, _ := json.Marshal(v)
	return string(b)
}
