package memlimit

import (
	"math"
	"os"
	"path/filepath"
	"runtime/debug"
	"testing"
)

func TestLimitAndApply(t *testing.T) {
	v2 := t.TempDir()
	if err := os.WriteFile(filepath.Join(v2, "memory.max"), []byte("1000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	unlimited := t.TempDir()
	if err := os.WriteFile(filepath.Join(unlimited, "memory.max"), []byte("max\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	v1 := t.TempDir()
	if err := os.MkdirAll(filepath.Join(v1, "memory"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(v1, "memory", "memory.limit_in_bytes"), []byte("2000000000\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	for _, tc := range []struct {
		name string
		env  map[string]string
		root string
		want int64
	}{
		{"cgroup v2", nil, v2, 900000000},
		{"cgroup v1", nil, v1, 1800000000},
		{"v2 max means none", nil, unlimited, 0},
		{"no cgroup files", nil, t.TempDir(), 0},
		{"downward API wins", map[string]string{EnvVar: "500000000"}, v2, 450000000},
		{"GOMEMLIMIT set explicitly", map[string]string{"GOMEMLIMIT": "1GiB"}, v2, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			debug.SetMemoryLimit(math.MaxInt64)
			got := Apply(func(k string) string { return tc.env[k] }, tc.root)
			if got != tc.want {
				t.Fatalf("Apply = %d, want %d", got, tc.want)
			}
			applied := debug.SetMemoryLimit(-1)
			if tc.want != 0 && applied != tc.want {
				t.Fatalf("runtime soft limit = %d, want %d", applied, tc.want)
			}
			if tc.want == 0 && applied != math.MaxInt64 {
				t.Fatalf("runtime soft limit changed to %d", applied)
			}
		})
	}
}

func TestApplyGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))
	debug.SetGCPercent(100)
	if got := ApplyGCPercent(func(string) string { return "" }); got != GCPercent {
		t.Fatalf("without GOGC: set %d, want %d", got, GCPercent)
	}
	if prev := debug.SetGCPercent(100); prev != GCPercent {
		t.Fatalf("without GOGC the runtime's GC percent is %d, want %d", prev, GCPercent)
	}
	env := map[string]string{"GOGC": "200"}
	if got := ApplyGCPercent(func(k string) string { return env[k] }); got != 0 {
		t.Fatalf("with GOGC set: set %d, want 0 (the operator's value wins)", got)
	}
	if prev := debug.SetGCPercent(100); prev != 100 {
		t.Fatalf("with GOGC set the GC percent changed to %d", prev)
	}
}
