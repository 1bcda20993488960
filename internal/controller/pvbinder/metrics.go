package pvbinder

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/component-base/metrics"
	"k8s.io/component-base/metrics/legacyregistry"
	storagehelpers "k8s.io/component-helpers/storage/volume"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/storagemetrics"
)

// pluginNotAvailable labels a volume no plugin of the binder's handles.
const pluginNotAvailable = "N/A"

// Upstream's families of pkg/controller/volume/persistentvolume/metrics: the volume and
// claim counts a scrape computes (pv_collector_*), operation errors and retroactive
// StorageClass assignments. Operation latencies go to the shared
// volume_operation_total_seconds (internal/storagemetrics).
var (
	totalPVDesc = metrics.NewDesc(metrics.BuildFQName("", "pv_collector", "total_pv_count"),
		"Gauge measuring total number of persistent volumes",
		[]string{"plugin_name", "volume_mode"}, nil, metrics.ALPHA, "")
	boundPVDesc = metrics.NewDesc(metrics.BuildFQName("", "pv_collector", "bound_pv_count"),
		"Gauge measuring number of persistent volume currently bound",
		[]string{"storage_class"}, nil, metrics.ALPHA, "")
	unboundPVDesc = metrics.NewDesc(metrics.BuildFQName("", "pv_collector", "unbound_pv_count"),
		"Gauge measuring number of persistent volume currently unbound",
		[]string{"storage_class"}, nil, metrics.ALPHA, "")
	boundPVCDesc = metrics.NewDesc(metrics.BuildFQName("", "pv_collector", "bound_pvc_count"),
		"Gauge measuring number of persistent volume claim currently bound",
		[]string{"namespace", "storage_class", "volume_attributes_class"}, nil, metrics.ALPHA, "")
	unboundPVCDesc = metrics.NewDesc(metrics.BuildFQName("", "pv_collector", "unbound_pvc_count"),
		"Gauge measuring number of persistent volume claim currently unbound",
		[]string{"namespace", "storage_class", "volume_attributes_class"}, nil, metrics.ALPHA, "")

	// operationErrorsDeprecated is upstream's older name of operationErrors, deprecated in
	// 1.36 and still registered.
	operationErrorsDeprecated = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:              "volume_operation_total_errors",
		Help:              "Total volume operation errors",
		StabilityLevel:    metrics.ALPHA,
		DeprecatedVersion: "1.36.0",
	}, []string{"plugin_name", "operation_name"})
	operationErrors = metrics.NewCounterVec(&metrics.CounterOpts{
		Name:           "volume_operation_errors_total",
		Help:           "Total volume operation errors",
		StabilityLevel: metrics.ALPHA,
	}, []string{"plugin_name", "operation_name"})

	retroactiveClass = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "retroactive_storageclass_total",
		Help:           "Total number of retroactive StorageClass assignments to persistent volume claim",
		StabilityLevel: metrics.ALPHA,
	})
	retroactiveClassErrors = metrics.NewCounter(&metrics.CounterOpts{
		Name:           "retroactive_storageclass_errors_total",
		Help:           "Total number of failed retroactive StorageClass assignments to persistent volume claim",
		StabilityLevel: metrics.ALPHA,
	})
)

var (
	registerOnce sync.Once
	// counted is the binder whose cache a scrape counts: the one set up last (a process sets
	// it up once, a test binary may again after a restart).
	counted atomic.Pointer[Binder]
)

// registerMetrics registers upstream's families once and points the counts at b.
func registerMetrics(b *Binder) {
	counted.Store(b)
	registerOnce.Do(func() {
		legacyregistry.CustomMustRegister(&countCollector{})
		legacyregistry.MustRegister(operationErrorsDeprecated, operationErrors, retroactiveClass, retroactiveClassErrors)
		storagemetrics.Register()
	})
}

// recordRetroactiveClass counts an attempt to give a claim the default StorageClass.
func recordRetroactiveClass(err error) {
	retroactiveClass.Inc()
	if err != nil {
		retroactiveClassErrors.Inc()
	}
}

// operationStart is when an operation began, with its plugin (provisioner) and name.
type operationStart struct {
	plugin, operation string
	at                time.Time
}

// operationTimes keeps the start of every provision (by claim "namespace/name") and delete
// (by volume name) until it ends, as upstream's timestamp cache: an error counts in
// volume_operation_errors_total and leaves the start; the end observes the whole duration in
// volume_operation_total_seconds.
type operationTimes struct{ starts sync.Map }

// start notes an operation's start unless one is already noted.
func (o *operationTimes) start(key, plugin, operation string) {
	o.starts.LoadOrStore(key, operationStart{plugin: plugin, operation: operation, at: time.Now()})
}

func (o *operationTimes) forget(key string) { o.starts.Delete(key) }

// record ends a noted operation: err counts an error (the operation goes on), nil its end.
func (o *operationTimes) record(key string, err error) {
	v, ok := o.starts.Load(key)
	if !ok {
		return
	}
	s := v.(operationStart)
	if err != nil {
		plugin := s.plugin
		if plugin == "" {
			plugin = pluginNotAvailable
		}
		operationErrorsDeprecated.WithLabelValues(plugin, s.operation).Inc()
		operationErrors.WithLabelValues(plugin, s.operation).Inc()
		return
	}
	storagemetrics.RecordEndToEnd(s.plugin, s.operation, time.Since(s.at).Seconds())
	o.starts.Delete(key)
}

// claimKey is upstream's key of a claim's provision.
func claimKey(claim *corev1.PersistentVolumeClaim) string { return claim.Namespace + "/" + claim.Name }

// deleterName names who deletes a volume for the delete latency, as upstream: the in-tree
// plugin, else the provisioner of the volume's class (its CSI driver when migrated), N/A
// when neither is known.
func (b *Binder) deleterName(ctx context.Context, v *corev1.PersistentVolume) string {
	plugin, err := deleter(v)
	switch {
	case err != nil:
		return pluginNotAvailable
	case plugin != "":
		return plugin
	}
	class := &storagev1.StorageClass{}
	if err := b.Client.Get(ctx, client.ObjectKey{Name: storagehelpers.GetPersistentVolumeClass(v)}, class); err != nil {
		return pluginNotAvailable
	}
	if csi, ok := migratedPlugins[class.Provisioner]; ok {
		return csi
	}
	return class.Provisioner
}

// volumePlugin is the binder's plugin for a volume in pv_collector_total_pv_count: of
// upstream's binder plugins (those that provision, delete or recycle), hostPath and NFS.
func volumePlugin(v *corev1.PersistentVolume) string {
	switch {
	case v.Spec.HostPath != nil:
		return hostPathPlugin
	case v.Spec.NFS != nil:
		return "kubernetes.io/nfs"
	}
	return pluginNotAvailable
}

// countCollector counts the cached volumes and claims when /metrics is scraped.
type countCollector struct{ metrics.BaseStableCollector }

var _ metrics.StableCollector = &countCollector{}

func (*countCollector) DescribeWithStability(ch chan<- *metrics.Desc) {
	for _, d := range []*metrics.Desc{totalPVDesc, boundPVDesc, unboundPVDesc, boundPVCDesc, unboundPVCDesc} {
		ch <- d
	}
}

type claimLabels struct{ namespace, class, attributesClass string }

func (*countCollector) CollectWithStability(ch chan<- metrics.Metric) {
	b := counted.Load()
	if b == nil {
		return
	}
	ctx := context.Background()
	volumes := &corev1.PersistentVolumeList{}
	if err := b.Client.List(ctx, volumes, client.UnsafeDisableDeepCopy); err == nil {
		type pluginMode struct{ plugin, mode string }
		total := map[pluginMode]int{}
		bound, unbound := map[string]int{}, map[string]int{}
		for i := range volumes.Items {
			v := &volumes.Items[i]
			total[pluginMode{volumePlugin(v), string(ptr.Deref(v.Spec.VolumeMode, ""))}]++
			if v.Status.Phase == corev1.VolumeBound {
				bound[v.Spec.StorageClassName]++
			} else {
				unbound[v.Spec.StorageClassName]++
			}
		}
		for k, n := range total {
			ch <- metrics.NewLazyConstMetric(totalPVDesc, metrics.GaugeValue, float64(n), k.plugin, k.mode)
		}
		for class, n := range bound {
			ch <- metrics.NewLazyConstMetric(boundPVDesc, metrics.GaugeValue, float64(n), class)
		}
		for class, n := range unbound {
			ch <- metrics.NewLazyConstMetric(unboundPVDesc, metrics.GaugeValue, float64(n), class)
		}
	}
	claims := &corev1.PersistentVolumeClaimList{}
	if err := b.Client.List(ctx, claims, client.UnsafeDisableDeepCopy); err == nil {
		bound, unbound := map[claimLabels]int{}, map[claimLabels]int{}
		for i := range claims.Items {
			c := &claims.Items[i]
			l := claimLabels{c.Namespace, storagehelpers.GetPersistentVolumeClaimClass(c), ptr.Deref(c.Spec.VolumeAttributesClassName, "")}
			if c.Status.Phase == corev1.ClaimBound {
				bound[l]++
			} else {
				unbound[l]++
			}
		}
		for l, n := range bound {
			ch <- metrics.NewLazyConstMetric(boundPVCDesc, metrics.GaugeValue, float64(n), l.namespace, l.class, l.attributesClass)
		}
		for l, n := range unbound {
			ch <- metrics.NewLazyConstMetric(unboundPVCDesc, metrics.GaugeValue, float64(n), l.namespace, l.class, l.attributesClass)
		}
	}
}
