package patch

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// ServerSideApply is a server-side apply of config (an apply configuration from
// k8s.io/client-go/applyconfigurations), sent through a client's Patch or Status().Patch
// with client.FieldOwner and client.ForceOwnership, as upstream's controllers apply.
// controller-runtime's own Apply is not used: it cannot decode the API server's answer in
// protobuf, kcm's default --kube-api-content-type ("unexpected content type ... in apply
// response"), and would report every successful apply as an error.
func ServerSideApply(config any) (client.Patch, error) {
	body, err := json.Marshal(config)
	if err != nil {
		return nil, fmt.Errorf("encoding apply configuration: %w", err)
	}
	return client.RawPatch(types.ApplyPatchType, body), nil
}
