// Package resourceclaim is upstream's resourceclaim-controller (Dynamic Resource Allocation,
// resource.k8s.io/v1). Two reconcilers share its state, one per kind of work upstream's single
// queue holds:
//
//   - pods (reconciler.go): each of a pod's spec.resourceClaims that names a
//     ResourceClaimTemplate gets a claim generated from it ("<pod>-<claim>-" plus 5
//     characters, controlled by the pod, annotated resource.kubernetes.io/pod-claim-name),
//     recorded in pod.status.resourceClaimStatuses by a server-side apply; a scheduled pod's
//     allocated claims not yet reserved for it are reserved;
//   - claims (claims.go): status.reservedFor entries of pods that are gone, replaced or done
//     are removed; a claim left without consumers is deallocated (and its built-in finalizer
//     removed), and a claim generated for a pod that is done is deleted. That covers the
//     scheduler's extended-resource claims too, which are controlled by their pod.
//
// Decisions are pure functions in decide.go; watches and indexes in watch.go.
package resourceclaim

import (
	"context"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	resourceapi "k8s.io/api/resource/v1"
	schedulingapi "k8s.io/api/scheduling/v1beta1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	corev1apply "k8s.io/client-go/applyconfigurations/core/v1"
	"k8s.io/dynamic-resource-allocation/resourceclaim"
	drametrics "k8s.io/dynamic-resource-allocation/resourceclaim/metrics"
	"k8s.io/utils/lru"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/recorder"

	"github.com/kcm/kcm/internal/features"
	"github.com/kcm/kcm/internal/patch"
)

const (
	// ControllerName is the controller's name in --controllers.
	ControllerName = "resourceclaim-controller"
	// ClientName is upstream's client (and ServiceAccount) name for the controller.
	ClientName = "resource-claim-controller"
	// EventSource is the component upstream's Events report.
	EventSource = "resource_claim"
	// ReasonFailedResourceClaimCreation is the reason of the Warning Event on a pod whose
	// claim cannot be made.
	ReasonFailedResourceClaimCreation = "FailedResourceClaimCreation"
	// FieldManager owns the pod's resourceClaimStatuses, as upstream's apply.
	FieldManager = "ResourceClaimController"

	// deletedPods is how many deleted pods are remembered, so that their reservations go
	// without a live read (upstream's size).
	deletedPods = 500
	// createdClaims is how many claims just created are remembered until the cache shows
	// them (upstream's mutation cache size).
	createdClaims = 1000
)

// Features are the feature gates the controller consults, set in Setup.
type Features struct {
	// AdminAccess (DRAAdminAccess): templates may ask for admin access.
	AdminAccess bool
	// PrioritizedList (DRAPrioritizedList): templates may list subrequests.
	PrioritizedList bool
	// GenericWorkload: pods may belong to a PodGroup.
	GenericWorkload bool
	// WorkloadResourceClaims (DRAWorkloadResourceClaims): a PodGroup's claims are shared
	// by its pods.
	WorkloadResourceClaims bool
}

// Reconciler holds what both of the controller's reconcilers share.
type Reconciler struct {
	// Client reads pods, claims and templates from the cache, and writes claims and pod
	// statuses as the controller.
	Client client.Client
	// APIReader reads a claim or pod live when the cache does not have it.
	APIReader client.Reader
	Recorder  recorder.EventRecorder
	Features  Features

	initOnce sync.Once
	// deleted holds the UIDs of pods whose deletion the controller saw.
	deleted *lru.Cache
	// created holds the claims this controller created that the cache did not show yet, by
	// createdKey: a sync of the pod before the cache has the claim (after a failed status
	// apply, or with the pod's cache ahead of the claims') must find it rather than create
	// another, or read it live (upstream's mutation cache). The claim's first event in the
	// cache removes it (forgetCreated).
	created *lru.Cache
}

func (r *Reconciler) init() {
	r.initOnce.Do(func() {
		r.deleted = lru.New(deletedPods)
		r.created = lru.New(createdClaims)
	})
}

// The controller creates, deletes and updates claims (the built-in finalizer), writes their
// status (reservations; changing them needs the synthetic binding subresource), applies pods'
// resourceClaimStatuses, and reads a claim or a pod live when the cache lacks it.
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims,verbs=get;create;delete;update
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims/status,verbs=update
// +kubebuilder:rbac:groups=resource.k8s.io,resources=resourceclaims/binding,verbs=update
// +kubebuilder:rbac:groups="",resources=pods,verbs=get
// +kubebuilder:rbac:groups="",resources=pods/status,verbs=patch

// podReconciler creates a pod's claims from their templates and reserves a scheduled pod's
// allocated claims.
type podReconciler struct{ *Reconciler }

// Reconcile generates the pod's missing claims, records them in its status, then reserves
// its allocated claims once it is scheduled. A claim that cannot be made stops the sync with
// a Warning Event and is retried with backoff, as upstream.
func (r podReconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	p := &corev1.Pod{}
	if err := r.Client.Get(ctx, req.NamespacedName, p); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if p.DeletionTimestamp != nil || isTerminal(p) {
		// A pod that is done never needs its claims again: the claim reconciler deletes
		// them, and they must not be made again. (Upstream has no such check; its mutation
		// cache keeps a deleted claim "existing" for an hour, which mostly hides it.)
		return reconcile.Result{}, nil
	}
	group, err := r.podGroup(ctx, p)
	if err != nil {
		return reconcile.Result{}, terminal(fmt.Errorf("get PodGroup for Pod %s: %w", req, err))
	}

	generated := map[string]string{}
	for i := range p.Spec.ResourceClaims {
		pc := &p.Spec.ResourceClaims[i]
		if err := r.ensureClaim(ctx, p, group, pc, generated); err != nil {
			r.Recorder.Eventf(p, nil, corev1.EventTypeWarning, ReasonFailedResourceClaimCreation, "CreateClaim", "PodResourceClaim %s: %v", pc.Name, err)
			return reconcile.Result{}, terminal(fmt.Errorf("pod %s, PodResourceClaim %s: %w", req, pc.Name, err))
		}
	}
	if len(generated) > 0 {
		if err := r.applyStatuses(ctx, p, generated); err != nil {
			return reconcile.Result{}, err
		}
	}

	if p.Spec.NodeName == "" {
		// The scheduler reserves the claims of the pods it places.
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, r.reserve(ctx, p, group)
}

// permanent marks an error that retrying cannot fix (upstream's nonRetryableError); its
// message is the error's own, for the Event.
type permanent struct{ error }

func (e permanent) Unwrap() error { return e.error }

// terminal makes an error holding a permanent one a terminal error: logged, not retried.
func terminal(err error) error {
	var p permanent
	if errors.As(err, &p) {
		return reconcile.TerminalError(err)
	}
	return err
}

// podGroup is the PodGroup the pod belongs to, nil when none. Without GenericWorkload such a
// pod cannot be handled, and retrying does not help.
func (r podReconciler) podGroup(ctx context.Context, p *corev1.Pod) (*schedulingapi.PodGroup, error) {
	if p.Spec.SchedulingGroup == nil || p.Spec.SchedulingGroup.PodGroupName == nil {
		return nil, nil
	}
	name := *p.Spec.SchedulingGroup.PodGroupName
	if !r.Features.GenericWorkload {
		return nil, permanent{fmt.Errorf("Pod is a member of PodGroup %s but %s feature is disabled", name, features.GenericWorkload)}
	}
	g := &schedulingapi.PodGroup{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: name}, g); err != nil {
		return nil, err
	}
	return g, nil
}

// ensureClaim makes sure one of the pod's claims exists: a claim named by the pod's status
// that still exists is left alone; otherwise the claim generated earlier for it (found by
// owner and annotation) or a new one from its template is added to generated.
func (r podReconciler) ensureClaim(ctx context.Context, p *corev1.Pod, group *schedulingapi.PodGroup, pc *corev1.PodResourceClaim, generated map[string]string) error {
	// Name is called for claims without template too: it refuses API fields this client
	// does not know, which may expect something of the controller.
	name, mustCheckOwner, err := resourceclaim.Name(p, pc)
	switch {
	case errors.Is(err, resourceclaim.ErrClaimNotFound):
	case err != nil:
		return fmt.Errorf("checking for claim before creating it: %v", err)
	case name == nil:
		return nil
	case *name != "":
		// Recorded in the status: it should exist, unless deleted by accident; then it is
		// made again.
		exists, err := r.claimExists(ctx, p, pc.Name, *name, mustCheckOwner)
		if err != nil || exists {
			return err
		}
	}
	if pc.ResourceClaimTemplateName == nil {
		return nil
	}
	bindTo, err := resourceclaim.BindTo(p, group, pc)
	if err != nil {
		return err
	}
	if bindTo.Resource == "podgroups" {
		if !r.Features.WorkloadResourceClaims {
			return permanent{fmt.Errorf("claim %s is a PodGroup claim but the %s feature is disabled", pc.Name, features.DRAWorkloadResourceClaims)}
		}
		// Claims shared by a PodGroup's pods are generated for the PodGroup, which kcm
		// does not do yet: retrying does not help.
		return permanent{fmt.Errorf("claim %s is a PodGroup claim, which kcm does not generate yet", pc.Name)}
	}

	claim, err := r.generatedClaim(ctx, p, pc.Name)
	if err != nil {
		return fmt.Errorf("finding ResourceClaim for claim %s in pod %s/%s failed: %w", pc.Name, p.Namespace, p.Name, err)
	}
	if claim == nil {
		if claim, err = r.createClaim(ctx, p, pc); err != nil {
			return err
		}
	}
	generated[pc.Name] = claim.Name
	return nil
}

// claimExists reports whether the pod's claim podClaim, recorded as name, exists (in the
// cache, among those just created, else live) and, when it must, is the pod's own.
func (r podReconciler) claimExists(ctx context.Context, p *corev1.Pod, podClaim, name string, mustCheckOwner bool) (bool, error) {
	key := types.NamespacedName{Namespace: p.Namespace, Name: name}
	claim := &resourceapi.ResourceClaim{}
	if err := r.Client.Get(ctx, key, claim); err != nil {
		if !apierrors.IsNotFound(err) {
			return false, err
		}
		if c, ok := r.created.Get(createdKey(p.UID, podClaim)); ok && c.(*resourceapi.ResourceClaim).Name == name {
			claim = c.(*resourceapi.ResourceClaim)
		} else if err := r.APIReader.Get(ctx, key, claim); err != nil {
			return false, client.IgnoreNotFound(err)
		}
	}
	if mustCheckOwner {
		if err := resourceclaim.IsForPod(p, claim, false); err != nil {
			log.FromContext(ctx).Error(err, "Claim that was created for the pod is no longer owned by the pod, creating a new one", "resourceClaim", name)
			return false, nil
		}
	}
	return true, nil
}

// generatedClaim is the claim generated earlier for the pod's claim (controlled by the pod
// and annotated with the claim's name), nil when none: the controller may have created it and
// failed before recording it in the pod's status.
func (r podReconciler) generatedClaim(ctx context.Context, p *corev1.Pod, podClaim string) (*resourceapi.ResourceClaim, error) {
	claims := &resourceapi.ResourceClaimList{}
	if err := r.Client.List(ctx, claims, client.InNamespace(p.Namespace), client.MatchingFields{claimsByController.Field: string(p.UID)}); err != nil {
		return nil, err
	}
	for i := range claims.Items {
		// The first that matches: others, if any, go with the pod.
		if generatedFor(&claims.Items[i], p.UID, podClaim) {
			return &claims.Items[i], nil
		}
	}
	if c, ok := r.created.Get(createdKey(p.UID, podClaim)); ok {
		return c.(*resourceapi.ResourceClaim), nil
	}
	return nil, nil
}

// createClaim creates the pod's claim from its template, counting the create in
// dynamic_resource_allocation_resourceclaim_creates_total.
func (r podReconciler) createClaim(ctx context.Context, p *corev1.Pod, pc *corev1.PodResourceClaim) (*resourceapi.ResourceClaim, error) {
	tmpl := &resourceapi.ResourceClaimTemplate{}
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: *pc.ResourceClaimTemplateName}, tmpl); err != nil {
		if apierrors.IsNotFound(err) {
			// Upstream's lister names the resource in the singular.
			err = apierrors.NewNotFound(resourceapi.Resource("resourceclaimtemplate"), *pc.ResourceClaimTemplateName)
		}
		return nil, fmt.Errorf("resource claim template %q: %w", *pc.ResourceClaimTemplateName, err)
	}
	if !r.Features.AdminAccess && needsAdminAccess(tmpl) {
		return nil, errors.New("admin access is requested, but the feature is disabled")
	}
	if !r.Features.PrioritizedList && hasPrioritizedList(tmpl) {
		return nil, errors.New("template includes a prioritized list of subrequests, but the feature is disabled")
	}
	claim := claimFor(p, pc.Name, tmpl)
	labels := func(status string) []string { return createLabels(claim, status) }
	if err := r.Client.Create(ctx, claim); err != nil {
		drametrics.ResourceClaimCreate.WithLabelValues(labels("failure")...).Inc()
		return nil, fmt.Errorf("create ResourceClaim %s: %w", claim.GenerateName, err)
	}
	drametrics.ResourceClaimCreate.WithLabelValues(labels("success")...).Inc()
	log.FromContext(ctx).V(4).Info("Created ResourceClaim", "claim", claim.Name)
	r.created.Add(createdKey(p.UID, pc.Name), claim)
	if r.Client.Get(ctx, client.ObjectKeyFromObject(claim), &resourceapi.ResourceClaim{}) == nil {
		// Its event came before it was remembered: forgetCreated has run already.
		r.created.Remove(createdKey(p.UID, pc.Name))
	}
	return claim, nil
}

// createdKey identifies a claim generated for a pod's claim among those just created.
func createdKey(pod types.UID, podClaim string) string { return string(pod) + "/" + podClaim }

// forgetCreated drops a claim the cache now shows (or shows deleted) from those just
// created: from now on the cache answers for it.
func (r *Reconciler) forgetCreated(claim client.Object) {
	if _, uid := owningPod(claim.(*resourceapi.ResourceClaim)); uid != "" {
		if podClaim, ok := claim.GetAnnotations()[resourceapi.PodResourceClaimAnnotation]; ok {
			r.created.Remove(createdKey(uid, podClaim))
		}
	}
}

// applyStatuses records the generated claims in pod.status.resourceClaimStatuses by a
// server-side apply of every entry, as upstream's field manager owns them.
func (r podReconciler) applyStatuses(ctx context.Context, p *corev1.Pod, generated map[string]string) error {
	status := corev1apply.PodStatus()
	for _, s := range mergedStatuses(p, generated) {
		status.WithResourceClaimStatuses(corev1apply.PodResourceClaimStatus().WithName(s.Name).WithResourceClaimName(*s.ResourceClaimName))
	}
	body, err := patch.ServerSideApply(corev1apply.Pod(p.Name, p.Namespace).WithStatus(status))
	if err != nil {
		return err
	}
	if err := r.Client.Status().Patch(ctx, p, body, client.FieldOwner(FieldManager), client.ForceOwnership); err != nil {
		return fmt.Errorf("update pod %s/%s ResourceClaimStatuses: %v", p.Namespace, p.Name, err)
	}
	return nil
}

// reserve adds the scheduled pod to the reservations of each of its allocated claims that
// can still take one.
func (r podReconciler) reserve(ctx context.Context, p *corev1.Pod, group *schedulingapi.PodGroup) error {
	for i := range p.Spec.ResourceClaims {
		pc := &p.Spec.ResourceClaims[i]
		name, mustCheckOwner, err := resourceclaim.Name(p, pc)
		if err != nil {
			return err
		}
		if name == nil {
			continue
		}
		claim := &resourceapi.ResourceClaim{}
		if err := r.Client.Get(ctx, types.NamespacedName{Namespace: p.Namespace, Name: *name}, claim); err != nil {
			if apierrors.IsNotFound(err) {
				return nil
			}
			return fmt.Errorf("retrieve claim: %v", err)
		}
		if mustCheckOwner {
			if err := resourceclaim.IsForPod(p, claim, false); err != nil {
				return err
			}
		}
		if claim.Status.Allocation == nil || resourceclaim.IsReservedForPod(p, claim, false) || !resourceclaim.CanBeReserved(claim) {
			continue
		}
		bindTo, err := resourceclaim.BindTo(p, group, pc)
		if err != nil {
			return err
		}
		if bindTo.Resource == "podgroups" {
			log.FromContext(ctx).V(3).Info("Not reserving PodGroup ResourceClaim because feature is disabled", "feature", features.DRAWorkloadResourceClaims, "resourceClaim", claim.Name)
			continue
		}
		log.FromContext(ctx).V(5).Info("Reserve claim", "resourceClaim", claim.Name)
		claim.Status.ReservedFor = append(claim.Status.ReservedFor, bindTo)
		if err := r.Client.Status().Update(ctx, claim); err != nil {
			return fmt.Errorf("reserve claim %s/%s: %w", claim.Namespace, claim.Name, err)
		}
	}
	return nil
}
