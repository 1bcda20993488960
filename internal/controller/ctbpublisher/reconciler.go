// Package ctbpublisher is upstream's kube-apiserver-serving-clustertrustbundle-publisher-controller:
// it publishes the CA that verifies the API server's serving certificate as a ClusterTrustBundle
// of the signer kubernetes.io/kube-apiserver-serving, named after the bundle's hash, keeps its
// content as published, and deletes the signer's other bundles (those of an earlier CA).
package ctbpublisher

import (
	"context"
	"errors"
	"fmt"
	"time"

	certificatesv1 "k8s.io/api/certificates/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"
)

const (
	// ControllerName is upstream's name for this controller.
	ControllerName = "kube-apiserver-serving-clustertrustbundle-publisher-controller"
	// SignerName is the signer whose CA is published.
	SignerName = "kubernetes.io/kube-apiserver-serving"
)

// Reconciler keeps SignerName's ClusterTrustBundles to exactly one, holding CABundle.
type Reconciler struct {
	// Client reads ClusterTrustBundles from the shared cache and writes as the controller.
	Client     client.Client
	SignerName string
	// CABundle is the PEM bundle published, read once at start as upstream's.
	CABundle string
}

// The bundles are read from the shared cache (kcm's identity); the controller's own identity
// writes them, which the API server allows only with attest on the signer.
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=clustertrustbundles,verbs=create;update;delete
// +kubebuilder:rbac:groups=certificates.k8s.io,resources=signers,resourceNames=kubernetes.io/kube-apiserver-serving,verbs=attest

// Reconcile publishes the signer's bundle and removes its others. There is one request for
// the whole signer, as upstream's single queue key.
func (r *Reconciler) Reconcile(ctx context.Context, _ reconcile.Request) (_ reconcile.Result, err error) {
	start := time.Now()
	defer func() { syncs.Record(start, err) }()

	var all certificatesv1.ClusterTrustBundleList
	if err := r.Client.List(ctx, &all); err != nil {
		return reconcile.Result{}, err
	}
	var existing []certificatesv1.ClusterTrustBundle
	for _, ctb := range all.Items {
		if ctb.Spec.SignerName == r.SignerName {
			existing = append(existing, ctb)
		}
	}

	p := decide(existing, r.SignerName, r.CABundle)
	logger := log.FromContext(ctx)
	switch {
	case p.create != nil:
		if err := r.Client.Create(ctx, p.create); err != nil {
			return reconcile.Result{}, fmt.Errorf("creating ClusterTrustBundle %s: %w", p.create.Name, err)
		}
		logger.V(2).Info("Created ClusterTrustBundle", "clusterTrustBundle", p.create.Name)
	case p.update != nil:
		if err := r.Client.Update(ctx, p.update); err != nil {
			return reconcile.Result{}, fmt.Errorf("updating ClusterTrustBundle %s: %w", p.update.Name, err)
		}
		logger.V(2).Info("Updated ClusterTrustBundle", "clusterTrustBundle", p.update.Name)
	}

	// Every deletion is tried; a failed one fails the sync, to be retried.
	var errs []error
	for _, name := range p.delete {
		ctb := &certificatesv1.ClusterTrustBundle{}
		ctb.Name = name
		if err := r.Client.Delete(ctx, ctb); err != nil && !apierrors.IsNotFound(err) {
			logger.Error(err, "Failed to remove a cluster trust bundle", "bundleName", name)
			errs = append(errs, err)
			continue
		}
		logger.V(2).Info("Deleted ClusterTrustBundle", "clusterTrustBundle", name)
	}
	return reconcile.Result{}, errors.Join(errs...)
}

// SetupWithManager syncs once at start and on every change to the signer's bundles.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Client == nil || r.SignerName == "" || r.CABundle == "" {
		return fmt.Errorf("%s: Client, SignerName and CABundle are required", ControllerName)
	}
	syncs.Register()
	signer := reconcile.Request{NamespacedName: types.NamespacedName{Name: r.SignerName}}
	toSigner := handler.EnqueueRequestsFromMapFunc(func(context.Context, client.Object) []reconcile.Request {
		return []reconcile.Request{signer}
	})
	ofSigner := predicate.NewPredicateFuncs(func(o client.Object) bool {
		ctb, ok := o.(*certificatesv1.ClusterTrustBundle)
		return ok && ctb.Spec.SignerName == r.SignerName
	})
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		Watches(&certificatesv1.ClusterTrustBundle{}, toSigner, builder.WithPredicates(ofSigner)).
		// The first sync creates the bundle where the signer has none, so no event comes.
		WatchesRawSource(source.Func(func(_ context.Context, q workqueue.TypedRateLimitingInterface[reconcile.Request]) error {
			q.Add(signer)
			return nil
		})).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: 1}).
		Complete(r)
}
