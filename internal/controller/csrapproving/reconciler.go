// Package csrapproving is upstream's certificatesigningrequest-approving-controller: it
// approves kubelet client certificate requests (signer kubernetes.io/kube-apiserver-client-kubelet)
// whose requester may have them, as a SubjectAccessReview answers: a new node's client
// certificate requested by a user allowed certificatesigningrequests/nodeclient (kubeadm grants
// it to the bootstrap tokens' group), and a node renewing its own (selfnodeclient, granted to
// system:nodes). Requests it does not recognize, or whose requester is not allowed, are left
// alone: it never denies, and retries a refused request with backoff, since the permission
// may be granted later. Signing is certificatesigningrequest-signing-controller's.
package csrapproving

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	authorizationv1 "k8s.io/api/authorization/v1"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "certificatesigningrequest-approving-controller"

// Upstream's certificate queue: per request 200ms doubling up to 1000s, and 10 retries a
// second overall (burst 100).
const (
	baseBackoff = 200 * time.Millisecond
	maxBackoff  = 1000 * time.Second
)

// Reconciler approves one CertificateSigningRequest when it is a kubelet client request its
// requester is allowed to make.
type Reconciler struct {
	// Client reads requests from the shared cache and writes as the controller.
	Client client.Client

	// refused paces the retries of requests whose SubjectAccessReviews were all refused:
	// upstream requeues them rate-limited but logs them only at V(4), as they are usually
	// a user's doing, not the controller's failure.
	refused workqueue.TypedRateLimiter[reconcile.Request]
}

// The requests are read from the shared cache (kcm's identity); the controller's own
// identity creates the reviews and writes the approval, which the API server allows only
// with approve on the signer.
// +kubebuilder:rbac:groups=authorization.k8s.io,resources=subjectaccessreviews,verbs=create
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/approval,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-client-kubelet,verbs=approve

// Reconcile approves the request after the first SubjectAccessReview that allows it.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		r.refused.Forget(req)
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if len(csr.Status.Certificate) != 0 || decided(csr) {
		r.refused.Forget(req)
		return reconcile.Result{}, nil
	}
	x509cr, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err)
	}

	var tried []string
	for _, rec := range matching(csr, x509cr) {
		tried = append(tried, rec.name)
		allowed, err := r.authorize(ctx, csr, rec.permission)
		if err != nil {
			return reconcile.Result{}, err
		}
		if !allowed {
			continue
		}
		approved := csr.DeepCopy()
		approved.Status.Conditions = append(approved.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:    certificatesv1.CertificateApproved,
			Status:  corev1.ConditionTrue,
			Reason:  ApprovedReason,
			Message: rec.message,
		})
		if err := r.Client.SubResource("approval").Update(ctx, approved); err != nil {
			return reconcile.Result{}, fmt.Errorf("error updating approval for csr: %w", err)
		}
		log.FromContext(ctx).V(2).Info("Approved CertificateSigningRequest", "as", rec.name)
		r.refused.Forget(req)
		return reconcile.Result{}, nil
	}

	if len(tried) == 0 {
		r.refused.Forget(req)
		return reconcile.Result{}, nil
	}
	// Nothing is written: the request stays pending for a person or another approver.
	log.FromContext(ctx).V(4).Info("Recognized CertificateSigningRequest but subject access review was not approved", "as", tried)
	return reconcile.Result{RequeueAfter: r.refused.When(req)}, nil
}

// authorize asks the API server whether the requester, as the request records it, holds
// permission.
func (r *Reconciler) authorize(ctx context.Context, csr *certificatesv1.CertificateSigningRequest, permission authorizationv1.ResourceAttributes) (bool, error) {
	extra := make(map[string]authorizationv1.ExtraValue, len(csr.Spec.Extra))
	for k, v := range csr.Spec.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	sar := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:               csr.Spec.Username,
		UID:                csr.Spec.UID,
		Groups:             csr.Spec.Groups,
		Extra:              extra,
		ResourceAttributes: &permission,
	}}
	if err := r.Client.Create(ctx, sar); err != nil {
		return false, fmt.Errorf("creating SubjectAccessReview for csr %q: %w", csr.Name, err)
	}
	return sar.Status.Allowed, nil
}

// SetupWithManager watches every CertificateSigningRequest, with upstream's retry pacing.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	r.refused = workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](baseBackoff, maxBackoff)
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&certificatesv1.CertificateSigningRequest{}).
		WithOptions(controller.Options{
			NewQueue:                newQueue,
			MaxConcurrentReconciles: workers,
			RateLimiter: workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[reconcile.Request](baseBackoff, maxBackoff),
				&workqueue.TypedBucketRateLimiter[reconcile.Request]{Limiter: rate.NewLimiter(rate.Limit(10), 100)},
			),
		}).
		Complete(r)
}
