package namespace

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	utilerrors "k8s.io/apimachinery/pkg/util/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/kcm/kcm/internal/patch"
)

// finalizerEstimateSeconds is upstream's guess at how long finalizers on remaining objects
// take to finish when nothing better is known.
const finalizerEstimateSeconds = int64(15)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// resourceResult is what deleting the objects of one resource left behind.
type resourceResult struct {
	// estimate is the seconds the remaining objects are expected to take; 0 is no estimate,
	// not "nothing remains".
	estimate   int64
	remaining  int
	finalizers map[string]int
}

// deleteAllContent deletes the objects of every deletable namespaced resource in the
// namespace, pods first: other content waits until every pod is gone, so that a pod's
// volumes, secrets and service account outlive it. It writes the deletion conditions and
// returns the seconds the remaining content is expected to take.
func (r *Reconciler) deleteAllContent(ctx context.Context, ns *corev1.Namespace) (int64, error) {
	logger := log.FromContext(ctx)
	obs := newObservation()
	var errs []error

	lists, err := r.Discover()
	if err != nil {
		// Partial discovery is not fatal: delete what was discovered.
		obs.discoveryErr = err
		errs = append(errs, err)
	}
	resources, err := deletableResources(lists)
	if err != nil {
		obs.groupVersionErr = err
		errs = append(errs, err)
	}

	var estimate int64
	deleteResource := func(gvr schema.GroupVersionResource, v verbs) {
		res, err := r.deleteResource(ctx, gvr, v, ns)
		if err != nil {
			obs.contentErrs = append(obs.contentErrs, err)
			if gvr == podsGVR {
				err = fmt.Errorf("failed to delete pods for namespace: %s, err: %w", ns.Name, err)
			}
			errs = append(errs, err)
		}
		estimate = max(estimate, res.estimate)
		obs.add(gvr, res)
	}

	if v, ok := resources[podsGVR]; ok {
		deleteResource(podsGVR, v)
		if obs.remaining[podsGVR] > 0 {
			logger.V(5).Info("Pods remain in the namespace, delaying the deletion of other content", "remaining", obs.remaining[podsGVR])
			return estimate, utilerrors.NewAggregate(append(errs, r.writeConditions(ctx, ns, obs)))
		}
	}
	for gvr, v := range resources {
		if gvr == podsGVR {
			continue
		}
		deleteResource(gvr, v)
	}
	logger.V(4).Info("Deleted namespace content", "estimate", estimate, "remaining", len(obs.remaining), "errors", len(errs))
	return estimate, utilerrors.NewAggregate(append(errs, r.writeConditions(ctx, ns, obs)))
}

// writeConditions patches the namespace's deletion conditions when they changed.
func (r *Reconciler) writeConditions(ctx context.Context, ns *corev1.Namespace, obs *observation) error {
	if !applyConditions(&ns.Status, obs.failing(), metav1.NewTime(r.Clock.Now())) {
		return nil
	}
	// Optimistic, as upstream's UpdateStatus: others write the namespace while it terminates.
	if err := patch.Status(ctx, r.Client, ns); err != nil {
		return fmt.Errorf("updating the deletion conditions of namespace %s: %w", ns.Name, client.IgnoreNotFound(err))
	}
	return nil
}

// deleteResource deletes the namespace's objects of one resource, with DeleteCollection when
// the server supports it and one by one otherwise, then lists what is left.
func (r *Reconciler) deleteResource(ctx context.Context, gvr schema.GroupVersionResource, v verbs, ns *corev1.Namespace) (resourceResult, error) {
	estimate, err := r.estimate(ctx, gvr, ns)
	if err != nil {
		return resourceResult{}, err
	}
	res := resourceResult{estimate: estimate}
	api := r.Metadata.Resource(gvr).Namespace(ns.Name)
	// Background propagation: the garbage collector must not add the orphan finalizer to
	// objects deleted generically; the namespace goes only once all of them are gone.
	background := metav1.DeletePropagationBackground
	opts := metav1.DeleteOptions{PropagationPolicy: &background}

	collected := false
	if v["deletecollection"] {
		err := api.DeleteCollection(ctx, opts, metav1.ListOptions{})
		switch {
		case err == nil:
			collected = true
		case apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err):
			// Some resources are discovered with verbs they do not serve.
		default:
			return res, err
		}
	}
	if !v["list"] {
		return res, nil
	}
	if !collected {
		items, supported, err := list(ctx, r, gvr, ns.Name)
		if err != nil || !supported {
			return res, err
		}
		for i := range items.Items {
			err := api.Delete(ctx, items.Items[i].Name, opts)
			if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsMethodNotSupported(err) {
				return res, err
			}
		}
	}

	items, supported, err := list(ctx, r, gvr, ns.Name)
	if err != nil || !supported || len(items.Items) == 0 {
		return res, err
	}
	res.remaining = len(items.Items)
	res.finalizers = map[string]int{}
	for i := range items.Items {
		for _, f := range items.Items[i].Finalizers {
			res.finalizers[f]++
		}
	}
	switch {
	case res.estimate > 0:
		return res, nil
	case len(res.finalizers) > 0:
		// Finalizers are normal: give them time.
		res.estimate = finalizerEstimateSeconds
		return res, nil
	default:
		return res, fmt.Errorf("unexpected items still remain in namespace: %s for gvr: %v", ns.Name, gvr)
	}
}

// list lists the namespace's objects of one resource (metadata only); supported is false
// when the server does not serve the list.
func list(ctx context.Context, r *Reconciler, gvr schema.GroupVersionResource, namespace string) (*metav1.PartialObjectMetadataList, bool, error) {
	items, err := r.Metadata.Resource(gvr).Namespace(namespace).List(ctx, metav1.ListOptions{})
	switch {
	case err == nil:
		return items, true, nil
	case apierrors.IsMethodNotSupported(err) || apierrors.IsNotFound(err):
		return nil, false, nil
	default:
		return nil, true, err
	}
}

// estimate is how long, in seconds, the resource's objects may take to go once deleted:
// the pods' grace periods, nothing for other resources.
func (r *Reconciler) estimate(ctx context.Context, gvr schema.GroupVersionResource, ns *corev1.Namespace) (int64, error) {
	if gvr.GroupResource() != podsGVR.GroupResource() {
		return 0, nil
	}
	pods := &corev1.PodList{}
	if err := r.Client.List(ctx, pods, client.InNamespace(ns.Name)); err != nil {
		return 0, err
	}
	return podGraceEstimate(pods.Items, ns.DeletionTimestamp.Time, r.Clock.Now()), nil
}

// finalize removes the kubernetes finalizer through the finalize subresource, reading the
// namespace again when it changed meanwhile.
func (r *Reconciler) finalize(ctx context.Context, ns *corev1.Namespace) error {
	for attempt := 0; ; attempt++ {
		next := ns.DeepCopy()
		next.Spec.Finalizers = withoutFinalizer(ns.Spec.Finalizers, corev1.FinalizerKubernetes)
		err := r.Client.SubResource("finalize").Update(ctx, next)
		if err == nil || apierrors.IsNotFound(err) {
			return nil
		}
		if !apierrors.IsConflict(err) || attempt >= 4 {
			return fmt.Errorf("finalizing namespace %s: %w", ns.Name, err)
		}
		fresh := &corev1.Namespace{}
		if err := r.Client.Get(ctx, client.ObjectKeyFromObject(ns), fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		if fresh.UID != ns.UID {
			return fmt.Errorf("namespace %s: uid has changed across retries", ns.Name)
		}
		ns = fresh
	}
}
