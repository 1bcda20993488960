//go:build linux

package cluster

import (
	"reflect"
	"testing"
)

func TestParseLogLine(t *testing.T) {
	tests := []struct {
		name string
		line string
		ok   bool
		want LogLine
	}{
		{name: "strings, a list, a number and a key with a space",
			line: `I1124 20:01:02.345678   12345 controller.go:97] "Starting workers" controller="job-controller" controllers=["a","b"] worker count=5`,
			ok:   true, want: LogLine{Severity: 'I', Message: "Starting workers", Fields: map[string]any{
				"controller": "job-controller", "controllers": []any{"a", "b"}, "worker count": float64(5)}}},
		{name: "an error with quotes and a key=value inside a string",
			line: `E1124 20:01:02.345678       1 run.go:72] "command failed" err="format: Invalid value: \"bogus\" a=b"`,
			ok:   true, want: LogLine{Severity: 'E', Message: "command failed", Fields: map[string]any{
				"err": `format: Invalid value: "bogus" a=b`}}},
		{name: "no fields", line: `W1124 20:01:02.345678 7 x.go:1] "Alone"`,
			ok: true, want: LogLine{Severity: 'W', Message: "Alone", Fields: map[string]any{}}},
		{name: "a struct as JSON", line: `I1124 20:01:02.345678 7 x.go:1] "Obj" o={"a":1,"b":[true]} n=null`,
			ok: true, want: LogLine{Severity: 'I', Message: "Obj", Fields: map[string]any{
				"o": map[string]any{"a": float64(1), "b": []any{true}}, "n": nil}}},
		{name: "printf-style, unquoted", line: `I1124 20:01:02.345678 7 x.go:1] Waiting for caches`},
		{name: "not klog", line: `{"ts":1,"msg":"json"}`},
		{name: "a multi-line value starts", line: `I1124 20:01:02.345678 7 x.go:1] "Multi" text=<`},
		{name: "empty", line: ``},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, ok := ParseLogLine(tt.line)
			if ok != tt.ok || !reflect.DeepEqual(got, tt.want) {
				t.Errorf("ParseLogLine(%q) = %#v, %v; want %#v, %v", tt.line, got, ok, tt.want, tt.ok)
			}
		})
	}
}

func TestLogLineStrings(t *testing.T) {
	l, ok := ParseLogLine(`I1124 20:01:02.345678 7 x.go:1] "M" list=["a","b"] one="c" n=3`)
	if !ok {
		t.Fatal("not parsed")
	}
	for key, want := range map[string][]string{"list": {"a", "b"}, "one": {"c"}, "n": {"3"}, "none": nil} {
		if got := l.Strings(key); !reflect.DeepEqual(got, want) {
			t.Errorf("Strings(%q) = %q, want %q", key, got, want)
		}
	}
}
