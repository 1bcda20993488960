// Package serviceaccounttoken is upstream's serviceaccount-token-controller (the "tokens
// controller"): it fills Secrets of type kubernetes.io/service-account-token with a signed
// legacy token, ca.crt and namespace, deletes them when their ServiceAccount is gone, and
// drops a deleted token from its ServiceAccount's secrets.
package serviceaccounttoken

import (
	"context"
	"fmt"
	"time"

	"github.com/go-logr/logr"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/util/retry"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/kcm/kcm/internal/index"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "serviceaccount-token-controller"

// removeReferenceBackoff is upstream's RemoveTokenBackoff for dropping a deleted token from
// its ServiceAccount on conflicts.
var removeReferenceBackoff = wait.Backoff{Steps: 10, Duration: 100 * time.Millisecond, Jitter: 1.0}

// Request names one token Secret together with the ServiceAccount it named, as upstream's
// queue key does: once the Secret is deleted the cache no longer knows which ServiceAccount
// referenced it.
type Request struct {
	Namespace string
	Name      string
	UID       types.UID
	// ServiceAccountName and ServiceAccountUID come from the Secret's annotations; the UID
	// is empty until the controller has filled it.
	ServiceAccountName string
	ServiceAccountUID  types.UID
}

func (r Request) String() string { return r.Namespace + "/" + r.Name }

func requestFor(s *corev1.Secret) Request {
	return Request{
		Namespace:          s.Namespace,
		Name:               s.Name,
		UID:                s.UID,
		ServiceAccountName: s.Annotations[corev1.ServiceAccountNameKey],
		ServiceAccountUID:  types.UID(s.Annotations[corev1.ServiceAccountUIDKey]),
	}
}

// Reconciler syncs one token Secret.
type Reconciler struct {
	// Client reads Secrets and ServiceAccounts from the cache and writes.
	Client client.Client
	// APIReader looks a ServiceAccount up live when the cache misses it, as upstream does
	// before deleting a token: the ServiceAccount may be newer than the cache.
	APIReader client.Reader
	Generator *Generator
	// RootCA goes into ca.crt; empty leaves ca.crt alone.
	RootCA []byte
}

// Secrets and ServiceAccounts are read from the shared cache; the controller's own client
// (kcm's identity, RootCredentials) writes them and gets a ServiceAccount live.
// +kubebuilder:rbac:groups="",resources=secrets,verbs=update;delete
// +kubebuilder:rbac:groups="",resources=serviceaccounts,verbs=get;update

// Reconcile populates, deletes or forgets one token Secret.
func (r *Reconciler) Reconcile(ctx context.Context, req Request) (reconcile.Result, error) {
	if req.ServiceAccountName == "" {
		return reconcile.Result{}, nil // not a token of any ServiceAccount
	}
	secret := &corev1.Secret{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.Name}, secret)
	if err != nil && !apierrors.IsNotFound(err) {
		return reconcile.Result{}, err
	}
	if apierrors.IsNotFound(err) || secret.UID != req.UID {
		r.removeReference(ctx, req)
		return reconcile.Result{}, nil
	}

	sa, err := r.serviceAccount(ctx, req.Namespace, req.ServiceAccountName, req.ServiceAccountUID, true)
	if err != nil {
		return reconcile.Result{}, err
	}
	if sa == nil {
		return reconcile.Result{}, r.deleteToken(ctx, secret)
	}
	return reconcile.Result{}, r.populate(ctx, sa, secret)
}

// populate writes what the Secret lacks: ca.crt when it differs from the root CA, namespace,
// token, and the ServiceAccount's name and UID annotations.
func (r *Reconciler) populate(ctx context.Context, sa *corev1.ServiceAccount, secret *corev1.Secret) error {
	needs := Needs(secret, r.RootCA)
	if !needs.Any() {
		return nil
	}
	s := secret.DeepCopy()
	if s.Data == nil {
		s.Data = map[string][]byte{}
	}
	if s.Annotations == nil {
		s.Annotations = map[string]string{}
	}
	if needs.CA {
		s.Data[corev1.ServiceAccountRootCAKey] = r.RootCA
	}
	if needs.Namespace {
		s.Data[corev1.ServiceAccountNamespaceKey] = []byte(s.Namespace)
	}
	if needs.Token {
		token, err := r.Generator.Generate(sa, s)
		if err != nil {
			return fmt.Errorf("generating token for Secret %s/%s: %w", s.Namespace, s.Name, err)
		}
		s.Data[corev1.ServiceAccountTokenKey] = []byte(token)
	}
	s.Annotations[corev1.ServiceAccountNameKey] = sa.Name
	s.Annotations[corev1.ServiceAccountUIDKey] = string(sa.UID)
	// The update carries the cached resourceVersion: a stale copy is refused (Conflict) and
	// retried on a fresher one rather than overwriting someone else's change.
	switch err := r.Client.Update(ctx, s); {
	case err == nil:
		log.FromContext(ctx).V(2).Info("Populated service account token", "secret", client.ObjectKeyFromObject(s), "serviceAccount", sa.Name)
		return nil
	case apierrors.IsNotFound(err):
		return nil
	default:
		return fmt.Errorf("updating Secret %s/%s: %w", s.Namespace, s.Name, err)
	}
}

// deleteToken deletes a token whose ServiceAccount is gone, pinned to its UID so that a
// Secret recreated under the same name is left alone.
func (r *Reconciler) deleteToken(ctx context.Context, secret *corev1.Secret) error {
	err := r.Client.Delete(ctx, secret, client.Preconditions{UID: &secret.UID})
	if err == nil {
		log.FromContext(ctx).V(2).Info("Deleted token of a missing ServiceAccount", "secret", client.ObjectKeyFromObject(secret))
	}
	// NotFound: already gone; Conflict: the UID precondition failed, another Secret now.
	if err == nil || apierrors.IsNotFound(err) || apierrors.IsConflict(err) {
		return nil
	}
	return fmt.Errorf("deleting Secret %s/%s: %w", secret.Namespace, secret.Name, err)
}

// removeReference drops a deleted token from its ServiceAccount's secrets. As upstream, a
// failure is logged and not retried: the reference is harmless.
func (r *Reconciler) removeReference(ctx context.Context, req Request) {
	sa, err := r.serviceAccount(ctx, req.Namespace, req.ServiceAccountName, req.ServiceAccountUID, false)
	if err != nil || sa == nil {
		return
	}
	err = retry.RetryOnConflict(removeReferenceBackoff, func() error {
		fresh := &corev1.ServiceAccount{}
		if err := r.APIReader.Get(ctx, types.NamespacedName{Namespace: req.Namespace, Name: req.ServiceAccountName}, fresh); err != nil {
			return client.IgnoreNotFound(err)
		}
		if req.ServiceAccountUID != "" && fresh.UID != req.ServiceAccountUID {
			return nil
		}
		kept := WithoutSecret(fresh.Secrets, req.Name)
		if len(kept) == len(fresh.Secrets) {
			return nil
		}
		fresh.Secrets = kept
		return client.IgnoreNotFound(r.Client.Update(ctx, fresh))
	})
	if err != nil {
		log.FromContext(ctx).Error(err, "Removing secret reference", "serviceAccount", req.ServiceAccountName)
	}
}

// serviceAccount returns the named ServiceAccount when it exists with the given UID (any
// UID when uid is empty), else nil; live tells whether to ask the API server on a miss.
func (r *Reconciler) serviceAccount(ctx context.Context, ns, name string, uid types.UID, live bool) (*corev1.ServiceAccount, error) {
	key := types.NamespacedName{Namespace: ns, Name: name}
	sa := &corev1.ServiceAccount{}
	err := r.Client.Get(ctx, key, sa)
	if err != nil && !apierrors.IsNotFound(err) {
		return nil, err
	}
	if err == nil && (uid == "" || uid == sa.UID) {
		return sa, nil
	}
	if !live {
		return nil, nil
	}
	if err := r.APIReader.Get(ctx, key, sa); err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	if uid == "" || uid == sa.UID {
		return sa, nil
	}
	return nil, nil
}

// SetupWithManager watches token Secrets and ServiceAccounts: an added, changed or deleted
// ServiceAccount brings the tokens that name it, whose sync deletes those left without one.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	if r.Client == nil || r.APIReader == nil || r.Generator == nil {
		return fmt.Errorf("%s: Client, APIReader and Generator are required", ControllerName)
	}
	secrets := source.TypedKind(mgr.GetCache(), &corev1.Secret{}, handler.TypedFuncs[*corev1.Secret, Request]{
		CreateFunc: func(_ context.Context, e event.TypedCreateEvent[*corev1.Secret], q queue) {
			q.Add(requestFor(e.Object))
		},
		UpdateFunc: func(_ context.Context, e event.TypedUpdateEvent[*corev1.Secret], q queue) {
			q.Add(requestFor(e.ObjectNew))
		},
		DeleteFunc: func(_ context.Context, e event.TypedDeleteEvent[*corev1.Secret], q queue) {
			q.Add(requestFor(e.Object))
		},
	}, predicate.NewTypedPredicateFuncs(func(s *corev1.Secret) bool {
		return s.Type == corev1.SecretTypeServiceAccountToken
	}))

	tokensOf := func(ctx context.Context, sa *corev1.ServiceAccount, q queue) {
		list := &corev1.SecretList{}
		if err := r.Client.List(ctx, list, client.InNamespace(sa.Namespace),
			client.MatchingFields{index.TokenServiceAccount: sa.Name}); err != nil {
			log.FromContext(ctx).Error(err, "Listing tokens of ServiceAccount", "serviceAccount", client.ObjectKeyFromObject(sa))
			return
		}
		for i := range list.Items {
			q.Add(requestFor(&list.Items[i]))
		}
	}
	serviceAccounts := source.TypedKind(mgr.GetCache(), &corev1.ServiceAccount{}, handler.TypedFuncs[*corev1.ServiceAccount, Request]{
		CreateFunc: func(ctx context.Context, e event.TypedCreateEvent[*corev1.ServiceAccount], q queue) {
			tokensOf(ctx, e.Object, q)
		},
		UpdateFunc: func(ctx context.Context, e event.TypedUpdateEvent[*corev1.ServiceAccount], q queue) {
			tokensOf(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.TypedDeleteEvent[*corev1.ServiceAccount], q queue) {
			tokensOf(ctx, e.Object, q)
		},
	})

	logger := mgr.GetLogger().WithValues("controller", ControllerName)
	return builder.TypedControllerManagedBy[Request](mgr).
		Named(ControllerName).
		WatchesRawSource(secrets).
		WatchesRawSource(serviceAccounts).
		WithOptions(controller.TypedOptions[Request]{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		WithLogConstructor(func(req *Request) logr.Logger {
			if req == nil {
				return logger
			}
			return logger.WithValues("secret", req.String())
		}).
		Complete(r)
}

type queue = workqueue.TypedRateLimitingInterface[Request]
