package statefulset

import (
	"bytes"
	"encoding/json"
	"fmt"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/lru"

	"github.com/kcm/kcm/internal/history"
)

// revisionData is what upstream stores in a StatefulSet's ControllerRevision: a strategic
// merge patch replacing spec.template, {"spec":{"template":{...,"$patch":"replace"}}}, with
// keys sorted, so the bytes (and the revision's hash and name) are upstream's.
func revisionData(set *appsv1.StatefulSet) ([]byte, error) {
	b, err := json.Marshal(set.Spec.Template)
	if err != nil {
		return nil, fmt.Errorf("encoding pod template: %w", err)
	}
	var template map[string]any
	if err := json.Unmarshal(b, &template); err != nil {
		return nil, fmt.Errorf("decoding pod template: %w", err)
	}
	template["$patch"] = "replace"
	return json.Marshal(map[string]any{"spec": map[string]any{"template": template}})
}

// newRevision is the revision number revision of set's current template.
func newRevision(set *appsv1.StatefulSet, revision int64, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	data, err := revisionData(set)
	if err != nil {
		return nil, err
	}
	rev := history.New(set, setGVK, set.Spec.Template.Labels, runtime.RawExtension{Raw: data}, revision, collisionCount)
	if len(set.Annotations) > 0 {
		rev.Annotations = map[string]string{}
		for k, v := range set.Annotations {
			rev.Annotations[k] = v
		}
	}
	return rev, nil
}

// applyRevision returns a copy of set whose template is the one rev recorded. The stored
// patch replaces the whole template, so decoding it is applying it.
func applyRevision(set *appsv1.StatefulSet, rev *appsv1.ControllerRevision) (*appsv1.StatefulSet, error) {
	var patch struct {
		Spec struct {
			Template corev1.PodTemplateSpec `json:"template"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(rev.Data.Raw, &patch); err != nil {
		return nil, fmt.Errorf("decoding ControllerRevision %s: %w", rev.Name, err)
	}
	out := set.DeepCopy()
	out.Spec.Template = patch.Spec.Template
	return out, nil
}

// maxRevisionEqualities bounds the memory of revisions found equal, as upstream's (about
// 1 MB at 10,000 entries).
const maxRevisionEqualities = 10_000

// revisionEquality names a revision (by resourceVersion) found equal to what a set's
// generation makes, so a steady set does not decode and re-encode it every sync.
type revisionEquality struct {
	set             types.UID
	generation      int64
	resourceVersion string
}

func newRevisionEqualities() *lru.Cache { return lru.New(maxRevisionEqualities) }

// matchesLatest reports whether latest, the newest existing revision, records the template
// proposed records once it is decoded and given the API server's defaults: a revision that
// differs only in how it was serialized (a null creationTimestamp, another field order, an
// empty list) or in defaults the API server has since added is not a new revision. This is
// upstream's StatefulSetSemanticRevisionComparison: restore the revision, default it,
// re-encode it and compare the bytes.
func matchesLatest(set *appsv1.StatefulSet, proposed, latest *appsv1.ControllerRevision, seen *lru.Cache) bool {
	key := revisionEquality{set: set.UID, generation: set.Generation, resourceVersion: latest.ResourceVersion}
	if _, ok := seen.Get(key); ok {
		return true
	}
	restored, err := applyRevision(set, latest)
	if err != nil {
		return false
	}
	defaultTemplate(&restored.Spec.Template)
	data, err := revisionData(restored)
	if err != nil || !bytes.Equal(data, proposed.Data.Raw) {
		return false
	}
	seen.Add(key, struct{}{})
	return true
}
