//go:build linux

package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// cpuChunk is the length of one CPU profile request. A phase's length is not known when it
// starts and a profile request cancelled early returns nothing, so a phase is profiled in
// back-to-back chunks that are merged afterwards; the last chunk runs past convergence into
// the settling, whose CPU the phase counts too.
const cpuChunk = 10 * time.Second

// profiler takes a manager's profiles from /debug/pprof on its secure port (-profile): per
// phase <dir>/<phase>.cpu.pprof (the phase's CPU, chunks merged) and <dir>/<phase>.heap.pprof
// (at convergence, without forcing a GC), and <dir>/<phase>.top.txt, the top 15 functions of
// each. A nil profiler takes nothing. A profile that fails is reported and left out: it
// does not fail the run.
type profiler struct {
	base string
	dir  string
}

var profileClient = &http.Client{
	Timeout:   cpuChunk + time.Minute,
	Transport: insecure.Transport,
}

// cpuProfile is one phase's CPU profiling in progress.
type cpuProfile struct {
	p      *profiler
	phase  string
	stop   chan struct{}
	done   chan struct{}
	chunks []string
}

// startCPU starts profiling the phase's CPU until finish.
func (p *profiler) startCPU(ctx context.Context, phase string) *cpuProfile {
	if p == nil {
		return nil
	}
	c := &cpuProfile{p: p, phase: phase, stop: make(chan struct{}), done: make(chan struct{})}
	go func() {
		defer close(c.done)
		for i := 0; ; i++ {
			path := filepath.Join(p.dir, fmt.Sprintf("%s.cpu.%d.pprof", fileName(phase), i))
			if err := p.get(ctx, fmt.Sprintf("/debug/pprof/profile?seconds=%d", int(cpuChunk.Seconds())), path); err != nil {
				fmt.Printf("bench: CPU profile of %s: %v\n", phase, err)
				return
			}
			c.chunks = append(c.chunks, path)
			select {
			case <-c.stop:
				return
			default:
			}
		}
	}()
	return c
}

// finish waits for the chunk in flight, merges the chunks and writes the top functions.
func (c *cpuProfile) finish() {
	if c == nil {
		return
	}
	close(c.stop)
	<-c.done
	if len(c.chunks) == 0 {
		return
	}
	out := filepath.Join(c.p.dir, fileName(c.phase)+".cpu.pprof")
	args := append([]string{"tool", "pprof", "-proto"}, c.chunks...)
	data, err := goCommand(args...).Output()
	if err != nil {
		fmt.Printf("bench: merging the CPU profiles of %s: %v\n", c.phase, commandError(err))
		return
	}
	if err := os.WriteFile(out, data, 0o644); err != nil {
		fmt.Printf("bench: %v\n", err)
		return
	}
	for _, chunk := range c.chunks {
		_ = os.Remove(chunk)
	}
	c.p.top(c.phase, "CPU", out)
}

// heap saves the heap profile now: in-use memory as of the last GC, and every allocation
// since the start.
func (p *profiler) heap(ctx context.Context, phase string) {
	if p == nil {
		return
	}
	out := filepath.Join(p.dir, fileName(phase)+".heap.pprof")
	if err := p.get(ctx, "/debug/pprof/heap", out); err != nil {
		fmt.Printf("bench: heap profile of %s: %v\n", phase, err)
		return
	}
	p.top(phase, "heap in use", out, "-sample_index=inuse_space")
	p.top(phase, "heap allocated since start", out, "-sample_index=alloc_space")
}

// top appends `go tool pprof -top` of a profile's 15 heaviest functions to <phase>.top.txt.
func (p *profiler) top(phase, what, profile string, flags ...string) {
	args := append([]string{"tool", "pprof", "-top", "-nodecount=15"}, flags...)
	out, err := goCommand(append(args, profile)...).Output()
	if err != nil {
		out = []byte(commandError(err).Error() + "\n")
	}
	f, err := os.OpenFile(filepath.Join(p.dir, fileName(phase)+".top.txt"), os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o644)
	if err != nil {
		fmt.Printf("bench: %v\n", err)
		return
	}
	defer f.Close()
	fmt.Fprintf(f, "== %s: %s (%s)\n%s\n", phase, what, filepath.Base(profile), out)
}

// get saves the answer to a GET of path on the manager's secure port.
func (p *profiler) get(ctx context.Context, path, out string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.base+path, nil)
	if err != nil {
		return err
	}
	resp, err := profileClient.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		body, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Errorf("%s: %s", resp.Status, body)
	}
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	return os.WriteFile(out, data, 0o644)
}

// goCommand runs the go command that built the benchmark (`go run` puts it first on PATH).
func goCommand(args ...string) *exec.Cmd {
	return exec.Command("go", args...)
}

func commandError(err error) error {
	if ee, ok := err.(*exec.ExitError); ok {
		return fmt.Errorf("%w: %s", err, strings.TrimSpace(string(ee.Stderr)))
	}
	return err
}

// fileName is a phase's name in file names: "rolling update" -> "rolling-update".
func fileName(phase string) string { return strings.ReplaceAll(phase, " ", "-") }
