//go:build linux

package cluster

import (
	"os"
	"slices"
	"testing"
	"time"
)

func TestParseMachineStat(t *testing.T) {
	stat := `cpu  6034120 131937 1460898 7292820 135874 0 44551 9656 0 0
cpu0 2954524 66258 697528 3785941 24493 0 18617 4871 0 0
cpu1 3079596 65678 763369 3506879 111380 0 25933 4785 0 0
intr 222437003 0 0 0
ctxt 460765400
`
	// user + nice + system + irq + softirq + steal, in ticks of 10 ms; not idle, not iowait.
	want := time.Duration(6034120+131937+1460898+0+44551+9656) * 10 * time.Millisecond
	if got, err := parseMachineStat(stat); err != nil || got != want {
		t.Errorf("parseMachineStat = %v, %v; want %v", got, err, want)
	}
	for _, bad := range []string{"", "cpu0 1 2 3 4 5 6 7 8\n", "cpu  1 2 3 4\n", "cpu  1 2 x 4 5 6 7 8\n"} {
		if _, err := parseMachineStat(bad); err == nil {
			t.Errorf("parseMachineStat(%q) must fail", bad)
		}
	}
	if got, err := MachineCPU(); err != nil || got <= 0 {
		t.Errorf("MachineCPU = %v, %v; want this machine's busy time", got, err)
	}
}

func TestParseProcessStat(t *testing.T) {
	// The command name may hold spaces and parentheses; utime 250 and stime 50 ticks.
	stat := "4242 (kube (api) server) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 1000 100000 200 18446744073709551615\n"
	if got, err := parseProcessStat(stat); err != nil || got != 3*time.Second {
		t.Errorf("parseProcessStat = %v, %v; want 3s", got, err)
	}
	if _, err := parseProcessStat("4242 (x) S 1 2"); err == nil {
		t.Error("parseProcessStat of a short line must fail")
	}
}

func TestMatchCmdline(t *testing.T) {
	cmdlines := map[int][]string{
		10: {"bin/k8s/etcd", "--data-dir=/tmp/a", "--listen-client-urls=http://127.0.0.1:1"},
		11: {"bin/k8s/etcd", "--data-dir=/tmp/b"},
		12: {"/usr/bin/less", "--data-dir=/tmp/a"},
		13: {"bin/k8s/kube-apiserver", "--cert-dir=/tmp/c", "--etcd-servers=http://127.0.0.1:1"},
		14: {"bin/k8s/etcd"},
	}
	if got := matchCmdline(cmdlines, "bin/k8s/etcd", "--data-dir=/tmp/a"); !slices.Equal(got, []int{10}) {
		t.Errorf("etcd of /tmp/a = %v, want [10]", got)
	}
	if got := matchCmdline(cmdlines, "bin/k8s/etcd", "--data-dir=/tmp"); len(got) != 0 {
		t.Errorf("a prefix of the argument matched %v", got)
	}
	// This test's own process is among /proc's.
	all, err := processCmdlines()
	if err != nil {
		t.Fatal(err)
	}
	if argv := all[os.Getpid()]; !slices.Equal(argv, os.Args) {
		t.Errorf("this process's argv = %q, want %q", argv, os.Args)
	}
}
