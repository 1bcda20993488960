// Package resourcequota is upstream's resourcequota-controller: it fills a ResourceQuota's
// status.hard from spec.hard as soon as the quota appears (the API server's quota admission
// charges nothing before that), and keeps status.used true for every resource it can count:
// it recounts a quota when objects it is charged for are deleted or change in a way that
// changes their charge, and every --resource-quota-sync-period. Creations are charged by
// the API server's admission, as upstream relies on; the controller only raises usage for a
// created object admission let through uncharged (its cache did not yet show the quota's
// status), never lowers it on a creation (recount.go).
package resourcequota

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourcev1 "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/priorityqueue"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/patch"
	"github.com/kcm/kcm/internal/staleness"
)

const (
	// ControllerName is upstream's controller name.
	ControllerName = "resourcequota-controller"
	// ClientName is upstream's client (and service account) name.
	ClientName = "resourcequota-controller"
	// Workers is the default of --concurrent-resource-quota-syncs.
	Workers = 5

	// rediscoveryPeriod is how soon a quota counting a resource the API server does not
	// serve (yet: e.g. a CRD not installed) looks again, as upstream rediscovers resources
	// every 30 seconds.
	rediscoveryPeriod = 30 * time.Second
	// countTimeout bounds the wait for a new kind's objects to be listed into the cache.
	countTimeout = 30 * time.Second
	// missingUsagePriority puts quotas without usage ahead of recounts in the queue.
	missingUsagePriority = 10
)

// Reconciler keeps one ResourceQuota's status true.
type Reconciler struct {
	// Client reads quotas, pods, services, claims, resource claims and device classes from
	// the shared cache and writes quota status through the controller's own connection.
	Client client.Client
	// Counts is a metadata-only cache of the other kinds quotas count (count/<resource>):
	// kinds are added the first time a quota counts them.
	Counts cache.Cache
	// Mapper resolves count/<resource>.<group> to a kind.
	Mapper meta.RESTMapper
	Clock  clock.PassiveClock
	// SyncPeriod is --resource-quota-sync-period: every quota is recounted that often.
	SyncPeriod time.Duration
	// Claims is whether the API server serves resource.k8s.io/v1 ResourceClaims: they are
	// then watched and counted; else a namespace has none to charge.
	Claims bool

	ctrl    controller.Controller
	mu      sync.Mutex
	watched map[schema.GroupVersionKind]bool
	pending pendingRecounts
	// written is our last status write of each quota: a sync that reads the version it
	// replaced works from the stored copy (else it would compare its count with a stale
	// usage, and skip a write that is needed).
	written staleness.Writes[*corev1.ResourceQuota]
	// beforeWrite, when set (by tests), runs between a sync's count and its status write.
	beforeWrite func(ctx context.Context, rq *corev1.ResourceQuota)
}

// Quotas, pods, services, claims, resource claims and device classes are read from the
// shared cache (kcm's identity); the count cache of the other kinds lists and watches with
// the controller's own identity, which its role allows on everything ("quota can count
// quota on anything").
// +kubebuilder:rbac:groups="",resources=resourcequotas/status,verbs=update
// +kubebuilder:rbac:groups=*,resources=*,verbs=list;watch

// Reconcile recounts what the quota's namespace is charged for the quota's resources and
// writes status when it changed.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	key := req.NamespacedName
	now := r.Clock.Now()
	mode := r.pending.take(key, now)
	cached := &corev1.ResourceQuota{}
	if err := r.Client.Get(ctx, key, cached); err != nil {
		if apierrors.IsNotFound(err) {
			r.pending.forget(key)
			r.written.Forget(key)
		}
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	rq := r.written.Current(cached)

	// Observe and measure.
	next := r.SyncPeriod
	measured, wake, errs := r.measure(ctx, rq, now)
	if wake > 0 {
		next = min(next, wake)
	}
	if mode == raiseOnly {
		measured = raised(rq.Status.Used, measured)
	}

	// Status.
	st := newStatus(rq, measured)
	if lowered(rq.Status.Used, st.Used) {
		// Admission charges a creation before the object reaches the cache: a count lower
		// than the recorded usage may have missed one. Count again shortly, so an undercount
		// lasts a moment rather than until the next sync period.
		next = min(next, recheckAfterRelease)
	}
	if statusChanged(rq, st) {
		if r.beforeWrite != nil {
			r.beforeWrite(ctx, rq)
		}
		replaced := rq.ResourceVersion
		rq.Status = st
		// Optimistic: admission charges creations into status.used between our read and
		// write; overwriting its charge would let the namespace exceed the quota.
		if err := patch.Status(ctx, r.Client, rq); err != nil {
			r.written.Forget(key)
			if apierrors.IsNotFound(err) {
				return reconcile.Result{}, nil
			}
			errs = append(errs, fmt.Errorf("updating status: %w", err))
		} else {
			r.written.Wrote(replaced, rq)
		}
	}
	if err := errors.Join(errs...); err != nil {
		if mode == fullRecount {
			// The retry must not be merged into a raise-only recount.
			r.pending.ask(key, fullRecount)
		}
		return reconcile.Result{}, err
	}
	if mode == raiseOnly {
		return reconcile.Result{RequeueAfter: max(r.pending.dueIn(key, now), time.Millisecond)}, nil
	}
	r.pending.synced(key, now.Add(next))
	return reconcile.Result{RequeueAfter: next}, nil
}

// recheckAfterRelease is how soon usage that went down is counted again.
const recheckAfterRelease = time.Second

// lowered reports whether any resource in now is below what was recorded.
func lowered(recorded, now corev1.ResourceList) bool {
	for name, q := range now {
		if was, ok := recorded[name]; ok && q.Cmp(was) < 0 {
			return true
		}
	}
	return false
}

// measure computes the usage of every hard resource kcm can count. wake, when positive, is
// when the usage will change without an event (a terminating pod stops being charged) or
// when a kind not yet served should be looked up again. Resources whose count failed are
// left out, so they keep their last usage.
func (r *Reconciler) measure(ctx context.Context, rq *corev1.ResourceQuota, now time.Time) (corev1.ResourceList, time.Duration, []error) {
	selectors := scopeSelectors(rq)
	measured := corev1.ResourceList{}
	var wake time.Duration
	soonest := func(d time.Duration) {
		if d > 0 && (wake == 0 || d < wake) {
			wake = d
		}
	}
	var errs []error
	for gr, names := range trackedNames(rq.Spec.Hard) {
		var used corev1.ResourceList
		var err error
		switch gr {
		case podsGR:
			pods := &corev1.PodList{}
			if err = r.Client.List(ctx, pods, client.InNamespace(rq.Namespace)); err != nil {
				break
			}
			items := ptrs(pods.Items)
			used, err = sumUsage(items, selectors, names, podMatchesScope, func(p *corev1.Pod) corev1.ResourceList { return podUsage(p, now) })
			soonest(nextChargeEnd(items, now))
		case servicesGR:
			svcs := &corev1.ServiceList{}
			if err = r.Client.List(ctx, svcs, client.InNamespace(rq.Namespace)); err != nil {
				break
			}
			used, err = sumUsage(ptrs(svcs.Items), selectors, names, noScope[*corev1.Service], serviceUsage)
		case quotasGR:
			// Counted from the cache the quota was read from, as upstream's one informer
			// serves both: a quota always counts itself, whichever watch delivers it first.
			quotas := &corev1.ResourceQuotaList{}
			if err = r.Client.List(ctx, quotas, client.InNamespace(rq.Namespace)); err != nil {
				break
			}
			used = countUsage(len(quotas.Items), selectors, names)
		case pvcsGR:
			pvcs := &corev1.PersistentVolumeClaimList{}
			if err = r.Client.List(ctx, pvcs, client.InNamespace(rq.Namespace)); err != nil {
				break
			}
			used, err = sumUsage(ptrs(pvcs.Items), selectors, names, pvcMatchesScope, pvcUsage)
		case claimsGR:
			if !r.Claims {
				used = countUsage(0, selectors, names)
				break
			}
			claims := &resourcev1.ResourceClaimList{}
			if err = r.Client.List(ctx, claims, client.InNamespace(rq.Namespace)); err != nil {
				break
			}
			// No scope applies to claims, as upstream: a scoped quota charges none.
			used, err = sumUsage(ptrs(claims.Items), selectors, names, noScope[*resourcev1.ResourceClaim], claimUsage)
		default:
			var n int
			var served bool
			n, served, err = r.count(ctx, gr, rq.Namespace)
			if err == nil && !served {
				soonest(rediscoveryPeriod)
				continue
			}
			used = countUsage(n, selectors, names)
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("counting %s: %w", gr, err))
			continue
		}
		for name, q := range used {
			measured[name] = q
		}
	}
	if err := r.addClaimsExtended(ctx, rq.Namespace, selectors, measured, now); err != nil {
		errs = append(errs, err)
	}
	return measured, wake, errs
}

// addClaimsExtended adds to the measured pod usage of extended resources (requests.<name>)
// what the namespace's resource claims are charged for them, for the names a device class
// stands for. When that cannot be counted, those names are left out of measured, so they
// keep their last usage.
func (r *Reconciler) addClaimsExtended(ctx context.Context, namespace string, selectors []corev1.ScopedResourceSelectorRequirement, measured corev1.ResourceList, now time.Time) error {
	var names []corev1.ResourceName
	for name := range measured {
		if isExtendedQuotaName(name) {
			names = append(names, name)
		}
	}
	// No scope applies to claims: a scoped quota charges them nothing.
	if !r.Claims || len(names) == 0 || len(selectors) > 0 {
		return nil
	}
	claims := &resourcev1.ResourceClaimList{}
	classes := &resourcev1.DeviceClassList{}
	pods := &corev1.PodList{}
	err := r.Client.List(ctx, claims, client.InNamespace(namespace))
	if err == nil {
		err = r.Client.List(ctx, classes)
	}
	if err == nil {
		err = r.Client.List(ctx, pods, client.InNamespace(namespace))
	}
	if err != nil {
		for _, name := range names {
			delete(measured, name)
		}
		return fmt.Errorf("counting the extended resources of %s: %w", claimsGR, err)
	}
	byClass := deviceClasses(classes.Items)
	var charged []corev1.ResourceName
	for _, name := range names {
		if claimsChargeExtended(name, byClass) {
			charged = append(charged, name)
		}
	}
	items := ptrs(claims.Items)
	owners := newClaimPods(ptrs(pods.Items), items)
	for _, c := range items {
		used := quota.Mask(claimExtendedUsage(claimUsage(c), byClass, owners.podUsageOf(c, now)), charged)
		for name, q := range used {
			sum := measured[name]
			sum.Add(q)
			measured[name] = sum
		}
	}
	return nil
}

// nextChargeEnd is how long until the first terminating pod stops being charged, 0 if none
// will.
func nextChargeEnd(pods []*corev1.Pod, now time.Time) time.Duration {
	var next time.Duration
	for _, p := range pods {
		if charged, until := podCharged(p, now); charged && !until.IsZero() {
			// The pod stops being charged just after until.
			d := until.Sub(now) + time.Second
			if next == 0 || d < next {
				next = d
			}
		}
	}
	return next
}

// count counts the namespace's objects of a resource from the metadata cache, watching the
// kind for deletions from then on. served is false when the API server does not serve the
// resource in namespaces.
func (r *Reconciler) count(ctx context.Context, gr schema.GroupResource, namespace string) (n int, served bool, err error) {
	gvk, err := r.Mapper.KindFor(gr.WithVersion(""))
	if err != nil {
		if meta.IsNoMatchError(err) {
			return 0, false, nil
		}
		return 0, false, err
	}
	mapping, err := r.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return 0, false, err
	}
	if mapping.Scope.Name() != meta.RESTScopeNameNamespace {
		return 0, false, nil
	}
	if err := r.watch(gvk, gr); err != nil {
		return 0, true, err
	}
	list := &metav1.PartialObjectMetadataList{}
	list.SetGroupVersionKind(gvk.GroupVersion().WithKind(gvk.Kind + "List"))
	listCtx, cancel := context.WithTimeout(ctx, countTimeout)
	defer cancel()
	if err := r.Counts.List(listCtx, list, client.InNamespace(namespace)); err != nil {
		return 0, true, err
	}
	return len(list.Items), true, nil
}

// watch starts watching a counted kind for deletions, once.
func (r *Reconciler) watch(gvk schema.GroupVersionKind, gr schema.GroupResource) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.watched[gvk] {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	src := source.Kind[client.Object](r.Counts, obj, r.replenish(gr, nil))
	if err := r.ctrl.Watch(src); err != nil {
		return fmt.Errorf("watching %s: %w", gvk, err)
	}
	r.watched[gvk] = true
	log.Log.WithName(ControllerName).Info("Counting objects for quota", "resource", gr.String())
	return nil
}

// replenish is the event handler of a kind quotas charge: the quotas of the object's
// namespace that count the kind are recounted when an object is deleted, or updated in a
// way that matters (nil: never); an object's creation raises their usage if admission did
// not charge it.
func (r *Reconciler) replenish(gr schema.GroupResource, matters func(old, cur client.Object) bool) handler.TypedEventHandler[client.Object, reconcile.Request] {
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueQuotas(ctx, e.Object.GetNamespace(), gr, raiseOnly, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			if matters != nil && matters(e.ObjectOld, e.ObjectNew) {
				r.enqueueQuotas(ctx, e.ObjectNew.GetNamespace(), gr, fullRecount, q)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			r.enqueueQuotas(ctx, e.Object.GetNamespace(), gr, fullRecount, q)
		},
	}
}

// enqueueQuotas queues the quotas of a namespace that count objects of gr.
func (r *Reconciler) enqueueQuotas(ctx context.Context, namespace string, gr schema.GroupResource, m recountMode, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	quotas := &corev1.ResourceQuotaList{}
	if err := r.Client.List(ctx, quotas, client.InNamespace(namespace)); err != nil {
		log.FromContext(ctx).Error(err, "Listing the quotas of a namespace to recount", "namespace", namespace)
		return
	}
	for i := range quotas.Items {
		if tracks(quotas.Items[i].Spec.Hard, gr) {
			key := client.ObjectKeyFromObject(&quotas.Items[i])
			r.pending.ask(key, m)
			q.Add(reconcile.Request{NamespacedName: key})
		}
	}
}

// quotaEvents queues a quota when it appears and when its spec.hard changes; its status
// changes (by this controller, or by admission charging creations) are not a reason to
// recount. A quota still missing usage goes ahead of recounts. Quotas are also objects
// quotas count (resourcequotas): their creations and deletions are replenishment events
// for the other quotas of the namespace, from the same cache the count reads.
func (r *Reconciler) quotaEvents() handler.TypedEventHandler[client.Object, reconcile.Request] {
	add := func(q workqueue.TypedRateLimitingInterface[reconcile.Request], rq *corev1.ResourceQuota) {
		key := client.ObjectKeyFromObject(rq)
		r.pending.ask(key, fullRecount)
		req := reconcile.Request{NamespacedName: key}
		if pq, ok := q.(priorityqueue.PriorityQueue[reconcile.Request]); ok && missingUsage(rq) {
			pq.AddWithOpts(priorityqueue.AddOpts{Priority: ptr.To(missingUsagePriority)}, req)
			return
		}
		q.Add(req)
	}
	return handler.TypedFuncs[client.Object, reconcile.Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			add(q, e.Object.(*corev1.ResourceQuota))
			r.enqueueQuotas(ctx, e.Object.GetNamespace(), quotasGR, raiseOnly, q)
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			old, cur := e.ObjectOld.(*corev1.ResourceQuota), e.ObjectNew.(*corev1.ResourceQuota)
			if !equality.Semantic.DeepEqual(old.Spec.Hard, cur.Spec.Hard) {
				add(q, cur)
			}
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[client.Object], q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			key := client.ObjectKeyFromObject(e.Object)
			r.pending.forget(key)
			r.written.Forget(key)
			r.enqueueQuotas(ctx, e.Object.GetNamespace(), quotasGR, fullRecount, q)
		},
	}
}

// SetupWithManager watches quotas, and the pods, services, claims and resource claims they
// charge; other
// counted kinds are watched once a quota counts them.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil || r.Counts == nil || r.Mapper == nil {
		return fmt.Errorf("%s: Client, Counts and Mapper are required", ControllerName)
	}
	if r.SyncPeriod <= 0 {
		return fmt.Errorf("%s: the sync period must be positive", ControllerName)
	}
	if r.Clock == nil {
		r.Clock = clock.RealClock{}
	}
	r.watched = map[schema.GroupVersionKind]bool{}
	now := func() time.Time { return r.Clock.Now() }
	b := ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&corev1.ResourceQuota{}, r.quotaEvents()).
		Watches(&corev1.Pod{}, r.replenish(podsGR, func(old, cur client.Object) bool {
			return podUpdateMatters(old.(*corev1.Pod), cur.(*corev1.Pod), now())
		})).
		Watches(&corev1.Service{}, r.replenish(servicesGR, func(old, cur client.Object) bool {
			return serviceUpdateMatters(old.(*corev1.Service), cur.(*corev1.Service))
		})).
		Watches(&corev1.PersistentVolumeClaim{}, r.replenish(pvcsGR, func(old, cur client.Object) bool {
			return pvcUpdateMatters(old.(*corev1.PersistentVolumeClaim), cur.(*corev1.PersistentVolumeClaim))
		}))
	if r.Claims {
		// A claim's spec is immutable: only its deletion changes what it is charged.
		b = b.Watches(&resourcev1.ResourceClaim{}, r.replenish(claimsGR, nil))
	}
	c, err := b.WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).Build(r)
	if err != nil {
		return err
	}
	r.ctrl = c
	return nil
}

// MetadataTransform keeps of a counted object only what counting and watching need, so the
// metadata cache holds no labels, annotations or owner references.
func MetadataTransform(in any) (any, error) {
	obj, ok := in.(*metav1.PartialObjectMetadata)
	if !ok {
		return in, nil
	}
	return &metav1.PartialObjectMetadata{
		TypeMeta: obj.TypeMeta,
		ObjectMeta: metav1.ObjectMeta{
			Name:              obj.Name,
			Namespace:         obj.Namespace,
			UID:               obj.UID,
			ResourceVersion:   obj.ResourceVersion,
			DeletionTimestamp: obj.DeletionTimestamp,
		},
	}, nil
}

func ptrs[T any](items []T) []*T {
	out := make([]*T, len(items))
	for i := range items {
		out[i] = &items[i]
	}
	return out
}
