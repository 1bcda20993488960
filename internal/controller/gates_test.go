// An external test package, as rbac_test.go: it starts managers with internal/testenv.
package controller_test

import (
	"fmt"
	"testing"

	"k8s.io/component-base/featuregate"

	"github.com/kcm/kcm/internal/controller/daemonset"
	"github.com/kcm/kcm/internal/controller/deployment"
	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/controller/pvcprotection"
	"github.com/kcm/kcm/internal/controller/replicaset"
	"github.com/kcm/kcm/internal/controller/statefulset"
	"github.com/kcm/kcm/internal/controller/tainteviction"
	"github.com/kcm/kcm/internal/options"
	"github.com/kcm/kcm/internal/setup"
	"github.com/kcm/kcm/internal/testenv"
)

// gatedField is one upstream feature gate a built controller honours: the Reconciler field its
// Setup sets from the gate, read back through an override.
type gatedField struct {
	controller, gate string
	// read returns an override that stores the field's value in *got.
	read func(got *bool) setup.Override
}

var gatedFields = []gatedField{
	{"deployment-controller", "DeploymentReplicaSetTerminatingReplicas", func(got *bool) setup.Override {
		return setup.OverrideFor("deployment-controller", func(r *deployment.Reconciler) { *got = r.TerminatingReplicas })
	}},
	{"replicaset-controller", "DeploymentReplicaSetTerminatingReplicas", func(got *bool) setup.Override {
		return setup.OverrideFor("replicaset-controller", func(r *replicaset.Reconciler) { *got = r.Kind.TerminatingReplicas })
	}},
	{"replicaset-controller", "PodDeletionCost", func(got *bool) setup.Override {
		return setup.OverrideFor("replicaset-controller", func(r *replicaset.Reconciler) { *got = r.DeletionCost })
	}},
	{"job-controller", "MutableSchedulingDirectivesForSuspendedJobs", func(got *bool) setup.Override {
		return setup.OverrideFor("job-controller", func(r *job.Reconciler) { *got = r.ClearStartTimeOnSuspend })
	}},
	{"taint-eviction-controller", "TaintTolerationComparisonOperators", func(got *bool) setup.Override {
		return setup.OverrideFor("taint-eviction-controller", func(r *tainteviction.Reconciler) { *got = r.ComparisonOperators })
	}},
	{"daemonset-controller", "TaintTolerationComparisonOperators", func(got *bool) setup.Override {
		return setup.OverrideFor("daemonset-controller", func(r *daemonset.Reconciler) { *got = r.ComparisonOperators })
	}},
	{"statefulset-controller", "MaxUnavailableStatefulSet", func(got *bool) setup.Override {
		return setup.OverrideFor("statefulset-controller", func(r *statefulset.Reconciler) { *got = r.MaxUnavailable })
	}},
	{"persistentvolumeclaim-protection-controller", "PersistentVolumeClaimUnusedSinceTime", func(got *bool) setup.Override {
		return setup.OverrideFor("persistentvolumeclaim-protection-controller", func(r *pvcprotection.Reconciler) { *got = r.TrackUnused })
	}},
}

// Each controller's Setup reads the gates it honours from --feature-gates: upstream's default
// without the flag, the other value with it.
func TestControllersReadTheirFeatureGates(t *testing.T) {
	env, err := testenv.StartAPIServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := env.Stop(); err != nil {
			t.Error(err)
		}
	})
	opts := options.New()
	if err := opts.Parse(nil); err != nil {
		t.Fatal(err)
	}
	for _, g := range gatedFields {
		def := opts.FeatureGates.Enabled(featuregate.Feature(g.gate))
		for _, on := range []bool{def, !def} {
			var args []string
			if on != def {
				args = []string{fmt.Sprintf("--feature-gates=%s=%v", g.gate, on)}
			}
			got := !on
			if err := env.StartManagerWith([]string{g.controller}, args, g.read(&got)); err != nil {
				t.Fatalf("%s %v: %v", g.controller, args, err)
			}
			if err := env.StopManager(); err != nil {
				t.Fatal(err)
			}
			if got != on {
				t.Errorf("%s with %s %v: the Reconciler's field is %v", g.controller, g.gate, on, got)
			}
		}
	}
}
