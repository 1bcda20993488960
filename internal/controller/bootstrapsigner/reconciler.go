// Package bootstrapsigner is upstream's bootstrap-signer-controller: it signs the kubeconfig
// of kube-public/cluster-info with every bootstrap token meant for signing, so that a
// joining node (kubeadm join) can check, with only its token, that it talks to the cluster
// it was given the token of. Each signature is a detached JWS in the ConfigMap's
// jws-kubeconfig-<token-id> entry, added, changed and removed as the tokens change.
package bootstrapsigner

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	bootstrapapi "k8s.io/cluster-bootstrap/token/api"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/manager"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

// ControllerName is upstream's name for this controller.
const ControllerName = "bootstrap-signer-controller"

// clusterInfo is the one object signed, and so the one request: any change of it or of a
// token re-signs it whole, as upstream's single queue key.
var clusterInfo = types.NamespacedName{Namespace: metav1.NamespacePublic, Name: bootstrapapi.ConfigMapClusterInfo}

// Reconciler keeps cluster-info's signatures equal to the signing tokens.
type Reconciler struct {
	// Cache holds cluster-info and kube-system's bootstrap token Secrets only.
	Cache cache.Cache
	// Client updates cluster-info with the controller's own identity.
	Client client.Client
	Clock  clock.PassiveClock
}

// Reconcile re-signs cluster-info: its kubeconfig with each signing token, old signatures
// dropped, written only when that changes something.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (reconcile.Result, error) {
	logger := log.FromContext(ctx)

	cm := &corev1.ConfigMap{}
	if err := r.Cache.Get(ctx, clusterInfo, cm); err != nil {
		// No cluster-info (yet): its creation brings the controller back.
		return reconcile.Result{}, client.IgnoreNotFound(err)
	}
	kubeconfig, ok := cm.Data[bootstrapapi.KubeConfigKey]
	if !ok {
		// As upstream: nothing to sign, and the signatures there are left alone.
		logger.V(3).Info("No key in ConfigMap", "key", bootstrapapi.KubeConfigKey, "configMap", clusterInfo)
		return reconcile.Result{}, nil
	}
	secrets := &corev1.SecretList{}
	if err := r.Cache.List(ctx, secrets, client.InNamespace(metav1.NamespaceSystem)); err != nil {
		return reconcile.Result{}, err
	}

	sigs, err := Signatures(kubeconfig, SigningTokens(secrets.Items, r.Clock.Now()))
	if err != nil {
		return reconcile.Result{}, err
	}
	data, changed := SignedData(cm.Data, sigs)
	if !changed {
		return reconcile.Result{}, nil
	}

	// An update, not a patch, as upstream: written against the version read, so a
	// kubeconfig changed meanwhile is never signed with a stale signature (the conflict
	// brings the controller back to the new one).
	updated := cm.DeepCopy()
	updated.Data = data
	if err := r.Client.Update(ctx, updated); err != nil {
		if apierrors.IsNotFound(err) {
			return reconcile.Result{}, nil
		}
		return reconcile.Result{}, fmt.Errorf("updating ConfigMap %s: %w", clusterInfo, err)
	}
	logger.V(2).Info("Signed cluster-info", "tokens", len(sigs))
	return reconcile.Result{}, nil
}

// SetupWithManager watches cluster-info and the bootstrap token Secrets in r.Cache, each
// event mapped to the one request.
func (r *Reconciler) SetupWithManager(mgr manager.Manager, workers int) error {
	toClusterInfo := func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{{NamespacedName: clusterInfo}}
	}
	return builder.ControllerManagedBy(mgr).
		Named(ControllerName).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		WatchesRawSource(source.Kind(r.Cache, client.Object(&corev1.ConfigMap{}), handler.EnqueueRequestsFromMapFunc(toClusterInfo))).
		WatchesRawSource(source.Kind(r.Cache, client.Object(&corev1.Secret{}), handler.EnqueueRequestsFromMapFunc(toClusterInfo))).
		Complete(r)
}
