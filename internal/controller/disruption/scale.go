package disruption

import (
	"context"
	"fmt"
	"slices"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ResourceLister is the part of a discovery client the controller uses: it tells a resource
// without a scale subresource from a controller that does not exist.
type ResourceLister interface {
	ServerResourcesForGroupVersion(groupVersion string) (*metav1.APIResourceList, error)
}

// scaleVersions are the group/versions a scale subresource may be served as.
var scaleVersions = []schema.GroupVersion{
	{Group: "autoscaling", Version: "v1"},
	{Group: "extensions", Version: "v1beta1"},
	{Group: "apps", Version: "v1beta1"},
	{Group: "apps", Version: "v1beta2"},
}

// controllerScale finds a pod's controller and its scale, trying, in upstream's order, a
// ReplicationController, the Deployment of a ReplicaSet, a ReplicaSet without a Deployment,
// a StatefulSet (all from the cache), and last any resource's /scale subresource.
func (r *Reconciler) controllerScale(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	finders := []scaleOfController{r.replicationControllerScale, r.deploymentScale, r.replicaSetScale, r.statefulSetScale, r.scaleSubresource}
	for _, find := range finders {
		uid, scale, found, err := find(ctx, ref, namespace)
		if err != nil || found {
			return uid, scale, found, err
		}
	}
	return "", 0, false, nil
}

func isGroupKind(ref *metav1.OwnerReference, kind string, groups ...string) (bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return false, err
	}
	return ref.Kind == kind && slices.Contains(groups, gv.Group), nil
}

// getCached reads obj from the cache; found is false when it does not exist or is another
// object of the same name.
func (r *Reconciler) getCached(ctx context.Context, namespace, name string, uid types.UID, obj client.Object) (bool, error) {
	if err := r.Client.Get(ctx, types.NamespacedName{Namespace: namespace, Name: name}, obj); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	return obj.GetUID() == uid, nil
}

func (r *Reconciler) replicationControllerScale(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	if ok, err := isGroupKind(ref, "ReplicationController", ""); !ok || err != nil {
		return "", 0, false, err
	}
	rc := &corev1.ReplicationController{}
	if found, err := r.getCached(ctx, namespace, ref.Name, ref.UID, rc); !found || err != nil {
		return "", 0, false, err
	}
	return rc.UID, replicasOr1(rc.Spec.Replicas), true, nil
}

func (r *Reconciler) deploymentScale(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	if ok, err := isGroupKind(ref, "ReplicaSet", "apps", "extensions"); !ok || err != nil {
		return "", 0, false, err
	}
	rs := &appsv1.ReplicaSet{}
	if found, err := r.getCached(ctx, namespace, ref.Name, ref.UID, rs); !found || err != nil {
		return "", 0, false, err
	}
	dref := metav1.GetControllerOfNoCopy(rs)
	if dref == nil {
		return "", 0, false, nil
	}
	if ok, err := isGroupKind(dref, "Deployment", "apps", "extensions"); !ok || err != nil {
		return "", 0, false, err
	}
	d := &appsv1.Deployment{}
	if found, err := r.getCached(ctx, namespace, dref.Name, dref.UID, d); !found || err != nil {
		return "", 0, false, err
	}
	return d.UID, replicasOr1(d.Spec.Replicas), true, nil
}

func (r *Reconciler) replicaSetScale(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	if ok, err := isGroupKind(ref, "ReplicaSet", "apps", "extensions"); !ok || err != nil {
		return "", 0, false, err
	}
	rs := &appsv1.ReplicaSet{}
	if found, err := r.getCached(ctx, namespace, ref.Name, ref.UID, rs); !found || err != nil {
		return "", 0, false, err
	}
	// A ReplicaSet of a Deployment counts through the Deployment (as upstream, by kind only).
	if dref := metav1.GetControllerOfNoCopy(rs); dref != nil && dref.Kind == "Deployment" {
		return "", 0, false, nil
	}
	return rs.UID, replicasOr1(rs.Spec.Replicas), true, nil
}

func (r *Reconciler) statefulSetScale(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	if ok, err := isGroupKind(ref, "StatefulSet", "apps"); !ok || err != nil {
		return "", 0, false, err
	}
	ss := &appsv1.StatefulSet{}
	if found, err := r.getCached(ctx, namespace, ref.Name, ref.UID, ss); !found || err != nil {
		return "", 0, false, err
	}
	return ss.UID, replicasOr1(ss.Spec.Replicas), true, nil
}

// scaleSubresource reads the controller's /scale from the API server. A 404 means either
// that the controller does not exist (not found) or that its resource has no scale
// subresource (an error saying so): discovery tells which.
func (r *Reconciler) scaleSubresource(ctx context.Context, ref *metav1.OwnerReference, namespace string) (types.UID, int32, bool, error) {
	gv, err := schema.ParseGroupVersion(ref.APIVersion)
	if err != nil {
		return "", 0, false, err
	}
	mapping, err := r.Client.RESTMapper().RESTMapping(schema.GroupKind{Group: gv.Group, Kind: ref.Kind}, gv.Version)
	if err != nil {
		return "", 0, false, err
	}
	owner := &unstructured.Unstructured{}
	owner.SetGroupVersionKind(mapping.GroupVersionKind)
	owner.SetNamespace(namespace)
	owner.SetName(ref.Name)
	scale := &unstructured.Unstructured{}
	if err := r.Client.SubResource("scale").Get(ctx, owner, scale); err != nil {
		if !apierrors.IsNotFound(err) {
			return "", 0, false, err
		}
		ok, err := r.implementsScale(mapping.Resource)
		if err != nil {
			return "", 0, false, err
		}
		if !ok {
			return "", 0, false, fmt.Errorf("%s does not implement the scale subresource", mapping.Resource.GroupResource().String())
		}
		return "", 0, false, nil
	}
	if scale.GetUID() != ref.UID {
		return "", 0, false, nil
	}
	replicas, _, err := unstructured.NestedInt64(scale.Object, "spec", "replicas")
	if err != nil {
		return "", 0, false, fmt.Errorf("reading the scale of %s %s: %w", ref.Kind, ref.Name, err)
	}
	return scale.GetUID(), int32(replicas), true, nil
}

func (r *Reconciler) implementsScale(gvr schema.GroupVersionResource) (bool, error) {
	list, err := r.Discovery.ServerResourcesForGroupVersion(gvr.GroupVersion().String())
	if err != nil {
		return false, err
	}
	name := gvr.Resource + "/scale"
	for _, res := range list.APIResources {
		if res.Name != name || res.Kind != "Scale" {
			continue
		}
		if slices.Contains(scaleVersions, schema.GroupVersion{Group: res.Group, Version: res.Version}) {
			return true, nil
		}
	}
	return false, nil
}

// replicasOr1 reads spec.replicas, which the API server always defaults (to 1).
func replicasOr1(p *int32) int32 {
	if p == nil {
		return 1
	}
	return *p
}
