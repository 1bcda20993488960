// Package rootcapublisher is upstream's root-ca-certificate-publisher-controller: every
// namespace has the ConfigMap kube-root-ca.crt holding the cluster's CA bundle, and edits to
// it are reverted.
package rootcapublisher

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/log"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

const (
	// ControllerName is upstream's name for this controller.
	ControllerName = "root-ca-certificate-publisher-controller"
	// ConfigMapName is the ConfigMap published in every namespace.
	ConfigMapName = "kube-root-ca.crt"
	// CAKey is the ConfigMap key holding the PEM bundle.
	CAKey = "ca.crt"
	// DescriptionAnnotation and Description are upstream's words on the ConfigMap.
	DescriptionAnnotation = "kubernetes.io/description"
	Description           = "Contains a CA bundle that can be used to verify the kube-apiserver when using internal endpoints such as the internal service IP or kubernetes.default.svc. " +
		"No other usage is guaranteed across distributions of Kubernetes clusters."
)

// Reconciler publishes RootCA into one namespace.
type Reconciler struct {
	Client client.Client
	// RootCA is the PEM bundle to publish; empty when kcm has none (an
	// insecure-skip-tls-verify kubeconfig and no --root-ca-file), published empty as upstream.
	RootCA []byte
}

// The namespaces and ConfigMaps are read from the shared cache (kcm's identity), as upstream
// reads them from its informers; the controller's own identity only writes.
// +kubebuilder:rbac:groups="",resources=configmaps,verbs=create;update

// Reconcile creates or repairs the namespace's kube-root-ca.crt, and records the sync in
// upstream's metrics with the outcome upstream's sync would have: a create that found the
// ConfigMap already there counts as 409, as upstream's returns that error, though here it is
// not retried (the ConfigMap's own event brings the namespace back).
func (r *Reconciler) Reconcile(ctx context.Context, req reconcile.Request) (reconcile.Result, error) {
	start := time.Now()
	err := r.sync(ctx, req)
	syncs.Record(start, err)
	if apierrors.IsAlreadyExists(err) {
		return reconcile.Result{}, nil
	}
	return reconcile.Result{}, err
}

func (r *Reconciler) sync(ctx context.Context, req reconcile.Request) error {
	ns := &corev1.Namespace{}
	if err := r.Client.Get(ctx, req.NamespacedName, ns); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ns.Status.Phase == corev1.NamespaceTerminating {
		return nil
	}

	cm := &corev1.ConfigMap{}
	err := r.Client.Get(ctx, types.NamespacedName{Namespace: ns.Name, Name: ConfigMapName}, cm)
	switch {
	case apierrors.IsNotFound(err):
		return r.create(ctx, ns)
	case err != nil:
		return err
	}

	want, changed := Desired(cm, r.RootCA)
	if !changed {
		return nil
	}
	// An update carrying the cached resourceVersion, as upstream's: its role grants update,
	// not patch, and a conflict requeues to compare again with the newer ConfigMap.
	if err := r.Client.Update(ctx, want); err != nil {
		return fmt.Errorf("updating ConfigMap %s/%s: %w", ns.Name, ConfigMapName, err)
	}
	log.FromContext(ctx).V(2).Info("Updated ConfigMap", "configMap", client.ObjectKeyFromObject(want))
	return nil
}

func (r *Reconciler) create(ctx context.Context, ns *corev1.Namespace) error {
	cm, _ := Desired(&corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Namespace: ns.Name, Name: ConfigMapName}}, r.RootCA)
	switch err := r.Client.Create(ctx, cm); {
	case err == nil:
		log.FromContext(ctx).V(2).Info("Created ConfigMap", "configMap", client.ObjectKeyFromObject(cm))
		return nil
	case apierrors.IsAlreadyExists(err):
		// The cache lagged behind; the update event of that ConfigMap brings us back.
		// Returned for the metrics only: Reconcile does not retry it.
		return err
	case apierrors.IsNotFound(err), apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause):
		return nil
	default:
		// As upstream, no Event: the error is logged and the namespace retried.
		return fmt.Errorf("creating ConfigMap %s/%s: %w", ns.Name, ConfigMapName, err)
	}
}

// Desired returns cm as it should be, holding exactly rootCA under ca.crt and upstream's
// description annotation, and whether that differs from cm. cm itself is not modified.
func Desired(cm *corev1.ConfigMap, rootCA []byte) (*corev1.ConfigMap, bool) {
	data := map[string]string{CAKey: string(rootCA)}
	if equality.Semantic.DeepEqual(cm.Data, data) && cm.Annotations[DescriptionAnnotation] != "" {
		return cm, false
	}
	want := cm.DeepCopy()
	want.Data = data
	if want.Annotations == nil {
		want.Annotations = map[string]string{}
	}
	want.Annotations[DescriptionAnnotation] = Description
	return want, true
}

// SetupWithManager watches namespaces and changes to kube-root-ca.crt ConfigMaps.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager, workers int) error {
	if r.Client == nil {
		return fmt.Errorf("%s: Client is required", ControllerName)
	}
	rootCAChanged := predicate.NewPredicateFuncs(func(o client.Object) bool { return o.GetName() == ConfigMapName })
	return ctrl.NewControllerManagedBy(mgr).
		Named(ControllerName).
		For(&corev1.Namespace{}).
		Watches(&corev1.ConfigMap{},
			handler.EnqueueRequestsFromMapFunc(namespaceOf),
			builder.WithPredicates(rootCAChanged)).
		WithOptions(controller.Options{NewQueue: newQueue, MaxConcurrentReconciles: workers}).
		Complete(r)
}

func namespaceOf(_ context.Context, obj client.Object) []reconcile.Request {
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Name: obj.GetNamespace()}}}
}
