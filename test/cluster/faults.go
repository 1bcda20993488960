//go:build linux

package cluster

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"syscall"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
)

// The control plane's own faults, for drills and test/chaos: kube-apiserver restarted, etcd
// killed as by a crash and started again on its data, etcd's history compacted. etcd keeps
// its data under <Dir>/etcd (Options.Restartable), so that a restarted etcd has the cluster
// back; the API server keeps its port, certificates and users.

// RestartAPIServer stops kube-apiserver (SIGTERM, as a rollout would), waits down, and starts
// it again on the same port with the same certificates.
func (c *Cluster) RestartAPIServer(down time.Duration) error {
	apiserver := c.env.ControlPlane.GetAPIServer()
	// envtest sends SIGKILL when the graceful stop outlasts its StopTimeout (long-running
	// requests held open), and says so; either way the API server is down, as in a rollout
	// that ran out of grace.
	if err := apiserver.Stop(); err != nil && !strings.Contains(err.Error(), "timeout waiting for process") {
		return fmt.Errorf("stopping kube-apiserver: %w", err)
	}
	c.controlPlanePIDs = nil
	time.Sleep(down)
	if err := apiserver.Start(); err != nil {
		return fmt.Errorf("starting kube-apiserver again: %w", err)
	}
	return nil
}

// KillEtcd kills etcd with SIGKILL, as a crash would end it. StartEtcd brings it back.
func (c *Cluster) KillEtcd() error {
	if !c.restartable {
		return errors.New("etcd's data would be lost: start the cluster with Options.Restartable")
	}
	pids, err := c.findControlPlane()
	if err != nil {
		return err
	}
	c.controlPlanePIDs = nil
	// findControlPlane lists etcd first.
	return syscall.Kill(pids[0], syscall.SIGKILL)
}

// StartEtcd starts the etcd KillEtcd killed, on its data and its client URL, and waits until
// it serves.
func (c *Cluster) StartEtcd() error {
	etcd := c.env.ControlPlane.Etcd
	// Reaps the killed process; its data directory is ours, so nothing is removed.
	_ = etcd.Stop()
	if err := etcd.Start(); err != nil {
		return fmt.Errorf("starting etcd again: %w", err)
	}
	return nil
}

// CompactEtcd compacts etcd's history up to its current revision, as the API server's
// periodic compaction would with no history to keep: a watch or list resuming from an older
// resourceVersion then gets 410 Gone and must list again. It returns the revision.
func (c *Cluster) CompactEtcd(ctx context.Context) (int64, error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: []string{c.env.ControlPlane.Etcd.URL.String()}, DialTimeout: 5 * time.Second})
	if err != nil {
		return 0, err
	}
	defer cli.Close()
	// Any key's Get reports the store's current revision in its header.
	resp, err := cli.Get(ctx, "compact-revision-probe")
	if err != nil {
		return 0, err
	}
	rev := resp.Header.Revision
	if _, err := cli.Compact(ctx, rev, clientv3.WithCompactPhysical()); err != nil {
		return 0, err
	}
	return rev, nil
}
