// Package devicetainteviction is upstream's device-taint-eviction-controller: a scheduled pod
// whose allocated ResourceClaims use a device with a NoExecute taint it does not tolerate
// (a taint of the device in its ResourceSlice, or a DeviceTaintRule selecting it) is marked
// DisruptionTarget and deleted, at once or when its claim's tolerationSeconds have passed
// since the taint was added; each DeviceTaintRule's status tells how its eviction goes.
//
// decide.go holds the eviction decision, status.go the rule's condition; reconciler.go the
// pods, rules.go the rules' status, watch.go what brings a pod or rule back.
package devicetainteviction

import (
	"context"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	podutil "github.com/kcm/kcm/internal/pod"
)

const (
	// ControllerName is upstream's name, the source of its Events and its field manager.
	ControllerName = "device-taint-eviction-controller"
	// ClientName is the ServiceAccount upstream's constructor gives the controller.
	ClientName = "device-taint-eviction-controller"

	// EventReason is the reason of the Events announcing and cancelling an eviction.
	EventReason = "DeviceTaintManagerEviction"
	// ConditionReason and ConditionMessage are those of the DisruptionTarget condition an
	// evicted pod gets before it is deleted.
	ConditionReason  = "DeletionByDeviceTaintManager"
	ConditionMessage = "Device Taint manager: deleting due to NoExecute taint"

	// ruleStatusPeriod is upstream's shortest time between two status updates of a
	// DeviceTaintRule while its eviction is in progress.
	ruleStatusPeriod = 10 * time.Second
)

// Reconciler evicts pods using tainted devices and writes DeviceTaintRules' status.
type Reconciler struct {
	Client    client.Client
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Clock     clock.PassiveClock
	// Rules turns DeviceTaintRules on (upstream's DRADeviceTaintRules gate, GA in v1.37):
	// off, rules neither evict nor get a status.
	Rules bool
	// PodGroups lets a claim reserved for a pod's PodGroup count as the pod's
	// (DRAWorkloadResourceClaims).
	PodGroups bool

	mu sync.Mutex
	// pending are the pods whose eviction is decided and not yet done, by key, for the
	// "Cancelling deletion" Event when the taint goes first.
	pending map[types.NamespacedName]types.UID
	// evicted counts the pods each rule evicted since the start, by rule UID.
	evicted map[types.UID]int64
	// ruleEvents brings a rule back to its status reconciler when a pod's eviction changes.
	ruleEvents chan event.GenericEvent
}

// What the controller's own client (ServiceAccount device-taint-eviction-controller) does;
// reads of the cache run as kcm's identity, Events through the recorder.
//
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;delete
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch
// +kubebuilder:rbac:groups=resource.k8s.io,resources=devicetaintrules/status,verbs=patch

// Reconcile decides whether a pod is to be evicted, and when, and evicts it when its time
// has come.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	pod := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, pod); err != nil {
		if apierrors.IsNotFound(err) {
			// Gone: nothing left to evict, and no Event for it, as upstream.
			r.forget(req.NamespacedName)
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, err
	}
	if pod.DeletionTimestamp != nil {
		r.forget(req.NamespacedName)
		return reconcile.Result{}, nil
	}

	// Observe: the pod's eviction as its claims, their devices and the rules say.
	rules, err := r.taintRules(ctx)
	if err != nil {
		return reconcile.Result{}, err
	}
	e, err := r.podEviction(ctx, pod, rules)
	if err != nil {
		return reconcile.Result{}, err
	}

	// Compare: none (any more), later, or now.
	if e == nil {
		// Only an eviction decided for this very pod is cancelled with an Event, not one
		// of a pod of the same name deleted unseen.
		if uid, ok := r.forget(req.NamespacedName); ok && uid == pod.UID {
			log.FromContext(ctx).V(3).Info("Canceled pod eviction")
			r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventReason, "Cancel", "Cancelling deletion")
		}
		return reconcile.Result{}, nil
	}
	r.remember(req.NamespacedName, pod.UID)
	r.touchRules(ctx, e.ruleNames())
	if wait := e.When.Sub(r.Clock.Now()); wait > 0 {
		log.FromContext(ctx).V(3).Info("Adding delayed pod eviction", "eviction", e.When, "delay", wait)
		return reconcile.Result{RequeueAfter: wait}, nil
	}

	// Act.
	if err := r.evict(ctx, pod, e); err != nil {
		return reconcile.Result{}, err
	}
	r.forget(req.NamespacedName)
	return reconcile.Result{}, nil
}

// taintRules are the DeviceTaintRules in the cache, whatever their effect (none when rules
// are off): claimEviction counts only the NoExecute ones.
func (r *Reconciler) taintRules(ctx context.Context) ([]*resourceapi.DeviceTaintRule, error) {
	if !r.Rules {
		return nil, nil
	}
	list := &resourceapi.DeviceTaintRuleList{}
	if err := r.Client.List(ctx, list); err != nil {
		return nil, err
	}
	rules := make([]*resourceapi.DeviceTaintRule, len(list.Items))
	for i := range list.Items {
		rules[i] = &list.Items[i]
	}
	return rules, nil
}

// podEviction joins the evictions of the allocated claims the pod uses: a scheduled pod's
// claims that are its own (generated ones controlled by it) and reserved for it.
func (r *Reconciler) podEviction(ctx context.Context, pod *corev1.Pod, rules []*resourceapi.DeviceTaintRule) (*eviction, error) {
	if pod.Spec.NodeName == "" {
		return nil, nil
	}
	var out *eviction
	for i := range pod.Spec.ResourceClaims {
		name, mustCheckOwner, err := resourceclaim.Name(pod, &pod.Spec.ResourceClaims[i])
		if err != nil || name == nil {
			// Not generated yet, or not needed: not tainted.
			continue
		}
		claim := &resourceapi.ResourceClaim{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: pod.Namespace, Name: *name}, claim); err != nil {
			if apierrors.IsNotFound(err) {
				continue
			}
			return nil, err
		}
		if claim.Status.Allocation == nil ||
			mustCheckOwner && resourceclaim.IsForPod(pod, claim, r.PodGroups) != nil ||
			!resourceclaim.IsReservedForPod(pod, claim, r.PodGroups) {
			continue
		}
		lookup, lookupErr := r.devices(ctx)
		e := claimEviction(claim, lookup, rules)
		if err := lookupErr(); err != nil {
			return nil, err
		}
		out = join(out, e)
	}
	return out, nil
}

// devices finds devices in the cache's ResourceSlices, a pool's slices listed once; the
// second result tells whether a list failed.
func (r *Reconciler) devices(ctx context.Context) (deviceLookup, func() error) {
	pools := map[string][]resourceapi.ResourceSlice{}
	var err error
	return func(driver, pool, device string) (*resourceapi.ResourceSlice, *resourceapi.Device) {
		key := poolKey(driver, pool)
		slices, ok := pools[key]
		if !ok {
			list := &resourceapi.ResourceSliceList{}
			if lerr := r.Client.List(ctx, list, client.MatchingFields{slicesByPool: key}); lerr != nil {
				err = lerr
				return nil, nil
			}
			slices = list.Items
			pools[key] = slices
		}
		return findDevice(slices, device)
	}, func() error { return err }
}

// evict marks the pod as a disruption target, then deletes it, as upstream: read live, so
// a pod replaced under the same name or already being deleted is left alone.
func (r *Reconciler) evict(ctx context.Context, cached *corev1.Pod, e *eviction) error {
	pod := &corev1.Pod{}
	if err := r.APIReader.Get(ctx, client.ObjectKeyFromObject(cached), pod); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return err
	}
	if pod.UID != cached.UID || pod.DeletionTimestamp != nil {
		return nil
	}
	r.Recorder.Eventf(pod, nil, corev1.EventTypeNormal, EventReason, "Delete", "Marking for deletion")
	if cond, changed := disruptionTarget(&pod.Status, r.Clock.Now()); changed {
		found, err := podutil.PatchCondition(ctx, r.Client, pod, cond)
		if err != nil {
			return fmt.Errorf("adding the DisruptionTarget condition: %w", err)
		}
		if !found {
			return nil
		}
	}
	switch err := r.Client.Delete(ctx, pod, client.Preconditions{UID: &pod.UID}); {
	case apierrors.IsNotFound(err):
		// Not counted: upstream counts the deletions it made.
		return nil
	case err != nil:
		return fmt.Errorf("deleting pod: %w", err)
	}
	latency := r.Clock.Since(e.When)
	log.FromContext(ctx).V(2).Info("Evicted pod by deleting it", "latency", latency, "reason", e.Reasons)
	podDeletions.Inc()
	podDeletionLatency.Observe(latency.Seconds())
	r.mu.Lock()
	for _, rr := range e.Reasons {
		if rr.Rule != "" {
			r.evicted[rr.RuleUID]++
		}
	}
	r.mu.Unlock()
	r.touchRules(ctx, e.ruleNames())
	return nil
}

// disruptionTarget is the pod's DisruptionTarget condition as the eviction sets it, and
// whether the pod's status lacks it.
func disruptionTarget(status *corev1.PodStatus, now time.Time) (corev1.PodCondition, bool) {
	cond := corev1.PodCondition{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue,
		Reason: ConditionReason, Message: ConditionMessage, LastTransitionTime: metav1.NewTime(now)}
	for _, c := range status.Conditions {
		if c.Type == cond.Type {
			if c.Status == cond.Status && c.Reason == cond.Reason && c.Message == cond.Message {
				return c, false
			}
			if c.Status == cond.Status {
				// The transition time stays when only reason or message change.
				cond.LastTransitionTime = c.LastTransitionTime
			}
		}
	}
	return cond, true
}

func (r *Reconciler) remember(key types.NamespacedName, uid types.UID) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.pending[key] = uid
}

// forget drops the pod's pending eviction, returning the UID of the pod it was for.
func (r *Reconciler) forget(key types.NamespacedName) (types.UID, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	uid, ok := r.pending[key]
	delete(r.pending, key)
	return uid, ok
}

// touchRules brings the named rules back to their status reconciler, which updates their
// status at most every ruleStatusPeriod.
func (r *Reconciler) touchRules(ctx context.Context, names []string) {
	for _, name := range names {
		select {
		case r.ruleEvents <- event.GenericEvent{Object: &resourceapi.DeviceTaintRule{ObjectMeta: metav1.ObjectMeta{Name: name}}}:
		case <-ctx.Done():
			return
		}
	}
}
