package attachdetach_test

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/controller/attachdetach"
	"github.com/kcm/kcm/internal/manager"
	"github.com/kcm/kcm/internal/parallel"
	"github.com/kcm/kcm/internal/testenv"
)

// BenchmarkAttach200Pods measures "pod scheduled → VolumeAttachment created" for 200 pods
// scheduled at once over 10 managed nodes, each with its own bound ReadWriteOnce CSI claim:
// the time from the first pod created (with spec.nodeName) to all 200 VolumeAttachments,
// and each pod's latency (first seen by polling every 50ms), at kcm's default client rate
// (20 QPS, burst 30, as upstream) and at 1000 QPS. Run by hand:
//
//	go test ./internal/controller/attachdetach/ -run '^$' -bench Attach200Pods -benchtime=1x
func BenchmarkAttach200Pods(b *testing.B) {
	ctrllog.SetLogger(logr.Discard())
	env, err := testenv.StartAPIServer()
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { _ = env.Stop() })
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, -1
	cl, err := client.New(cfg, client.Options{Scheme: manager.Scheme()})
	if err != nil {
		b.Fatal(err)
	}
	ctx := context.Background()
	if err := cl.Create(ctx, &storagev1.CSIDriver{ObjectMeta: metav1.ObjectMeta{Name: driver},
		Spec: storagev1.CSIDriverSpec{AttachRequired: ptr.To(true)}}); err != nil {
		b.Fatal(err)
	}
	for _, rate := range []struct {
		name string
		args []string
	}{
		{"default-qps", nil},
		{"qps-1000", []string{"--kube-api-qps=1000", "--kube-api-burst=1000"}},
	} {
		b.Run(rate.name, func(b *testing.B) {
			for i := range b.N {
				prefix := fmt.Sprintf("%s-%d", rate.name, i)
				ns := prepare200(b, cl, prefix)
				if err := env.StartManager([]string{attachdetach.ControllerName}, rate.args...); err != nil {
					b.Fatal(err)
				}
				b.ResetTimer()
				all, p50, p99 := schedule200(b, cl, ns, prefix)
				b.StopTimer()
				b.ReportMetric(all.Seconds(), "s-to-all-attachments")
				b.ReportMetric(p50.Seconds(), "s-p50-per-pod")
				b.ReportMetric(p99.Seconds(), "s-p99-per-pod")
				if err := env.StopManager(); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

const benchPods, benchNodes = 200, 10

// prepare200 creates the nodes and 200 bound claims, returning the namespace.
func prepare200(b *testing.B, cl client.Client, prefix string) string {
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: prefix}}
	if err := cl.Create(ctx, ns); err != nil {
		b.Fatal(err)
	}
	for n := range benchNodes {
		node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("%s-n%d", prefix, n),
			Annotations: map[string]string{attachdetach.ManagedAnnotation: "true"}}}
		if err := cl.Create(ctx, node); err != nil {
			b.Fatal(err)
		}
	}
	size := corev1.ResourceList{corev1.ResourceStorage: resource.MustParse("1Gi")}
	if err := parallel.Do(ctx, benchPods, 20, func(ctx context.Context, i int) error {
		name := fmt.Sprintf("c%03d", i)
		pvName := prefix + "-" + name
		pvc := &corev1.PersistentVolumeClaim{ObjectMeta: metav1.ObjectMeta{Namespace: prefix, Name: name},
			Spec: corev1.PersistentVolumeClaimSpec{AccessModes: []corev1.PersistentVolumeAccessMode{corev1.ReadWriteOnce},
				Resources: corev1.VolumeResourceRequirements{Requests: size}, VolumeName: pvName, StorageClassName: ptr.To("")}}
		if err := cl.Create(ctx, pvc); err != nil {
			return err
		}
		pv := &corev1.PersistentVolume{ObjectMeta: metav1.ObjectMeta{Name: pvName},
			Spec: corev1.PersistentVolumeSpec{Capacity: size, AccessModes: pvc.Spec.AccessModes,
				PersistentVolumeSource: corev1.PersistentVolumeSource{CSI: &corev1.CSIPersistentVolumeSource{Driver: driver, VolumeHandle: pvName}},
				ClaimRef:               &corev1.ObjectReference{Namespace: prefix, Name: name, UID: pvc.UID}}}
		if err := cl.Create(ctx, pv); err != nil {
			return err
		}
		pvc.Status.Phase = corev1.ClaimBound
		return cl.Status().Update(ctx, pvc)
	}); err != nil {
		b.Fatal(err)
	}
	return prefix
}

// schedule200 creates the 200 pods, already scheduled, 50 at a time, and returns the time
// to all VolumeAttachments and the median and 99th percentile per pod.
func schedule200(b *testing.B, cl client.Client, ns, prefix string) (all, p50, p99 time.Duration) {
	ctx := context.Background()
	var mu sync.Mutex
	created := map[string]time.Time{} // VolumeAttachment name → its pod's creation
	start := time.Now()
	if err := parallel.Do(ctx, benchPods, 50, func(ctx context.Context, i int) error {
		node := fmt.Sprintf("%s-n%d", prefix, i%benchNodes)
		p := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: fmt.Sprintf("p%03d", i)},
			Spec: corev1.PodSpec{NodeName: node, Containers: []corev1.Container{{Name: "c", Image: "pause"}},
				Volumes: []corev1.Volume{{Name: "data", VolumeSource: corev1.VolumeSource{
					PersistentVolumeClaim: &corev1.PersistentVolumeClaimVolumeSource{ClaimName: fmt.Sprintf("c%03d", i)}}}}}}
		if err := cl.Create(ctx, p); err != nil {
			return err
		}
		mu.Lock()
		created[vaName(fmt.Sprintf("%s-c%03d", prefix, i), driver, node)] = time.Now()
		mu.Unlock()
		return nil
	}); err != nil {
		b.Fatal(err)
	}
	var latencies []time.Duration
	seen := map[string]bool{}
	for len(latencies) < benchPods {
		vas := &storagev1.VolumeAttachmentList{}
		if err := cl.List(ctx, vas); err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		for _, va := range vas.Items {
			if at, ok := created[va.Name]; ok && !seen[va.Name] {
				seen[va.Name] = true
				latencies = append(latencies, now.Sub(at))
			}
		}
		if time.Since(start) > 5*time.Minute {
			b.Fatalf("%d of %d VolumeAttachments after 5 minutes", len(latencies), benchPods)
		}
		time.Sleep(50 * time.Millisecond)
	}
	all = time.Since(start)
	slices.Sort(latencies)
	return all, latencies[len(latencies)/2], latencies[len(latencies)*99/100]
}
