// Package controller is kcm's registry: every controller of kube-controller-manager v1.37.1,
// in upstream's order. Each built controller describes and sets itself up in its own package
// (its setup.go); the types they share, and the selection and set-up of the enabled ones,
// live in internal/setup.
package controller

import (
	"github.com/kcm/kcm/internal/controller/attachdetach"
	"github.com/kcm/kcm/internal/controller/bootstrapsigner"
	"github.com/kcm/kcm/internal/controller/cloudnode"
	"github.com/kcm/kcm/internal/controller/cloudnodelifecycle"
	"github.com/kcm/kcm/internal/controller/clusterroleaggregation"
	"github.com/kcm/kcm/internal/controller/cronjob"
	"github.com/kcm/kcm/internal/controller/csrapproving"
	"github.com/kcm/kcm/internal/controller/csrcleaner"
	"github.com/kcm/kcm/internal/controller/csrsigning"
	"github.com/kcm/kcm/internal/controller/ctbpublisher"
	"github.com/kcm/kcm/internal/controller/daemonset"
	"github.com/kcm/kcm/internal/controller/deployment"
	"github.com/kcm/kcm/internal/controller/devicetainteviction"
	"github.com/kcm/kcm/internal/controller/disruption"
	"github.com/kcm/kcm/internal/controller/endpoints"
	"github.com/kcm/kcm/internal/controller/endpointslice"
	"github.com/kcm/kcm/internal/controller/endpointslicemirroring"
	"github.com/kcm/kcm/internal/controller/ephemeralvolume"
	"github.com/kcm/kcm/internal/controller/expand"
	"github.com/kcm/kcm/internal/controller/garbagecollector"
	"github.com/kcm/kcm/internal/controller/job"
	"github.com/kcm/kcm/internal/controller/legacytokencleaner"
	"github.com/kcm/kcm/internal/controller/namespace"
	"github.com/kcm/kcm/internal/controller/nodeipam"
	"github.com/kcm/kcm/internal/controller/nodelifecycle"
	"github.com/kcm/kcm/internal/controller/noderoute"
	"github.com/kcm/kcm/internal/controller/podautoscaler"
	"github.com/kcm/kcm/internal/controller/podcertificaterequestcleaner"
	"github.com/kcm/kcm/internal/controller/podgc"
	"github.com/kcm/kcm/internal/controller/podgroupprotection"
	"github.com/kcm/kcm/internal/controller/pvbinder"
	"github.com/kcm/kcm/internal/controller/pvcprotection"
	"github.com/kcm/kcm/internal/controller/pvprotection"
	"github.com/kcm/kcm/internal/controller/replicaset"
	"github.com/kcm/kcm/internal/controller/resourceclaim"
	"github.com/kcm/kcm/internal/controller/resourcepoolstatusrequest"
	"github.com/kcm/kcm/internal/controller/resourcequota"
	"github.com/kcm/kcm/internal/controller/rootcapublisher"
	"github.com/kcm/kcm/internal/controller/selinuxwarning"
	"github.com/kcm/kcm/internal/controller/serviceaccount"
	"github.com/kcm/kcm/internal/controller/serviceaccounttoken"
	"github.com/kcm/kcm/internal/controller/servicecidr"
	"github.com/kcm/kcm/internal/controller/servicelb"
	"github.com/kcm/kcm/internal/controller/statefulset"
	"github.com/kcm/kcm/internal/controller/storageversiongc"
	"github.com/kcm/kcm/internal/controller/storageversionmigrator"
	"github.com/kcm/kcm/internal/controller/tainteviction"
	"github.com/kcm/kcm/internal/controller/tokencleaner"
	"github.com/kcm/kcm/internal/controller/ttl"
	"github.com/kcm/kcm/internal/controller/ttlafterfinished"
	"github.com/kcm/kcm/internal/controller/vacprotection"
	"github.com/kcm/kcm/internal/controller/validatingadmissionpolicystatus"
	"github.com/kcm/kcm/internal/setup"
)

// Registry lists every controller of kube-controller-manager v1.37.1 in upstream's order
// (cmd/kube-controller-manager/app/controller_descriptor.go): kcm sets the enabled ones up in
// this order. Controllers kcm has not built yet are named here with upstream's aliases,
// default and feature gates, so that --controllers accepts them.
//
// After them come upstream cloud-controller-manager's four loops (k8s.io/cloud-provider
// v0.37.1's names and aliases), which kcm runs in the same binary when --cloud-provider names
// a provider compiled in (internal/cloud).
func Registry() []setup.Descriptor {
	return []setup.Descriptor{
		serviceaccounttoken.Descriptor,
		endpoints.Descriptor,
		endpointslice.Descriptor,
		endpointslicemirroring.Descriptor,
		replicaset.ReplicationControllerDescriptor,
		podgc.Descriptor,
		resourcequota.Descriptor,
		namespace.Descriptor,
		serviceaccount.Descriptor,
		garbagecollector.Descriptor,
		daemonset.Descriptor,
		job.Descriptor,
		podgroupprotection.Descriptor,
		deployment.Descriptor,
		replicaset.ReplicaSetDescriptor,
		podautoscaler.Descriptor,
		disruption.Descriptor,
		statefulset.Descriptor,
		cronjob.Descriptor,
		csrsigning.Descriptor,
		csrapproving.Descriptor,
		csrcleaner.Descriptor,
		podcertificaterequestcleaner.Descriptor,
		ttl.Descriptor,
		bootstrapsigner.Descriptor,
		tokencleaner.Descriptor,
		nodeipam.Descriptor,
		nodelifecycle.Descriptor,
		pvbinder.Descriptor,
		attachdetach.Descriptor,
		expand.Descriptor,
		clusterroleaggregation.Descriptor,
		pvcprotection.Descriptor,
		pvprotection.Descriptor,
		vacprotection.Descriptor,
		ttlafterfinished.Descriptor,
		rootcapublisher.Descriptor,
		ctbpublisher.Descriptor,
		ephemeralvolume.Descriptor,
		storageversiongc.Descriptor,
		resourceclaim.Descriptor,
		resourcepoolstatusrequest.Descriptor,
		devicetainteviction.Descriptor,
		legacytokencleaner.Descriptor,
		validatingadmissionpolicystatus.Descriptor,
		tainteviction.Descriptor,
		servicecidr.Descriptor,
		storageversionmigrator.Descriptor,
		selinuxwarning.Descriptor,
		// cloud-controller-manager's loops, in its order (k8s.io/cloud-provider/app).
		cloudnode.Descriptor,
		cloudnodelifecycle.Descriptor,
		servicelb.Descriptor,
		noderoute.Descriptor,
	}
}
