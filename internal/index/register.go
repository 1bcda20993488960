package index

import (
	"context"
	"fmt"
	"reflect"

	appsv1 "k8s.io/api/apps/v1"
	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// Index is one field index of the shared cache: a kind, the key controllers list by
// (client.MatchingFields{Field: ...}) and the function computing it. Controllers name the
// ones they need in their descriptor; Register adds each once.
type Index struct {
	Object  client.Object
	Field   string
	Extract client.IndexerFunc
}

// The indexes kcm's controllers use.
var (
	PodsByController        = Index{&corev1.Pod{}, ControllerUID, ControllerUIDOf}
	ReplicaSetsByController = Index{&appsv1.ReplicaSet{}, ControllerUID, ControllerUIDOf}
	JobsByController        = Index{&batchv1.Job{}, ControllerUID, ControllerUIDOf}
	RevisionsByController   = Index{&appsv1.ControllerRevision{}, ControllerUID, ControllerUIDOf}
	PodsByNode              = Index{&corev1.Pod{}, PodNodeName, PodNodeNameOf}
	PodsByClaim             = Index{&corev1.Pod{}, PodClaimName, PodClaimNameOf}
	SecretsByType           = Index{&corev1.Secret{}, SecretType, SecretTypeOf}
	TokensByServiceAccount  = Index{&corev1.Secret{}, TokenServiceAccount, TokenServiceAccountOf}
)

// Key identifies an index: its kind and field.
func (i Index) Key() string { return TypeName(i.Object) + "/" + i.Field }

// TypeName names an object's Go type, e.g. "v1.Pod".
func TypeName(obj client.Object) string { return reflect.TypeOf(obj).Elem().String() }

// Register adds every index of indexes to the cache once, whatever the duplicates.
func Register(ctx context.Context, indexer client.FieldIndexer, indexes []Index) error {
	done := map[string]bool{}
	for _, i := range indexes {
		if done[i.Key()] {
			continue
		}
		done[i.Key()] = true
		if err := indexer.IndexField(ctx, i.Object, i.Field, i.Extract); err != nil {
			return fmt.Errorf("indexing %s: %w", i.Key(), err)
		}
	}
	return nil
}
