package controller

import (
	"fmt"
	"sort"
	"strings"

	"sigs.k8s.io/controller-runtime/pkg/log"
)

// Descriptor is one upstream controller: its name, its legacy alias, whether `*` enables it,
// and how kcm sets it up (nil while kcm has not built it yet).
type Descriptor struct {
	Name              string
	Aliases           []string
	DisabledByDefault bool
	// Setup registers the controller with ctx.Manager.
	Setup func(ctx *Context) error
	// Flags are the flags only this controller acts on, reported as ignored when it does not run.
	Flags []string
}

// Flags lists the upstream flags the built controllers of reg read, for options.New.
func Flags(reg []Descriptor) []string {
	var flags []string
	for _, d := range reg {
		if d.Built() {
			flags = append(flags, d.Flags...)
		}
	}
	return flags
}

// Built reports whether kcm implements the controller.
func (d Descriptor) Built() bool { return d.Setup != nil }

// Registry lists every controller of kube-controller-manager v1.37.1, in upstream's order
// (cmd/kube-controller-manager/app/controller_descriptor.go).
func Registry() []Descriptor {
	return []Descriptor{
		{Name: "serviceaccount-token-controller", Aliases: []string{"serviceaccount-token"}, Setup: setupServiceAccountToken, Flags: serviceAccountTokenFlags},
		{Name: "endpoints-controller", Aliases: []string{"endpoint"}, Setup: setupEndpoints, Flags: endpointsFlags},
		{Name: "endpointslice-controller", Aliases: []string{"endpointslice"}, Setup: setupEndpointSlice, Flags: endpointSliceFlags},
		{Name: "endpointslice-mirroring-controller", Aliases: []string{"endpointslicemirroring"}, Setup: setupEndpointSliceMirroring, Flags: endpointSliceMirroringFlags},
		{Name: "replicationcontroller-controller", Aliases: []string{"replicationcontroller"}, Setup: setupReplicationController, Flags: []string{"concurrent-rc-syncs"}},
		{Name: "pod-garbage-collector-controller", Aliases: []string{"podgc"}, Setup: setupPodGC, Flags: []string{"terminated-pod-gc-threshold"}},
		{Name: "resourcequota-controller", Aliases: []string{"resourcequota"}, Setup: setupResourceQuota, Flags: resourceQuotaFlags},
		{Name: "namespace-controller", Aliases: []string{"namespace"}, Setup: setupNamespace, Flags: namespaceFlags},
		{Name: "serviceaccount-controller", Aliases: []string{"serviceaccount"}, Setup: setupServiceAccount},
		{Name: "garbage-collector-controller", Aliases: []string{"garbagecollector"}, Setup: setupGarbageCollector, Flags: garbageCollectorFlags},
		{Name: "daemonset-controller", Aliases: []string{"daemonset"}, Setup: setupDaemonSet, Flags: []string{"concurrent-daemonset-syncs"}},
		{Name: "job-controller", Aliases: []string{"job"}, Setup: setupJob, Flags: []string{"concurrent-job-syncs"}},
		{Name: "podgroup-protection-controller"},
		{Name: "deployment-controller", Aliases: []string{"deployment"}, Setup: setupDeployment, Flags: []string{"concurrent-deployment-syncs"}},
		{Name: "replicaset-controller", Aliases: []string{"replicaset"}, Setup: setupReplicaSet, Flags: []string{"concurrent-replicaset-syncs"}},
		{Name: "horizontal-pod-autoscaler-controller", Aliases: []string{"horizontalpodautoscaling"}, Flags: []string{"concurrent-horizontal-pod-autoscaler-syncs"}},
		{Name: "disruption-controller", Aliases: []string{"disruption"}, Setup: setupDisruption, Flags: []string{"concurrent-disruption-syncs"}},
		{Name: "statefulset-controller", Aliases: []string{"statefulset"}, Setup: setupStatefulSet, Flags: []string{"concurrent-statefulset-syncs"}},
		{Name: "cronjob-controller", Aliases: []string{"cronjob"}, Setup: setupCronJob, Flags: []string{"concurrent-cron-job-syncs"}},
		{Name: "certificatesigningrequest-signing-controller", Aliases: []string{"csrsigning"}},
		{Name: "certificatesigningrequest-approving-controller", Aliases: []string{"csrapproving"}},
		{Name: "certificatesigningrequest-cleaner-controller", Aliases: []string{"csrcleaner"}},
		{Name: "podcertificaterequest-cleaner-controller"},
		{Name: "ttl-controller", Aliases: []string{"ttl"}, Setup: setupTTL},
		{Name: "bootstrap-signer-controller", Aliases: []string{"bootstrapsigner"}, DisabledByDefault: true},
		{Name: "token-cleaner-controller", Aliases: []string{"tokencleaner"}, DisabledByDefault: true},
		{Name: "node-ipam-controller", Aliases: []string{"nodeipam"}},
		{Name: "node-lifecycle-controller", Aliases: []string{"nodelifecycle"}, Setup: setupNodeLifecycle, Flags: nodeLifecycleFlags},
		{Name: "persistentvolume-binder-controller", Aliases: []string{"persistentvolume-binder"}, Setup: setupPVBinder, Flags: pvBinderFlags},
		{Name: "persistentvolume-attach-detach-controller", Aliases: []string{"attachdetach"}},
		{Name: "persistentvolume-expander-controller", Aliases: []string{"persistentvolume-expander"}},
		{Name: "clusterrole-aggregation-controller", Aliases: []string{"clusterrole-aggregation"}},
		{Name: "persistentvolumeclaim-protection-controller", Aliases: []string{"pvc-protection"}, Setup: setupPVCProtection},
		{Name: "persistentvolume-protection-controller", Aliases: []string{"pv-protection"}, Setup: setupPVProtection},
		{Name: "volumeattributesclass-protection-controller"},
		{Name: "ttl-after-finished-controller", Aliases: []string{"ttl-after-finished"}, Setup: setupTTLAfterFinished, Flags: []string{"concurrent-ttl-after-finished-syncs"}},
		{Name: "root-ca-certificate-publisher-controller", Aliases: []string{"root-ca-cert-publisher"}, Setup: setupRootCAPublisher, Flags: []string{"root-ca-file"}},
		{Name: "kube-apiserver-serving-clustertrustbundle-publisher-controller"},
		{Name: "ephemeral-volume-controller", Aliases: []string{"ephemeral-volume"}, Setup: setupEphemeralVolume, Flags: []string{"concurrent-ephemeralvolume-syncs"}},
		{Name: "storageversion-garbage-collector-controller", Aliases: []string{"storage-version-gc"}},
		{Name: "resourceclaim-controller", Aliases: []string{"resource-claim-controller"}},
		{Name: "resourcepoolstatusrequest-controller"},
		{Name: "device-taint-eviction-controller"},
		{Name: "legacy-serviceaccount-token-cleaner-controller", Aliases: []string{"legacy-service-account-token-cleaner"}, Setup: setupLegacyTokenCleaner, Flags: []string{"legacy-service-account-token-clean-up-period"}},
		{Name: "validatingadmissionpolicy-status-controller", Flags: []string{"concurrent-validating-admission-policy-status-syncs"}},
		{Name: "taint-eviction-controller", Setup: setupTaintEviction},
		{Name: "service-cidr-controller"},
		{Name: "storage-version-migrator-controller", Aliases: []string{"svm"}},
		{Name: "selinux-warning-controller", DisabledByDefault: true},
	}
}

// Selection is the outcome of --controllers.
type Selection struct {
	// Enabled are the controllers to run, in registry order.
	Enabled []Descriptor
	// NotBuilt are enabled controllers kcm does not implement yet.
	NotBuilt []string
	// Disabled are the controllers that will not run.
	Disabled []Descriptor
}

// Select applies upstream's --controllers syntax to the registry: "*" turns on every
// controller that is on by default, "name" turns one on, "-name" turns it off; names and
// aliases are both accepted. As upstream, the first entry naming a controller decides, and
// "*" only decides for controllers no entry names. An unknown name is an error.
func Select(registry []Descriptor, controllers []string) (Selection, error) {
	canonical := map[string]string{}
	for _, d := range registry {
		canonical[d.Name] = d.Name
		for _, a := range d.Aliases {
			canonical[a] = d.Name
		}
	}
	star := false
	explicit := map[string]bool{}
	var unknown []string
	for _, entry := range controllers {
		entry = strings.TrimSpace(entry)
		switch {
		case entry == "*":
			star = true
		case entry == "":
			continue
		default:
			on := !strings.HasPrefix(entry, "-")
			name, ok := canonical[strings.TrimPrefix(entry, "-")]
			if !ok {
				unknown = append(unknown, entry)
				continue
			}
			if _, seen := explicit[name]; !seen {
				explicit[name] = on
			}
		}
	}
	if len(unknown) > 0 {
		known := make([]string, 0, len(canonical))
		for _, d := range registry {
			known = append(known, d.Name)
		}
		sort.Strings(known)
		return Selection{}, fmt.Errorf("--controllers: unknown controller %s; known controllers: %s",
			strings.Join(quoteAll(unknown), ", "), strings.Join(known, ", "))
	}
	var sel Selection
	for _, d := range registry {
		on, named := explicit[d.Name]
		if !named {
			on = star && !d.DisabledByDefault
		}
		if !on {
			sel.Disabled = append(sel.Disabled, d)
			continue
		}
		sel.Enabled = append(sel.Enabled, d)
		if !d.Built() {
			sel.NotBuilt = append(sel.NotBuilt, d.Name)
		}
	}
	return sel, nil
}

// SetupEnabled sets up every enabled controller kcm has built, logs once the enabled ones it
// has not built and the flags given that nothing acts on, and returns the names it set up.
func SetupEnabled(ctx *Context, sel Selection) ([]string, error) {
	logger := log.Log.WithName("controllers")
	if len(sel.NotBuilt) > 0 {
		logger.Info("Enabled controllers that kcm does not implement yet will not run", "controllers", sel.NotBuilt)
	}
	var started []string
	actedOn, unused := map[string]bool{}, map[string]bool{}
	for _, d := range sel.Enabled {
		if !d.Built() {
			continue
		}
		if err := d.Setup(ctx); err != nil {
			return nil, fmt.Errorf("setting up %s: %w", d.Name, err)
		}
		started = append(started, d.Name)
		for _, f := range d.Flags {
			actedOn[f] = true
		}
	}
	// A flag is unused when only controllers that do not run would read it.
	for _, d := range append(append([]Descriptor{}, sel.Enabled...), sel.Disabled...) {
		for _, f := range d.Flags {
			if !actedOn[f] {
				unused[f] = true
			}
		}
	}
	if ignored := ctx.Options.SetButIgnored(actedOn, unused); len(ignored) > 0 {
		logger.Info("Flags given that kcm does not act on", "flags", ignored)
	}
	logger.Info("Controllers set up", "controllers", started)
	return started, nil
}

func quoteAll(s []string) []string {
	out := make([]string, len(s))
	for i, v := range s {
		out[i] = fmt.Sprintf("%q", v)
	}
	return out
}
