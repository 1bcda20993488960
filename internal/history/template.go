package history

import (
	"encoding/binary"
	"fmt"
	"hash/fnv"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/utils/dump"
)

// TemplateHash is the hash of a pod template, exactly as upstream's controller.ComputeHash:
// Deployments name their ReplicaSets (pod-template-hash) and DaemonSets their revisions
// (controller-revision-hash) with it, so that objects handed over from upstream's
// controllers are found again: fnv32a over the template printed by go-spew with the fixed configuration
// of k8s.io/utils/dump.ForHash (what upstream's hashutil.DeepHashObject prints), then the
// collision count as 8 little-endian bytes when set, then encoded with SafeEncodeString.
func TemplateHash(template *corev1.PodTemplateSpec, collisionCount *int32) string {
	hasher := fnv.New32a()
	fmt.Fprintf(hasher, "%v", dump.ForHash(*template))
	if collisionCount != nil {
		b := make([]byte, 8)
		binary.LittleEndian.PutUint32(b, uint32(*collisionCount))
		hasher.Write(b)
	}
	return rand.SafeEncodeString(fmt.Sprint(hasher.Sum32()))
}
