package pvbinder

import (
	"context"
	"fmt"
	"os"
	"strings"
	"sync"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Recycler is what upstream's NFS or hostPath plugin is configured with to scrub a volume:
// the recycler pod template (--pv-recycler-pod-template-filepath-*, else upstream's default)
// and the pod's deadline, --pv-recycler-minimum-timeout-* or --pv-recycler-*increment* per
// GiB of the volume, whichever is larger.
type Recycler struct {
	Template         *corev1.Pod
	MinimumTimeout   int64
	TimeoutIncrement int64
}

// Recyclers are the two in-tree plugins upstream can recycle with. A volume of any other
// source has no recycler.
type Recyclers struct {
	NFS, HostPath Recycler
}

// DefaultRecyclerPodTemplate is upstream's recycler pod (pkg/volume's
// NewPersistentVolumeRecyclerPodTemplate): a shell that deletes everything under /scrub,
// where the plugin mounts the volume as the first volume, with a 60 s deadline the plugin
// replaces.
func DefaultRecyclerPodTemplate() *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "pv-recycler-", Namespace: metav1.NamespaceDefault},
		Spec: corev1.PodSpec{
			ActiveDeadlineSeconds: ptr.To[int64](60),
			RestartPolicy:         corev1.RestartPolicyNever,
			Volumes:               []corev1.Volume{{Name: "vol"}},
			Containers: []corev1.Container{{
				Name:         "pv-recycler",
				Image:        "registry.k8s.io/build-image/debian-base:bookworm-v1.0.6",
				Command:      []string{"/bin/sh"},
				Args:         []string{"-c", "test -e /scrub && find /scrub -mindepth 1 -delete && test -z \"$(ls -A /scrub)\" || exit 1"},
				VolumeMounts: []corev1.VolumeMount{{Name: "vol", MountPath: "/scrub"}},
			}},
		},
	}
}

// LoadRecyclerPodTemplate is upstream's AttemptToLoadRecycler: no path keeps the default
// template; a file must hold a pod (YAML or JSON) with at least one volume.
func LoadRecyclerPodTemplate(path string) (*corev1.Pod, error) {
	if path == "" {
		return DefaultRecyclerPodTemplate(), nil
	}
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read file path %s: %+v", path, err)
	}
	if len(data) == 0 {
		return nil, fmt.Errorf("file was empty: %s", path)
	}
	pod := &corev1.Pod{}
	if err := runtime.DecodeInto(scheme.Codecs.UniversalDecoder(corev1.SchemeGroupVersion), data, pod); err != nil {
		return nil, fmt.Errorf("failed decoding file: %v", err)
	}
	if len(pod.Spec.Volumes) < 1 {
		return nil, fmt.Errorf("pod specification (%v): does not contain any volume(s)", path)
	}
	return pod, nil
}

// recyclerPodName is the recycler pod's fixed name: a second recycler of the same volume
// finds the first one's pod instead of starting another.
func recyclerPodName(volume string) string { return "recycler-for-" + volume }

// recyclerPod is the pod that scrubs the volume, or nil when its source has no recycler
// plugin (only NFS and hostPath have one, as upstream's).
func (rs *Recyclers) recyclerPod(v *corev1.PersistentVolume) *corev1.Pod {
	var (
		rc     *Recycler
		source corev1.VolumeSource
	)
	switch {
	case v.Spec.NFS != nil:
		rc = &rs.NFS
		source.NFS = &corev1.NFSVolumeSource{Server: v.Spec.NFS.Server, Path: v.Spec.NFS.Path}
	case v.Spec.HostPath != nil:
		rc = &rs.HostPath
		source.HostPath = &corev1.HostPathVolumeSource{Path: v.Spec.HostPath.Path}
	default:
		return nil
	}
	pod := rc.Template.DeepCopy()
	pod.Name, pod.GenerateName = recyclerPodName(v.Name), ""
	pod.Spec.ActiveDeadlineSeconds = ptr.To(recyclerTimeout(rc.MinimumTimeout, rc.TimeoutIncrement, v))
	pod.Spec.Volumes[0].VolumeSource = source
	return pod
}

// recyclerTimeout is upstream's CalculateTimeoutForVolume: increment seconds per whole GiB,
// at least minimum.
func recyclerTimeout(minimum, increment int64, v *corev1.PersistentVolume) int64 {
	size := v.Spec.Capacity[corev1.ResourceStorage]
	gib := resource.MustParse("1Gi")
	if t := size.Value() / gib.Value() * increment; t > minimum {
		return t
	}
	return minimum
}

// recyclerOutcome reads the recycler pod as upstream's waitForPod does: done (with the
// failure, if any) once it Succeeded or Failed.
func recyclerOutcome(pod *corev1.Pod) (done bool, err error) {
	switch pod.Status.Phase {
	case corev1.PodSucceeded:
		return true, nil
	case corev1.PodFailed:
		if pod.Status.Message != "" {
			return true, fmt.Errorf("%s", pod.Status.Message)
		}
		return true, fmt.Errorf("pod failed, pod.Status.Message unknown")
	}
	return false, nil
}

// Event reasons of recycling (pkg/controller/volume/events).
const (
	ReasonVolumeRecycled = "VolumeRecycled"
	ReasonRecyclerPod    = "RecyclerPod"
)

// WatchPodEvents watches the core/v1 Events of the named pod. The binder's role may watch
// Events but not list them, so the recycler pod's Events are followed by a watch of their
// own, as upstream's recycler client does, rather than by the shared cache.
type WatchPodEvents func(ctx context.Context, namespace, pod string) (watch.Interface, error)

// recycling is the binder's memory of the recycler pods it started, by volume name: a pod
// of that name it did not start (an earlier kcm's, or a forged one) is deleted rather than
// trusted, as upstream does when its create finds the name taken.
type recycling struct {
	mu   sync.Mutex
	pods map[string]*recyclerRun
}

type recyclerRun struct {
	uid types.UID
	// stop ends the forwarding of the pod's Events.
	stop context.CancelFunc
}

func (rc *recycling) get(volume string) *recyclerRun {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.pods[volume]
}

func (rc *recycling) put(volume string, run *recyclerRun) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if rc.pods == nil {
		rc.pods = map[string]*recyclerRun{}
	}
	rc.pods[volume] = run
}

func (rc *recycling) end(volume string) {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	if run := rc.pods[volume]; run != nil {
		run.stop()
		delete(rc.pods, volume)
	}
}

// namespaceOf is the namespace of the volume's recycler pod: its template's.
func (rs *Recyclers) namespaceOf(v *corev1.PersistentVolume) string {
	if v.Spec.NFS != nil {
		return rs.NFS.Template.Namespace
	}
	return rs.HostPath.Template.Namespace
}

// recyclerPodsToVolume maps a recycler pod to the volume it scrubs, so that its progress
// brings the volume's sync back.
func recyclerPodsToVolume(_ context.Context, obj client.Object) []reconcile.Request {
	name, ok := strings.CutPrefix(obj.GetName(), "recycler-for-")
	if !ok {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: name}}}
}
