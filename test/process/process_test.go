//go:build linux

package process_test

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// syncBuffer collects a process's combined output; safe to read while the process writes.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// process is a running (or exited) child process of the suite: kcm, or localplane.
type process struct {
	name string
	cmd  *exec.Cmd
	out  *syncBuffer

	done     chan struct{}
	waitErr  error
	exitedAt time.Time
}

var (
	processesMu sync.Mutex
	processes   []*process
	leaseSeq    atomic.Int32
)

// uniqueLeaseName returns a Lease name no other process of this run uses.
func uniqueLeaseName() string {
	return fmt.Sprintf("kcm-process-%d-%d", os.Getpid(), leaseSeq.Add(1))
}

// startKCM starts the kcm binary with args. Unless args say otherwise it reaches the suite's
// API server through --kubeconfig, serves nothing (--secure-port=0), and elects its leader on
// a Lease of its own, so that specs never contend for kube-system/kube-controller-manager.
func startKCM(name string, args ...string) *process {
	GinkgoHelper()
	return startKCMEnv(name, nil, args...)
}

// startKCMEnv is startKCM with the environment env (as os.Environ's), or the suite's when nil.
func startKCMEnv(name string, env []string, args ...string) *process {
	GinkgoHelper()
	var defaults []string
	if !hasFlag(args, "kubeconfig") {
		defaults = append(defaults, "--kubeconfig="+kubeconfig)
	}
	if !hasFlag(args, "secure-port") {
		defaults = append(defaults, "--secure-port=0")
	}
	if !hasFlag(args, "leader-elect-resource-name") {
		defaults = append(defaults, "--leader-elect-resource-name="+uniqueLeaseName())
	}
	p := newProcess(name, syscall.SIGKILL, kcmBinary, append(defaults, args...)...)
	p.cmd.Env = env
	return p.start()
}

func hasFlag(args []string, flag string) bool {
	for _, a := range args {
		if a == "--"+flag || strings.HasPrefix(a, "--"+flag+"=") {
			return true
		}
	}
	return false
}

// startProcess starts binary with args, capturing stdout and stderr together. The process
// gets deathSig should the test binary die first, is stopped when the spec ends, and its
// output is written to the spec's report when the spec fails.
func startProcess(name string, deathSig syscall.Signal, binary string, args ...string) *process {
	GinkgoHelper()
	return newProcess(name, deathSig, binary, args...).start()
}

// newProcess is the process startProcess starts, not started yet.
func newProcess(name string, deathSig syscall.Signal, binary string, args ...string) *process {
	p := &process{name: name, out: &syncBuffer{}, done: make(chan struct{})}
	p.cmd = exec.Command(binary, args...)
	p.cmd.Dir = root
	p.cmd.Stdout, p.cmd.Stderr = p.out, p.out
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: deathSig}
	return p
}

func (p *process) start() *process {
	GinkgoHelper()
	name, args := p.name, p.cmd.Args[1:]
	Expect(p.cmd.Start()).To(Succeed(), "starting %s", name)
	GinkgoWriter.Printf("started %s (pid %d): %s %s\n", name, p.cmd.Process.Pid, filepath.Base(p.cmd.Path), strings.Join(args, " "))
	go func() {
		p.waitErr = p.cmd.Wait()
		p.exitedAt = time.Now()
		close(p.done)
	}()
	processesMu.Lock()
	processes = append(processes, p)
	processesMu.Unlock()
	DeferCleanup(func() {
		p.Stop(10 * time.Second)
		if CurrentSpecReport().Failed() {
			GinkgoWriter.Printf("\n----- output of %s (pid %d, %s) -----\n%s----- end of %s -----\n",
				p.name, p.Pid(), p.State(), p.Output(), p.name)
		}
	})
	return p
}

func (p *process) Pid() int { return p.cmd.Process.Pid }

// Output is everything the process has written so far.
func (p *process) Output() string { return p.out.String() }

// Lines returns the output lines containing substr.
func (p *process) Lines(substr string) []string {
	var lines []string
	for _, l := range strings.Split(p.Output(), "\n") {
		if strings.Contains(l, substr) {
			lines = append(lines, l)
		}
	}
	return lines
}

// Count is the number of output lines containing substr (for use in Eventually).
func (p *process) Count(substr string) func() int {
	return func() int { return len(p.Lines(substr)) }
}

// Signal sends sig unless the process has exited.
func (p *process) Signal(sig syscall.Signal) {
	GinkgoHelper()
	if p.Exited() {
		return
	}
	err := p.cmd.Process.Signal(sig)
	if err != nil && !errors.Is(err, os.ErrProcessDone) {
		Fail(fmt.Sprintf("signalling %s: %v", p.name, err))
	}
}

// Kill sends SIGKILL.
func (p *process) Kill() { p.Signal(syscall.SIGKILL) }

// Exited reports whether the process has exited.
func (p *process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to timeout for the process to exit and returns its exit code (-1 when a
// signal killed it); ok is false when it still runs.
func (p *process) Wait(timeout time.Duration) (code int, ok bool) {
	select {
	case <-p.done:
		return p.cmd.ProcessState.ExitCode(), true
	case <-time.After(timeout):
		return 0, false
	}
}

// State describes how the process stands, for failure messages.
func (p *process) State() string {
	if !p.Exited() {
		return "running"
	}
	return fmt.Sprintf("exited: %v", p.cmd.ProcessState)
}

// Stop ends the process: SIGTERM, then SIGKILL after grace.
func (p *process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	_ = p.cmd.Process.Signal(syscall.SIGTERM)
	if _, ok := p.Wait(grace); !ok {
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// stopAllProcesses kills whatever child process is still running (AfterSuite).
func stopAllProcesses() {
	processesMu.Lock()
	defer processesMu.Unlock()
	for _, p := range processes {
		if !p.Exited() {
			_ = p.cmd.Process.Kill()
			<-p.done
		}
	}
}

// procInfo identifies a process in /proc: a PID alone may be reused.
type procInfo struct {
	PID       int
	PPID      int
	Comm      string
	State     string
	StartTime string
}

func (i procInfo) String() string { return fmt.Sprintf("%s (pid %d)", i.Comm, i.PID) }

// readProc reads /proc/<pid>/stat; ok is false when there is no such process.
func readProc(pid int) (procInfo, bool) {
	data, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procInfo{}, false
	}
	// pid (comm) state ppid ... ; comm may hold spaces and parentheses, so cut at the last ')'.
	s := string(data)
	open, closing := strings.IndexByte(s, '('), strings.LastIndexByte(s, ')')
	if open < 0 || closing < open {
		return procInfo{}, false
	}
	fields := strings.Fields(s[closing+1:])
	// fields[0] is the state (field 3); fields[1] the ppid (4); fields[19] the start time (22).
	if len(fields) < 20 {
		return procInfo{}, false
	}
	ppid, _ := strconv.Atoi(fields[1])
	return procInfo{PID: pid, PPID: ppid, Comm: s[open+1 : closing], State: fields[0], StartTime: fields[19]}, true
}

// children lists the live processes whose parent is pid.
func children(pid int) []procInfo {
	GinkgoHelper()
	entries, err := os.ReadDir("/proc")
	Expect(err).NotTo(HaveOccurred())
	var kids []procInfo
	for _, e := range entries {
		n, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if info, ok := readProc(n); ok && info.PPID == pid && info.State != "Z" {
			kids = append(kids, info)
		}
	}
	return kids
}

// alive reports whether the very process info describes still runs (not a zombie, and not a
// new process that reuses its PID).
func alive(info procInfo) bool {
	now, ok := readProc(info.PID)
	return ok && now.StartTime == info.StartTime && now.State != "Z"
}
