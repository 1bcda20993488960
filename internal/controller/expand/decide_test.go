package expand

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func claimOf(request, capacity, allocated string, status corev1.ClaimResourceStatus) *corev1.PersistentVolumeClaim {
	c := &corev1.PersistentVolumeClaim{}
	c.Spec.Resources.Requests = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(request)}
	c.Status.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(capacity)}
	if allocated != "" {
		c.Status.AllocatedResources = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(allocated)}
	}
	if status != "" {
		c.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{corev1.ResourceStorage: status}
	}
	return c
}

func volumeOf(size string, preResize bool) *corev1.PersistentVolume {
	v := &corev1.PersistentVolume{}
	v.Spec.Capacity = corev1.ResourceList{corev1.ResourceStorage: resource.MustParse(size)}
	if preResize {
		v.Annotations = map[string]string{AnnPreResizeCapacity: "1Gi"}
	}
	return v
}

func TestNextStep(t *testing.T) {
	for _, tc := range []struct {
		name     string
		claim    *corev1.PersistentVolumeClaim
		volume   *corev1.PersistentVolume
		want     step
		wantSize string
	}{
		{"new request", claimOf("2Gi", "1Gi", "", ""), volumeOf("1Gi", false), stepExpand, "2Gi"},
		{"controller resize in progress resumes to the allocated size", claimOf("3Gi", "1Gi", "2Gi", corev1.PersistentVolumeClaimControllerResizeInProgress), volumeOf("1Gi", false), stepExpand, "2Gi"},
		{"node resize infeasible, volume still small: the allocated size", claimOf("3Gi", "1Gi", "2Gi", corev1.PersistentVolumeClaimNodeResizeInfeasible), volumeOf("1Gi", false), stepExpand, "2Gi"},
		{"controller resize infeasible, volume small: the request (recovery)", claimOf("2Gi", "1Gi", "5Gi", corev1.PersistentVolumeClaimControllerResizeInfeasible), volumeOf("1Gi", false), stepExpand, "2Gi"},
		{"in progress without allocated size: the request", claimOf("2Gi", "1Gi", "", corev1.PersistentVolumeClaimControllerResizeInProgress), volumeOf("1Gi", false), stepExpand, "2Gi"},
		{"volume expanded, node pending: nothing", claimOf("2Gi", "1Gi", "2Gi", corev1.PersistentVolumeClaimNodeResizePending), volumeOf("2Gi", true), stepNone, "0"},
		{"volume expanded, node in progress: nothing", claimOf("2Gi", "1Gi", "2Gi", corev1.PersistentVolumeClaimNodeResizeInProgress), volumeOf("2Gi", true), stepNone, "0"},
		{"volume expanded, node infeasible: node pending again", claimOf("2Gi", "1Gi", "2Gi", corev1.PersistentVolumeClaimNodeResizeInfeasible), volumeOf("2Gi", true), stepNodePending, "0"},
		{"volume expanded, controller in progress: finish to allocated", claimOf("2Gi", "1Gi", "3Gi", corev1.PersistentVolumeClaimControllerResizeInProgress), volumeOf("3Gi", false), stepExpand, "3Gi"},
		{"volume expanded, no status, allocated: allocated", claimOf("2Gi", "1Gi", "3Gi", ""), volumeOf("3Gi", false), stepExpand, "3Gi"},
		{"volume expanded, no status, nothing allocated: the request", claimOf("2Gi", "1Gi", "", ""), volumeOf("2Gi", false), stepExpand, "2Gi"},
		{"node finished: drop the pre-resize capacity", claimOf("2Gi", "2Gi", "2Gi", ""), volumeOf("2Gi", true), stepDropPreResize, "0"},
		{"node finished but volume larger: not complete", claimOf("2Gi", "2Gi", "3Gi", corev1.PersistentVolumeClaimNodeResizePending), volumeOf("3Gi", true), stepNone, "0"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, size := nextStep(tc.claim, tc.volume)
			if got != tc.want || size.String() != tc.wantSize {
				t.Errorf("nextStep = %v %s, want %v %s", got, size.String(), tc.want, tc.wantSize)
			}
		})
	}
}

func TestNeedsExpansion(t *testing.T) {
	for _, tc := range []struct {
		name   string
		claim  *corev1.PersistentVolumeClaim
		volume *corev1.PersistentVolume
		want   bool
	}{
		{"request above capacity", claimOf("2Gi", "1Gi", "", ""), volumeOf("1Gi", false), true},
		{"request equal", claimOf("1Gi", "1Gi", "", ""), volumeOf("1Gi", false), false},
		{"request below (shrunk after a failure)", claimOf("1Gi", "2Gi", "", ""), volumeOf("2Gi", false), false},
		{"pre-resize capacity left on the volume", claimOf("2Gi", "2Gi", "", ""), volumeOf("2Gi", true), true},
	} {
		if got := needsExpansion(tc.claim, tc.volume); got != tc.want {
			t.Errorf("%s: needsExpansion = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestExpanderOf(t *testing.T) {
	for _, tc := range []struct {
		name            string
		src             corev1.PersistentVolumeSource
		want            expander
		plugin, resizer string
	}{
		{"CSI", corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: "csi.example.com"}}, byExternalController, "", ""},
		{"AWS EBS", corev1.PersistentVolumeSource{AWSElasticBlockStore: &corev1.AWSElasticBlockStoreVolumeSource{VolumeID: "v"}}, byMigratedDriver, "kubernetes.io/aws-ebs", "ebs.csi.aws.com"},
		{"GCE PD", corev1.PersistentVolumeSource{GCEPersistentDisk: &corev1.GCEPersistentDiskVolumeSource{PDName: "d"}}, byMigratedDriver, "kubernetes.io/gce-pd", "pd.csi.storage.gke.io"},
		{"Azure file", corev1.PersistentVolumeSource{AzureFile: &corev1.AzureFilePersistentVolumeSource{ShareName: "s", SecretName: "x"}}, byMigratedDriver, "kubernetes.io/azure-file", "file.csi.azure.com"},
		{"vSphere", corev1.PersistentVolumeSource{VsphereVolume: &corev1.VsphereVirtualDiskVolumeSource{VolumePath: "p"}}, byMigratedDriver, "kubernetes.io/vsphere-volume", "csi.vsphere.vmware.com"},
		{"Portworx", corev1.PersistentVolumeSource{PortworxVolume: &corev1.PortworxVolumeSource{VolumeID: "v"}}, byMigratedDriver, "kubernetes.io/portworx-volume", "pxd.portworx.com"},
		{"FlexVolume", corev1.PersistentVolumeSource{FlexVolume: &corev1.FlexPersistentVolumeSource{Driver: "example.com/flex"}}, byKubelet, "", "example.com/flex"},
		{"NFS", corev1.PersistentVolumeSource{NFS: &corev1.NFSVolumeSource{Server: "s", Path: "/p"}}, byExternalController, "", ""},
		{"hostPath", corev1.PersistentVolumeSource{HostPath: &corev1.HostPathVolumeSource{Path: "/tmp/x"}}, byExternalController, "", ""},
		{"iSCSI", corev1.PersistentVolumeSource{ISCSI: &corev1.ISCSIPersistentVolumeSource{TargetPortal: "t", IQN: "i"}}, byExternalController, "", ""},
	} {
		pv := &corev1.PersistentVolume{Spec: corev1.PersistentVolumeSpec{PersistentVolumeSource: tc.src}}
		who, plugin, resizer, err := expanderOf(pv)
		if err != nil || who != tc.want || plugin != tc.plugin || resizer != tc.resizer {
			t.Errorf("%s: expanderOf = %v %q %q %v, want %v %q %q", tc.name, who, plugin, resizer, err, tc.want, tc.plugin, tc.resizer)
		}
	}
}

func TestClaimStatusTransitions(t *testing.T) {
	then := metav1.Unix(100, 0)
	now := metav1.Unix(200, 0)
	c := claimOf("2Gi", "1Gi", "", "")
	c.Status.Conditions = []corev1.PersistentVolumeClaimCondition{
		{Type: "Other", Status: corev1.ConditionTrue},
		{Type: corev1.PersistentVolumeClaimControllerResizeError, Status: corev1.ConditionTrue, LastTransitionTime: then},
	}

	started := controllerResizeInProgress(c, "example.com/flex", resource.MustParse("2Gi"), now)
	if got := condTypes(started); got != "Other,Resizing" {
		t.Errorf("in progress: conditions %s, want Other,Resizing (the old resize error dropped)", got)
	}
	if started.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimControllerResizeInProgress ||
		started.Status.AllocatedResources.Storage().String() != "2Gi" || started.Annotations[AnnResizer] != "example.com/flex" {
		t.Errorf("in progress: %+v %v", started.Status, started.Annotations)
	}
	if c.Status.AllocatedResourceStatuses != nil || c.Annotations != nil {
		t.Errorf("the claim given was changed")
	}

	again := controllerResizeInProgress(started, "example.com/flex", resource.MustParse("2Gi"), metav1.Unix(300, 0))
	if !again.Status.Conditions[1].LastTransitionTime.Equal(&now) {
		t.Errorf("Resizing already True must keep its transition time, got %v", again.Status.Conditions[1].LastTransitionTime)
	}

	pending := nodeResizePending(started, now)
	if got := condTypes(pending); got != "Other,Resizing,FileSystemResizePending" {
		t.Errorf("node pending: conditions %s", got)
	}
	if pending.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != corev1.PersistentVolumeClaimNodeResizePending ||
		pending.Status.Conditions[2].Message != fsResizePendingMessage {
		t.Errorf("node pending: %+v", pending.Status)
	}

	done := resizeFinished(started, resource.MustParse("2Gi"))
	if got := condTypes(done); got != "Other" {
		t.Errorf("finished: conditions %s, want Other", got)
	}
	if done.Status.AllocatedResourceStatuses != nil || done.Status.Capacity.Storage().String() != "2Gi" {
		t.Errorf("finished: %+v", done.Status)
	}
}

func condTypes(c *corev1.PersistentVolumeClaim) string {
	s := ""
	for i, cond := range c.Status.Conditions {
		if i > 0 {
			s += ","
		}
		s += string(cond.Type)
	}
	return s
}
