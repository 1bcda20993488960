// Command localplane is what `make run` starts when no cluster is given: a local control
// plane (etcd and kube-apiserver, built by `make k8s-bins`) with kcm running against it.
// It prints the kubeconfig to use and stops everything on Ctrl-C, leaving nothing running.
//
//	go run ./hack/localplane -kcm bin/kcm -- [kcm flags]
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"github.com/kcm/kcm/internal/testenv"
)

func main() {
	if err := run(); err != nil {
		fmt.Fprintln(os.Stderr, "localplane:", err)
		os.Exit(1)
	}
}

func run() error {
	kcmBinary := flag.String("kcm", "bin/kcm", "the kcm binary to run")
	dir := flag.String("dir", "bin/localplane.d", "where to write the kubeconfig")
	flag.Parse()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	fmt.Fprintln(os.Stderr, "Starting etcd and kube-apiserver...")
	env, err := testenv.StartAPIServer()
	if err != nil {
		return err
	}
	defer func() {
		fmt.Fprintln(os.Stderr, "Stopping kube-apiserver and etcd...")
		if err := env.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "localplane: stopping the control plane:", err)
		}
	}()

	if err := os.MkdirAll(*dir, 0o755); err != nil {
		return err
	}
	kubeconfig, err := filepath.Abs(filepath.Join(*dir, "kubeconfig"))
	if err != nil {
		return err
	}
	if err := os.WriteFile(kubeconfig, env.Environment.KubeConfig, 0o600); err != nil {
		return err
	}
	defer os.Remove(kubeconfig)

	// kcm serves its health and metrics on 10257 unless told otherwise; a local run should not
	// collide with a real controller manager on this machine, so it picks a free port.
	args := append([]string{"--kubeconfig=" + kubeconfig, "--secure-port=0"}, flag.Args()...)
	cmd := exec.Command(*kcmBinary, args...)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	// Its own process group, so the terminal's Ctrl-C reaches it only through us, in order.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("starting kcm: %w", err)
	}
	fmt.Fprintf(os.Stderr, "\nkcm is running against a local control plane.\n  kubeconfig: %s\n  try:        kubectl --kubeconfig %s get sa,cm -A\nPress Ctrl-C to stop.\n\n", kubeconfig, kubeconfig)

	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	select {
	case err := <-exited:
		return fmt.Errorf("kcm exited: %w", err)
	case <-ctx.Done():
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case err := <-exited:
		var exit *exec.ExitError
		if err != nil && !errors.As(err, &exit) {
			return err
		}
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	return nil
}
