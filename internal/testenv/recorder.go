package testenv

import (
	"context"
	"sync"

	"sigs.k8s.io/controller-runtime/pkg/client"
)

// RecordingClient wraps a controller's client and notes, per object name, the
// resourceVersion its last Get read and the versions of the objects it deleted: which state
// a deletion was decided on, and a positive witness that a sync ran when nothing is deleted.
type RecordingClient struct {
	client.Client
	mu      sync.Mutex
	read    map[string]string
	deleted map[string][]string
}

// NewRecordingClient records what c reads and deletes.
func NewRecordingClient(c client.Client) *RecordingClient {
	return &RecordingClient{Client: c, read: map[string]string{}, deleted: map[string][]string{}}
}

// Get reads through the wrapped client and notes the version read.
func (r *RecordingClient) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	err := r.Client.Get(ctx, key, obj, opts...)
	if err == nil {
		r.mu.Lock()
		r.read[key.Name] = obj.GetResourceVersion()
		r.mu.Unlock()
	}
	return err
}

// Delete notes the version of the object deleted and deletes through the wrapped client.
func (r *RecordingClient) Delete(ctx context.Context, obj client.Object, opts ...client.DeleteOption) error {
	r.mu.Lock()
	r.deleted[obj.GetName()] = append(r.deleted[obj.GetName()], obj.GetResourceVersion())
	r.mu.Unlock()
	return r.Client.Delete(ctx, obj, opts...)
}

// LastRead is the resourceVersion the last Get of name read ("" before any).
func (r *RecordingClient) LastRead(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.read[name]
}

// Deletions are the versions of the objects named name that were deleted, in order.
func (r *RecordingClient) Deletions(name string) []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.deleted[name]...)
}
