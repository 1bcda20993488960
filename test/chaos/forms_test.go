//go:build chaos && linux

package chaos_test

import (
	"fmt"
	"strings"
	"time"
)

// formSpec is how long each fault lasts and how big the workload is.
type formSpec struct {
	Name string
	// Fault is how long a fault lasts (the partition: PartitionFor).
	Fault, PartitionFor time.Duration
	// Quiet is the window over which the manager's CPU is measured once converged.
	Quiet time.Duration
	Load  workloadSize
	Nodes int
	// Flags are given to every manager beside kubeadm's. The full workload's rollout alone,
	// with no fault, takes about 90 s at client-go's default 20 QPS (each controller's own
	// client): 50 ReplicaSets of 10 stepping by maxSurge 2, some seven writes a step. The full
	// form raises both managers' rate alike, so that what the 60 s bound measures is the
	// fault's aftermath, not the rate limit.
	Flags []string
}

var forms = map[string]formSpec{
	"full": {Name: "full", Fault: 45 * time.Second, PartitionFor: 40 * time.Second, Quiet: 30 * time.Second, Nodes: 20,
		Load:  workloadSize{Deployments: 50, Replicas: 10, Jobs: 20, Completions: 10, Parallelism: 3, StatefulReplicas: 5, Services: 10},
		Flags: []string{"--kube-api-qps=100", "--kube-api-burst=200"}},
	"short": {Name: "short", Fault: 15 * time.Second, PartitionFor: 30 * time.Second, Quiet: 15 * time.Second, Nodes: 5,
		Load: workloadSize{Deployments: 4, Replicas: 4, Jobs: 3, Completions: 4, Parallelism: 2, StatefulReplicas: 3, Services: 2}},
}

func init() {
	name := envOr("CHAOS_FORM", "full")
	f, ok := forms[name]
	if !ok {
		panic(fmt.Sprintf("CHAOS_FORM=%q: want full or short", name))
	}
	form = f
}

// managersUnderTest are CHAOS_MANAGERS' (kcm, upstream), kcm alone in the short form.
func managersUnderTest() []string {
	def := "kcm,upstream"
	if form.Name == "short" {
		def = "kcm"
	}
	return strings.Split(envOr("CHAOS_MANAGERS", def), ",")
}
