//go:build linux

package cluster

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"
)

// MachineCPU is the whole machine's busy CPU time since boot, summed over its CPUs: user,
// nice, system, irq, softirq and steal from /proc/stat's "cpu" line, not idle or iowait.
// Guest time is within user and nice already.
func MachineCPU() (time.Duration, error) {
	stat, err := os.ReadFile("/proc/stat")
	if err != nil {
		return 0, err
	}
	return parseMachineStat(string(stat))
}

// parseMachineStat reads the busy time from the text of /proc/stat.
func parseMachineStat(s string) (time.Duration, error) {
	for _, line := range strings.Split(s, "\n") {
		// cpu user nice system idle iowait irq softirq steal [guest guest_nice]
		fields := strings.Fields(line)
		if len(fields) == 0 || fields[0] != "cpu" {
			continue
		}
		if len(fields) < 9 {
			return 0, fmt.Errorf("unexpected /proc/stat line %q", line)
		}
		var busy int64
		for _, i := range []int{1, 2, 3, 6, 7, 8} {
			n, err := strconv.ParseInt(fields[i], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/stat line %q: %w", line, err)
			}
			busy += n
		}
		return ticks(busy), nil
	}
	return 0, errors.New("no cpu line in /proc/stat")
}

// ControlPlaneCPU is the CPU time so far (user plus system) of the cluster's control plane:
// etcd and kube-apiserver, and kube-scheduler and kwok when the cluster runs them; not the
// processes StartProcess started for the caller, such as a controller manager under test.
// Not safe for concurrent use.
func (c *Cluster) ControlPlaneCPU() (time.Duration, error) {
	if c.controlPlanePIDs == nil {
		pids, err := c.findControlPlane()
		if err != nil {
			return 0, err
		}
		c.controlPlanePIDs = pids
	}
	pids := slices.Clone(c.controlPlanePIDs)
	for _, p := range c.components {
		if p.Exited() {
			return 0, fmt.Errorf("%s", p.State())
		}
		pids = append(pids, p.Pid())
	}
	var total time.Duration
	for _, pid := range pids {
		cpu, err := cpuTime(pid)
		if err != nil {
			return 0, err
		}
		total += cpu
	}
	return total, nil
}

// findControlPlane finds the PIDs of the etcd and kube-apiserver envtest started for this
// cluster, which envtest does not expose: the processes of those binaries whose command
// line names this cluster's etcd data directory or API server certificate directory,
// temporary directories of their own, so that other clusters' are not taken.
func (c *Cluster) findControlPlane() ([]int, error) {
	if c.env == nil {
		return nil, errors.New("etcd and kube-apiserver are not running")
	}
	etcd, apiserver := c.env.ControlPlane.Etcd, c.env.ControlPlane.GetAPIServer()
	if etcd == nil || etcd.DataDir == "" || apiserver.CertDir == "" {
		return nil, errors.New("etcd and kube-apiserver are not running")
	}
	cmdlines, err := processCmdlines()
	if err != nil {
		return nil, err
	}
	var pids []int
	for _, want := range []struct{ name, binary, arg string }{
		{"etcd", etcd.Path, "--data-dir=" + etcd.DataDir},
		{"kube-apiserver", apiserver.Path, "--cert-dir=" + apiserver.CertDir},
	} {
		found := matchCmdline(cmdlines, want.binary, want.arg)
		if len(found) != 1 {
			return nil, fmt.Errorf("%d processes of %s with %s, want 1: %v", len(found), want.binary, want.arg, found)
		}
		pids = append(pids, found[0])
	}
	return pids, nil
}

// processCmdlines is every process's argv, by PID, from /proc/<pid>/cmdline. Processes
// that end meanwhile, or that may not be read, are left out; kernel threads have no argv.
func processCmdlines() (map[int][]string, error) {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil, err
	}
	out := map[int][]string{}
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
		if err != nil || len(raw) == 0 {
			continue
		}
		var argv []string
		for _, a := range bytes.Split(bytes.TrimSuffix(raw, []byte{0}), []byte{0}) {
			argv = append(argv, string(a))
		}
		out[pid] = argv
	}
	return out, nil
}

// matchCmdline are the PIDs, in order, whose argv[0] is binary and whose other arguments
// include arg.
func matchCmdline(cmdlines map[int][]string, binary, arg string) []int {
	var pids []int
	for pid, argv := range cmdlines {
		if len(argv) > 0 && argv[0] == binary && slices.Contains(argv[1:], arg) {
			pids = append(pids, pid)
		}
	}
	slices.Sort(pids)
	return pids
}
