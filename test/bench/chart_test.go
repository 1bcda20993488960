//go:build linux

package main

import (
	"encoding/xml"
	"errors"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteChart(t *testing.T) {
	// A phase of n points a second apart: progress from first by step (not below 0), the
	// CPU time by cores a second, the RSS by 1 MiB a second from rss MiB.
	phase := func(name, progress string, n, first, step int, cores float64, rss int64) *PhaseResult {
		p := &PhaseResult{Name: name, Progress: progress, WallSeconds: float64(n - 1)}
		for i := range n {
			p.Series = append(p.Series, Point{Seconds: float64(i), Progress: max(0, first+step*i), CPUSeconds: cores * float64(i), RSSBytes: (rss + int64(i)) << 20})
		}
		return p
	}
	manager := func(name string, cores float64) *ManagerResult {
		return &ManagerResult{
			Name: name,
			Phases: []*PhaseResult{
				phase("create", readyPods, 10, 0, 10, cores, 50),
				phase("rolling update", readyPods, 12, 100, 0, cores, 80),
				phase("delete", "pods left", 8, 100, -15, cores, 90),
			},
			Quiet: phase(quietPhase, readyPods, 5, 100, 0, cores/10, 70),
		}
	}
	path := filepath.Join(t.TempDir(), "result.svg")
	if err := writeChart(path, []*ManagerResult{manager("upstream", 0.8), manager("kcm", 0.4)}); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	// Every text the SVG draws, once it parsed as XML.
	var texts []string
	d := xml.NewDecoder(f)
	for {
		tok, err := d.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("%s is not XML: %v", path, err)
		}
		if c, ok := tok.(xml.CharData); ok {
			if s := strings.TrimSpace(string(c)); s != "" {
				texts = append(texts, s)
			}
		}
	}
	count := func(s string) int {
		n := 0
		for _, text := range texts {
			if text == s {
				n++
			}
		}
		return n
	}
	// Each plot's legend names both managers: 4 phases × 3 plots.
	for _, name := range []string{"upstream", "kcm"} {
		if n := count(name); n != 12 {
			t.Errorf("legend %q drawn %d times, want 12 (a legend on each of 4 phases × 3 plots)", name, n)
		}
	}
	for _, title := range []string{
		"create: ready pods", "create: manager CPU", "create: manager RSS",
		"quiet: ready pods", "quiet: manager CPU", "quiet: manager RSS",
		"rolling update: ready pods", "rolling update: manager CPU", "rolling update: manager RSS",
		"delete: pods left", "delete: manager CPU", "delete: manager RSS",
	} {
		if count(title) != 1 {
			t.Errorf("no plot titled %q among %q", title, texts)
		}
	}
}

func TestWriteChartDrawsEverySeries(t *testing.T) {
	// The same chart without kcm's series: a dropped series drops its legend entries.
	up := &ManagerResult{Name: "upstream", Phases: []*PhaseResult{{Name: "create", Progress: readyPods, Series: []Point{{Seconds: 0}, {Seconds: 2, Progress: 4, CPUSeconds: 1, RSSBytes: 1 << 20}}}}}
	k := &ManagerResult{Name: "kcm", Phases: []*PhaseResult{{Name: "create", Progress: readyPods}}}
	path := filepath.Join(t.TempDir(), "result.svg")
	if err := writeChart(path, []*ManagerResult{up, k}); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if n := strings.Count(string(data), ">upstream<"); n != 3 {
		t.Errorf("upstream named %d times, want 3", n)
	}
	if strings.Contains(string(data), ">kcm<") {
		t.Errorf("kcm, without samples, named in a legend")
	}
}

func TestCPURate(t *testing.T) {
	// 0.5 cores for 2 s, then 2 cores, sampled every 0.25 s (CPU time in hundredths).
	var series []Point
	cpu := 0.0
	for i := range 17 {
		s := float64(i) / 4
		if i > 0 {
			if s <= 2 {
				cpu += 0.125
			} else {
				cpu += 0.5
			}
		}
		series = append(series, Point{Seconds: s, CPUSeconds: cpu})
	}
	got := cpuRate(series, 1)
	if len(got) != 16 {
		t.Fatalf("%d rates for 17 points, want 16", len(got))
	}
	for _, tc := range []struct {
		at, want float64
	}{
		{0.25, 0.5}, // the first point: over what came before
		{2, 0.5},    // 1 s of 0.5 cores
		{2.5, 1.25}, // half and half
		{4, 2},
	} {
		for _, xy := range got {
			if xy.X == tc.at && math.Abs(xy.Y-tc.want) > 1e-9 {
				t.Errorf("at %g s: %g cores, want %g", tc.at, xy.Y, tc.want)
			}
		}
	}
}

func TestChartPath(t *testing.T) {
	for in, want := range map[string]string{
		"bin/bench/result.json": "bin/bench/result.svg",
		"/tmp/x/run":            "/tmp/x/run.svg",
	} {
		if got := chartPath(in); got != want {
			t.Errorf("chartPath(%q) = %q, want %q", in, got, want)
		}
	}
}
