//go:build e2e && linux

package e2e_test

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	. "github.com/onsi/ginkgo/v2"
	. "github.com/onsi/gomega"
)

// process is a component of the local cluster the suite runs as a child process: kube-scheduler,
// kwok, kcm. Each runs in its own process group, writes its log to a file under logDir, and
// is stopped (SIGTERM to the group, then SIGKILL) by the DeferCleanup of the node that started
// it: the suite for the cluster's components, a spec for what a spec starts.
type process struct {
	name    string
	logPath string
	cmd     *exec.Cmd
	logFile *os.File

	done    chan struct{}
	waitErr error
}

var (
	processesMu sync.Mutex
	processes   []*process
)

// startProcess starts binary with args; stdout and stderr go to <logDir>/<name>.log.
func startProcess(name, binary string, args ...string) *process {
	GinkgoHelper()
	p := &process{name: name, logPath: filepath.Join(logDir, name+".log"), done: make(chan struct{})}
	f, err := os.OpenFile(p.logPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	Expect(err).NotTo(HaveOccurred())
	p.logFile = f
	fmt.Fprintf(f, "# %s %s\n", binary, strings.Join(args, " "))
	p.cmd = exec.Command(binary, args...)
	p.cmd.Dir = root
	p.cmd.Stdout, p.cmd.Stderr = f, f
	// Its own process group, so that a terminal's Ctrl-C reaches it only through the suite,
	// in order; and SIGKILL should the test binary die without cleaning up.
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	Expect(p.cmd.Start()).To(Succeed(), "starting %s", name)
	GinkgoWriter.Printf("started %s (pid %d), log %s\n", name, p.cmd.Process.Pid, p.logPath)
	go func() {
		p.waitErr = p.cmd.Wait()
		_ = f.Close()
		close(p.done)
	}()
	processesMu.Lock()
	processes = append(processes, p)
	processesMu.Unlock()
	DeferCleanup(func() { p.Stop(10 * time.Second) })
	return p
}

// Exited reports whether the process has exited.
func (p *process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// State describes the process for failure messages.
func (p *process) State() string {
	if !p.Exited() {
		return fmt.Sprintf("%s (pid %d) running, log %s", p.name, p.cmd.Process.Pid, p.logPath)
	}
	return fmt.Sprintf("%s (pid %d) exited (%v), log %s", p.name, p.cmd.Process.Pid, p.waitErr, p.logPath)
}

// signalGroup sends sig to the process's group.
func (p *process) signalGroup(sig syscall.Signal) {
	if err := syscall.Kill(-p.cmd.Process.Pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		GinkgoWriter.Printf("signalling %s: %v\n", p.name, err)
	}
}

// Kill ends the process at once, as a machine dying would, and waits for it.
func (p *process) Kill() {
	p.signalGroup(syscall.SIGKILL)
	<-p.done
}

// Stop ends the process: SIGTERM, then SIGKILL after grace. Safe to call more than once.
func (p *process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	p.signalGroup(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		GinkgoWriter.Printf("%s did not stop within %s of SIGTERM: killing it\n", p.name, grace)
		p.Kill()
	}
}

// expectRunning fails when one of the given processes has exited.
func expectRunning(ps ...*process) {
	GinkgoHelper()
	for _, p := range ps {
		Expect(p.Exited()).To(BeFalse(), "%s", p.State())
	}
}
