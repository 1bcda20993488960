// Package csrsigning is upstream's certificatesigningrequest-signing-controller: the built-in
// signers kubernetes.io/kubelet-serving, kube-apiserver-client-kubelet, kube-apiserver-client
// and legacy-unknown. Each signs the approved requests for its signerName with its CA (the
// shared --cluster-signing-cert-file/--cluster-signing-key-file pair or its own), for at most
// --cluster-signing-duration or the shorter spec.expirationSeconds, never past the CA's own
// expiry. A request its signer will never issue (a kubelet certificate that does not name a
// node, wrong usages) is marked Failed with upstream's reason; anything else that stops the
// signing (an unparsable request, an expired CA) is retried.
package csrsigning

import (
	"context"
	"fmt"
	"time"

	"golang.org/x/time/rate"
	certificatesv1 "k8s.io/api/certificates/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/kcm/kcm/internal/patch"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "certificatesigningrequest-signing-controller"

// SignerValidationFailure is upstream's reason on the Failed condition of a request its
// signer refuses.
const SignerValidationFailure = "SignerValidationFailure"

// Upstream's certificate queue: per request 200ms doubling up to 1000s, and 10 retries a
// second overall (burst 100).
const (
	baseBackoff = 200 * time.Millisecond
	maxBackoff  = 1000 * time.Second
)

// Reconciler is one signer's loop: it issues the certificates of approved requests for
// SignerName.
type Reconciler struct {
	// Client reads requests from the shared cache and writes as the controller.
	Client client.Client
	// SignerName is the signer this loop signs for.
	SignerName string
	// CA signs, as its files currently hold it.
	CA *CA
	// MaxTTL is --cluster-signing-duration: the longest lifetime issued.
	MaxTTL time.Duration
	// Now is the signing time.
	Now func() time.Time
}

// The requests are read from the shared cache (kcm's identity); the controller's own
// identity writes the certificate or the Failed condition, which the API server allows only
// with sign on the signer.
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=certificatesigningrequests/status,verbs=update
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kubelet-serving;kubernetes.io/kube-apiserver-client-kubelet;kubernetes.io/kube-apiserver-client;kubernetes.io/legacy-unknown,verbs=sign

// Reconcile signs the request if it is approved, not denied, not failed and not yet issued.
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	csr := &certificatesv1.CertificateSigningRequest{}
	if err := r.Client.Get(ctx, req.NamespacedName, csr); err != nil {
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	if !shouldSign(csr, r.SignerName) {
		return reconcile.Result{}, nil
	}
	x509cr, err := parseRequest(csr.Spec.Request)
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("unable to parse csr %q: %w", csr.Name, err)
	}

	if invalid := validate(r.SignerName, x509cr, csr.Spec.Usages); invalid != nil {
		csr.Status.Conditions = append(csr.Status.Conditions, certificatesv1.CertificateSigningRequestCondition{
			Type:           certificatesv1.CertificateFailed,
			Status:         corev1.ConditionTrue,
			Reason:         SignerValidationFailure,
			Message:        invalid.Error(),
			LastUpdateTime: metav1.Now(),
		})
		// Optimistic: the conditions are appended to what was read; a concurrent approval or
		// denial must not be overwritten.
		if err := patch.Status(ctx, r.Client, csr); err != nil {
			return reconcile.Result{}, fmt.Errorf("error adding failure condition for csr: %w", err)
		}
		log.FromContext(ctx).V(2).Info("CertificateSigningRequest failed the signer's checks", "message", invalid.Error())
		return reconcile.Result{}, nil
	}

	certPEM, err := r.CA.Sign(x509cr, csr.Spec.Usages, duration(r.MaxTTL, csr.Spec.ExpirationSeconds), r.Now())
	if err != nil {
		return reconcile.Result{}, fmt.Errorf("error auto signing csr: %w", err)
	}
	csr.Status.Certificate = certPEM
	// Optimistic: a request denied or failed since it was read must not get a certificate.
	if err := patch.Status(ctx, r.Client, csr); err != nil {
		return reconcile.Result{}, fmt.Errorf("error updating signature for csr: %w", err)
	}
	log.FromContext(ctx).V(2).Info("Issued certificate")
	return reconcile.Result{}, nil
}

// shouldSign: only requests for this signer, approved and not denied, not failed, and with no
// certificate yet.
func shouldSign(csr *certificatesv1.CertificateSigningRequest, signerName string) bool {
	if len(csr.Status.Certificate) > 0 || csr.Spec.SignerName != signerName {
		return false
	}
	approved, denied, failed := false, false, false
	for _, c := range csr.Status.Conditions {
		switch c.Type {
		case certificatesv1.CertificateApproved:
			approved = true
		case certificatesv1.CertificateDenied:
			denied = true
		case certificatesv1.CertificateFailed:
			// An empty status counts as true, as upstream's HasTrueCondition.
			failed = failed || c.Status == "" || c.Status == corev1.ConditionTrue
		}
	}
	return approved && !denied && !failed
}

// SetupWithManager registers the loop under upstream's name for it, watching the requests
// for its signer only, with upstream's retry pacing.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, name string, workers int) error {
	if r.Client == nil || r.CA == nil || r.Now == nil {
		return fmt.Errorf("%s: Client, CA and Now are required", name)
	}
	forSigner := predicate.NewPredicateFuncs(func(o client.Object) bool {
		csr, ok := o.(*certificatesv1.CertificateSigningRequest)
		return ok && csr.Spec.SignerName == r.SignerName
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(name).
		For(&certificatesv1.CertificateSigningRequest{}, builder.WithPredicates(forSigner)).
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
