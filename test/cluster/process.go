//go:build linux

package cluster

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// Process is a component of the cluster run as a child process. It runs in its own process
// group, so that a terminal's Ctrl-C reaches it only through its parent, in order, and is
// killed should the parent die without cleaning up.
type Process struct {
	Name    string
	LogPath string
	cmd     *exec.Cmd
	done    chan struct{}
	waitErr error
}

// StartProcess starts binary with args; stdout and stderr go to <Dir>/<name>.log. Stop stops it.
func (c *Cluster) StartProcess(name, binary string, args ...string) (*Process, error) {
	f, err := c.logFile(name)
	if err != nil {
		return nil, err
	}
	p := &Process{Name: name, LogPath: filepath.Join(c.Dir, name+".log"), done: make(chan struct{})}
	fmt.Fprintf(f, "# %s %s\n", binary, strings.Join(args, " "))
	p.cmd = exec.Command(binary, args...)
	p.cmd.Stdout, p.cmd.Stderr = f, f
	p.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := p.cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting %s: %w", name, err)
	}
	go func() {
		p.waitErr = p.cmd.Wait()
		close(p.done)
	}()
	c.processes = append(c.processes, p)
	return p, nil
}

// Pid is the process's ID.
func (p *Process) Pid() int { return p.cmd.Process.Pid }

// Exited reports whether the process has exited.
func (p *Process) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// State describes the process for error messages.
func (p *Process) State() string {
	if !p.Exited() {
		return fmt.Sprintf("%s (pid %d) running, log %s", p.Name, p.Pid(), p.LogPath)
	}
	return fmt.Sprintf("%s (pid %d) exited (%v), log %s", p.Name, p.Pid(), p.waitErr, p.LogPath)
}

// Kill ends the process group at once, as a machine dying would, and waits for it.
func (p *Process) Kill() {
	p.signalGroup(syscall.SIGKILL)
	<-p.done
}

// Stop ends the process: SIGTERM to its group, then SIGKILL after grace. Safe to call twice.
func (p *Process) Stop(grace time.Duration) {
	if p.Exited() {
		return
	}
	p.signalGroup(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(grace):
		p.Kill()
	}
}

func (p *Process) signalGroup(sig syscall.Signal) {
	_ = syscall.Kill(-p.Pid(), sig) // ESRCH: already gone
}

// Usage is what the kernel accounts for a running process.
type Usage struct {
	// CPU is user plus system time.
	CPU time.Duration
	// PeakRSS is the resident set's high-water mark (VmHWM), in bytes.
	PeakRSS int64
	// RSS is the resident set now (VmRSS), in bytes.
	RSS int64
}

// clockTicks is USER_HZ, the unit of /proc/<pid>/stat's and /proc/stat's times; 100 on every Linux port Go
// supports.
const clockTicks = 100

// Usage reads the process's CPU time, peak and current RSS from /proc.
func (p *Process) Usage() (Usage, error) {
	cpu, err := cpuTime(p.Pid())
	if err != nil {
		return Usage{}, err
	}
	u := Usage{CPU: cpu}
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", p.Pid()))
	if err != nil {
		return Usage{}, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		for field, into := range map[string]*int64{"VmHWM:": &u.PeakRSS, "VmRSS:": &u.RSS} {
			if rest, ok := strings.CutPrefix(line, field); ok {
				kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
				if err != nil {
					return Usage{}, fmt.Errorf("parsing %s %q: %w", field, rest, err)
				}
				*into = kb * 1024
			}
		}
	}
	return u, nil
}

// cpuTime is a process's user plus system time so far, from /proc/<pid>/stat: every
// thread's, not its children's.
func cpuTime(pid int) (time.Duration, error) {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	cpu, err := parseProcessStat(string(stat))
	if err != nil {
		return 0, fmt.Errorf("/proc/%d/stat: %w", pid, err)
	}
	return cpu, nil
}

// parseProcessStat reads utime plus stime from the text of /proc/<pid>/stat.
func parseProcessStat(s string) (time.Duration, error) {
	// The command name, field 2, is in parentheses and may hold spaces: fields after it
	// start at the last ')'. utime and stime are fields 14 and 15.
	fields := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
	if len(fields) < 13 {
		return 0, fmt.Errorf("unexpected %q", s)
	}
	utime, err1 := strconv.ParseInt(fields[11], 10, 64)
	stime, err2 := strconv.ParseInt(fields[12], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return 0, err
	}
	return ticks(utime + stime), nil
}

// ticks converts a count of USER_HZ ticks to a duration.
func ticks(n int64) time.Duration { return time.Duration(n) * time.Second / clockTicks }
