package pod

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// PatchCondition writes one condition into the pod's status, as upstream's taint managers mark
// a pod DisruptionTarget before deleting it: a strategic merge patch of the status subresource
// that names the pod's UID, so it cannot land on a recreated pod of the same name. A pod
// already gone is found=false and no error.
func PatchCondition(ctx context.Context, c client.Client, p *corev1.Pod, cond corev1.PodCondition) (found bool, err error) {
	patch, err := json.Marshal(map[string]any{
		"metadata": map[string]any{"uid": p.UID},
		"status":   map[string]any{"conditions": []corev1.PodCondition{cond}},
	})
	if err != nil {
		return false, err
	}
	err = c.Status().Patch(ctx, p, client.RawPatch(types.StrategicMergePatchType, patch))
	if apierrors.IsNotFound(err) {
		return false, nil
	}
	return err == nil, err
}
