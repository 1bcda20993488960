// Package history holds the ControllerRevision helpers StatefulSet and DaemonSet share, as
// upstream's pkg/controller/history stores revisions: names "<owner>-<hash>", the hash label,
// revision numbers, and creation that resolves hash collisions by bumping collisionCount.
package history

import (
	"bytes"
	"context"
	"fmt"
	"hash/fnv"
	"sort"
	"strconv"

	appsv1 "k8s.io/api/apps/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/rand"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/kcm/kcm/internal/owned"
)

// HashLabel carries the hash of a ControllerRevision's Data, as upstream labels revisions.
const HashLabel = "controller.kubernetes.io/hash"

// maxPrefix keeps "<prefix>-<hash>" within a DNS subdomain name, as upstream truncates.
const maxPrefix = 223

// Hash is upstream's HashControllerRevision: FNV-32 over Data.Raw followed by the decimal
// collision count when there is one, encoded with rand.SafeEncodeString. It matches the
// names upstream gives, so revisions made by either controller manager are recognised.
func Hash(rev *appsv1.ControllerRevision, collisionCount *int32) string {
	hf := fnv.New32()
	if len(rev.Data.Raw) > 0 {
		_, _ = hf.Write(rev.Data.Raw)
	}
	if collisionCount != nil {
		_, _ = hf.Write([]byte(strconv.FormatInt(int64(*collisionCount), 10)))
	}
	return rand.SafeEncodeString(fmt.Sprint(hf.Sum32()))
}

// Name is "<prefix>-<hash>", the prefix cut to 223 characters.
func Name(prefix, hash string) string {
	if len(prefix) > maxPrefix {
		prefix = prefix[:maxPrefix]
	}
	return prefix + "-" + hash
}

// New builds a revision of owner holding data, labelled with a copy of labels plus the hash
// label, controlled by owner, and named for its hash under collisionCount.
func New(owner metav1.Object, ownerGVK schema.GroupVersionKind, lbls map[string]string,
	data runtime.RawExtension, revision int64, collisionCount *int32) *appsv1.ControllerRevision {
	l := make(map[string]string, len(lbls)+1)
	for k, v := range lbls {
		l[k] = v
	}
	rev := &appsv1.ControllerRevision{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:       owner.GetNamespace(),
			Labels:          l,
			OwnerReferences: []metav1.OwnerReference{*metav1.NewControllerRef(owner, ownerGVK)},
		},
		Data:     data,
		Revision: revision,
	}
	hash := Hash(rev, collisionCount)
	rev.Name = Name(owner.GetName(), hash)
	rev.Labels[HashLabel] = hash
	return rev
}

// Equal reports whether two revisions hold the same Data.
func Equal(a, b *appsv1.ControllerRevision) bool {
	if a == nil || b == nil {
		return a == b
	}
	return bytes.Equal(a.Data.Raw, b.Data.Raw)
}

// FindEqual returns the revisions whose Data equals needle's, in the order given.
func FindEqual(revs []*appsv1.ControllerRevision, needle *appsv1.ControllerRevision) []*appsv1.ControllerRevision {
	var out []*appsv1.ControllerRevision
	for _, r := range revs {
		if Equal(r, needle) {
			out = append(out, r)
		}
	}
	return out
}

// Sort orders revisions by Revision, ties broken by creation time, then name.
func Sort(revs []*appsv1.ControllerRevision) {
	sort.SliceStable(revs, func(i, j int) bool {
		a, b := revs[i], revs[j]
		if a.Revision != b.Revision {
			return a.Revision < b.Revision
		}
		if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
			return a.CreationTimestamp.Before(&b.CreationTimestamp)
		}
		return a.Name < b.Name
	})
}

// Next is the revision number after the highest of revs (1 when there are none).
func Next(revs []*appsv1.ControllerRevision) int64 {
	var highest int64
	for _, r := range revs {
		if r.Revision > highest {
			highest = r.Revision
		}
	}
	return highest + 1
}

// List returns the revisions in owner's namespace that match selector and are controlled by
// owner or by nobody (orphans the owner may adopt), read through the ControllerUID index.
func List(ctx context.Context, r client.Reader, owner metav1.Object, selector labels.Selector) ([]*appsv1.ControllerRevision, error) {
	controlled, orphans, err := owned.List[*appsv1.ControllerRevision](ctx, r, owner, func() client.ObjectList { return &appsv1.ControllerRevisionList{} })
	if err != nil {
		return nil, fmt.Errorf("listing ControllerRevisions: %w", err)
	}
	var out []*appsv1.ControllerRevision
	for _, rev := range append(controlled, orphans...) {
		if selector.Matches(labels.Set(rev.Labels)) {
			out = append(out, rev)
		}
	}
	return out, nil
}

// Create creates rev under the name its hash gives with *collisionCount. When a revision of
// that name exists with other Data, it bumps *collisionCount and tries the next name; when
// it exists with the same Data, it returns the existing one. The caller persists the
// updated collisionCount in its owner's status.
func Create(ctx context.Context, c client.Client, owner metav1.Object, rev *appsv1.ControllerRevision, collisionCount *int32) (*appsv1.ControllerRevision, error) {
	return CreateNamed(ctx, c, owner, rev, collisionCount, HashLabel, func(cc *int32) string { return Hash(rev, cc) })
}

// CreateNamed is Create with the owner's own naming: hash gives the name's hash for a
// collision count, stored under the label key (DaemonSets name revisions by their template's
// hash under controller-revision-hash, as upstream).
func CreateNamed(ctx context.Context, c client.Client, owner metav1.Object, rev *appsv1.ControllerRevision,
	collisionCount *int32, label string, hash func(*int32) string) (*appsv1.ControllerRevision, error) {
	if collisionCount == nil {
		return nil, fmt.Errorf("creating ControllerRevision: collisionCount is nil")
	}
	for {
		clone := rev.DeepCopy()
		clone.Namespace = owner.GetNamespace()
		h := hash(collisionCount)
		clone.Name = Name(owner.GetName(), h)
		if clone.Labels == nil {
			clone.Labels = map[string]string{}
		}
		clone.Labels[label] = h
		err := c.Create(ctx, clone)
		if err == nil {
			return clone, nil
		}
		if !apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("creating ControllerRevision %s: %w", clone.Name, err)
		}
		existing := &appsv1.ControllerRevision{}
		if err := c.Get(ctx, client.ObjectKeyFromObject(clone), existing); err != nil {
			return nil, fmt.Errorf("reading existing ControllerRevision %s: %w", clone.Name, err)
		}
		if bytes.Equal(existing.Data.Raw, clone.Data.Raw) {
			return existing, nil
		}
		*collisionCount++
	}
}

// SetRevision updates rev's Revision number to n (no write when it already is n), as
// upstream's UpdateControllerRevision: an update, retried on a conflict from the cache's
// newer copy.
func SetRevision(ctx context.Context, c client.Client, rev *appsv1.ControllerRevision, n int64) (*appsv1.ControllerRevision, error) {
	if rev.Revision == n {
		return rev, nil
	}
	current := rev
	var updated *appsv1.ControllerRevision
	err := retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		updated = current.DeepCopy()
		updated.Revision = n
		err := c.Update(ctx, updated)
		if apierrors.IsConflict(err) {
			fresh := &appsv1.ControllerRevision{}
			if getErr := c.Get(ctx, client.ObjectKeyFromObject(rev), fresh); getErr == nil {
				current = fresh
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("updating revision of ControllerRevision %s: %w", rev.Name, err)
	}
	return updated, nil
}
